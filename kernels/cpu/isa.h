// kernels/cpu/isa.h — which x86 SIMD level the CPU kernels use, detected once by cpuid.
// Depends on nothing; thread-safe (atomics).
#pragma once

#include <string>

namespace strata::kernels {

enum class Isa { Scalar, Avx2, Avx512 };

bool isa_supported(Isa isa);  // Avx2: AVX2+FMA+F16C; Avx512: F/BW/VL/DQ/VNNI plus the AVX2 set
// The highest supported level, at most the one named by the environment variable STRATA_ISA
// (scalar, avx2 or avx512; read once): so that a whole run, the test suite included, can take
// the paths of a CPU without AVX-512 (an AMD Zen 2 / 3) on one that has it.
Isa best_isa();
const char* isa_name(Isa isa);  // "scalar", "avx2", "avx512"
// The Isa of one of those names into *isa (when not nullptr); false (and *isa untouched) for any
// other text.
bool isa_from_name(const char* name, Isa* isa);
// Use this ISA in matmul from now on (tests, benchmarks). Ignored if not supported.
void force_isa(Isa isa);
Isa active_isa();  // what matmul uses now: the forced one, else best_isa()

// Intel AMX (AMX-TILE + AMX-INT8, Sapphire Rapids and later) is not a level of its own but an
// addition to Avx512: the wide packed tiles of prompt batches (gemm.h) run on its tile unit, with
// the same bits as the VNNI tiles. Supported when cpuid has both, the OS enables the tile state
// (XCR0) and Linux grants this process its use (arch_prctl ARCH_REQ_XCOMP_PERM: without it the
// first tile instruction is a SIGILL). Asked once; thread-safe.
bool amx_supported();
// Whether matmul uses AMX at the Avx512 level: supported, STRATA_ISA unset or "amx" (any other
// name caps below it), and not turned off by force_amx(false).
bool amx_active();
void force_amx(bool on);  // tests and benchmarks: AMX (if supported) or the VNNI tiles from now on
// What `--isa NAME` of the benchmarks does: scalar / avx2 / avx512 force that level without AMX, amx
// forces Avx512 with it. False, and nothing forced, for another name or one the CPU lacks.
bool force_isa_by_name(const char* name);
// The CPU as cpuid names it, so a figure can be read with its machine: brand string, vendor
// family/model/stepping (the brand of a VM is often just "AMD EPYC"; the family tells Zen 3/4 (25)
// from Zen 5 (26)) and the SIMD extensions the kernels care about, e.g.
// "AMD EPYC (AuthenticAMD family 25 model 17 stepping 1; avx2 fma f16c)".
std::string cpu_description();

}  // namespace strata::kernels
