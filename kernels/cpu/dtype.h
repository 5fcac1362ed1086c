// kernels/cpu/dtype.h — tensor element types (ggml's numbering, as stored in GGUF files)
// and their block geometry. Knows bytes and shapes only; no engine or model types.
// Its inline helpers are static (internal linkage): the AVX2 / AVX-512 files include this header,
// and a shared weak copy compiled with their flags could reach the scalar path (tools/isa_check.sh).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace strata::kernels {

// Values are the GGUF/ggml type ids; a file stores them as uint32.
enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

struct DTypeTraits {
  DType type;
  const char* name;        // lower case, as users type it: "q4_k", "f16"
  int64_t block_elems;     // elements per block (1 for plain float types)
  int64_t block_bytes;     // bytes per block
  bool weight_type;        // may appear as a model weight (Q8_1 / Q8_K are activation-only)
};

// Traits of a raw type id from a file; nullptr when the id is not one we handle.
const DTypeTraits* dtype_traits(uint32_t raw_type);
// ggml's name of a type id this build does not handle ("NVFP4", "I32", "Q4_0_4_4"), for error
// messages; nullptr for an id ggml never defined.
const char* ggml_type_name_unhandled(uint32_t raw_type);
// "f32 f16 q4_0 ... mxfp4": every weight type this build reads, in id order.
const char* weight_type_names();
static inline const DTypeTraits& traits(DType t) { return *dtype_traits(static_cast<uint32_t>(t)); }
static inline const char* dtype_name(DType t) { return traits(t).name; }

// Bytes of a row of n elements; n must be a multiple of block_elems (callers validate).
static inline int64_t row_bytes(DType t, int64_t n) {
  const DTypeTraits& tr = traits(t);
  return n / tr.block_elems * tr.block_bytes;
}

// "q4_k", "Q4_K", "f16", ... -> type; nullopt for unknown names.
std::optional<DType> dtype_from_name(std::string_view name);

}  // namespace strata::kernels
