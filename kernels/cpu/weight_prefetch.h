// kernels/cpu/weight_prefetch.h — how far ahead the kernels that stream weight rows from memory
// prefetch them: the decode rows (type_kernels_x86.inc "prefetch_rows_step"), the in-place tiles
// and the packed tiles' row drivers (gemm_x86.inc). Each asks for the same place in the rows whole
// groups of rows on (4 decode rows, an in-place tile, a 4-row quad), at least kLead bytes on.
//
// One group ahead was too little lead for narrow matrices: SmolLM2-135M's 576 columns make a group
// of 4 Q4_1 rows 1.4 KB, which the kernels read in about 0.1 us, under a memory latency. Measured on
// a 2-core Zen 4 VM (docs/benchmarks.md, "Issue 45: weight prefetch far enough ahead"): decode, tg64
// at 2 threads, best of 2-16 KB, 3-6 KB alike, 8 and 16 KB slower (SmolLM2 Q4_1 174-209 -> 208-267
// t/s, Gemma 3 270M Q4_K_M 88-89 -> 113-132); W 1536 x 576, in place, 2 threads, 4 / 8 tokens of
// Q4_1 0.063-0.075 / 0.074-0.108 -> 0.052-0.055 / 0.067-0.074 ms; packed, 1 thread, 9 tokens of
// Q4_1 / Q4_K 0.125-0.139 / 0.113-0.117 -> 0.115-0.124 / 0.095-0.100 ms. Groups already 4 KB or
// more (the 1.1B models' rows) keep a one-group lead.
//
// Internal linkage only (a static function, a non-inline constexpr constant): the ISA files
// include this, and an external inline copy could be the one the linker keeps (tools/isa_check.sh).
#pragma once

#include <cstdint>

namespace strata::kernels::weight_prefetch {

constexpr int64_t kLead = 4096;  // bytes

// Whole groups of group_bytes (> 0) that reach at least kLead bytes on: one or more.
static inline int64_t groups_ahead(int64_t group_bytes) { return (kLead + group_bytes - 1) / group_bytes; }

}  // namespace strata::kernels::weight_prefetch
