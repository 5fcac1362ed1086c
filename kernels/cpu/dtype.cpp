// kernels/cpu/dtype.cpp — the table of element types and their block geometry.
#include "kernels/cpu/dtype.h"

#include <array>
#include <cctype>
#include <string>

namespace strata::kernels {
namespace {

constexpr std::array<DTypeTraits, 27> kTraits{{
    {DType::F32, "f32", 1, 4, true},
    {DType::F16, "f16", 1, 2, true},
    {DType::Q4_0, "q4_0", 32, 18, true},    // f16 d + 16 B of nibbles
    {DType::Q4_1, "q4_1", 32, 20, true},    // f16 d, f16 m + 16 B
    {DType::Q5_0, "q5_0", 32, 22, true},    // f16 d + 4 B high bits + 16 B
    {DType::Q5_1, "q5_1", 32, 24, true},    // f16 d, f16 m + 4 B + 16 B
    {DType::Q8_0, "q8_0", 32, 34, true},    // f16 d + 32 int8
    {DType::Q8_1, "q8_1", 32, 36, false},   // f16 d, f16 s (= d * sum) + 32 int8
    {DType::Q2_K, "q2_k", 256, 84, true},   // 16 B scales + 64 B quants + f16 d, dmin
    {DType::Q3_K, "q3_k", 256, 110, true},  // 32 B hmask + 64 B quants + 12 B scales + f16 d
    {DType::Q4_K, "q4_k", 256, 144, true},  // f16 d, dmin + 12 B scales + 128 B quants
    {DType::Q5_K, "q5_k", 256, 176, true},  // f16 d, dmin + 12 B scales + 32 B qh + 128 B qs
    {DType::Q6_K, "q6_k", 256, 210, true},  // 128 B ql + 64 B qh + 16 int8 scales + f16 d
    {DType::Q8_K, "q8_k", 256, 292, false}, // f32 d + 256 int8 + 16 int16 block sums
    {DType::IQ2_XXS, "iq2_xxs", 256, 66, true},  // f16 d + 8 x (4 grid bytes, u32 signs/scale)
    {DType::IQ2_XS, "iq2_xs", 256, 74, true},    // f16 d + 32 u16 (9-bit grid, 7-bit signs) + 8 B scales
    {DType::IQ3_XXS, "iq3_xxs", 256, 98, true},  // f16 d + 64 B grid + 8 u32 signs/scales
    {DType::IQ1_S, "iq1_s", 256, 50, true},      // f16 d + 32 B grid low + 8 u16 (high, scale, delta)
    {DType::IQ4_NL, "iq4_nl", 32, 18, true},     // f16 d + 16 B of non-linear nibbles
    {DType::IQ3_S, "iq3_s", 256, 110, true},     // f16 d + 64 B grid + 8 B high + 32 B signs + 4 B scales
    {DType::IQ2_S, "iq2_s", 256, 82, true},      // f16 d + 32 B grid + 32 B signs + 8 B high + 8 B scales
    {DType::IQ4_XS, "iq4_xs", 256, 136, true},   // f16 d + u16 scales high + 4 B scales low + 128 B
    {DType::IQ1_M, "iq1_m", 256, 56, true},      // 32 B grid + 16 B high + 8 B scales (f16 d in their top nibbles)
    {DType::BF16, "bf16", 1, 2, true},
    {DType::TQ1_0, "tq1_0", 256, 54, true},      // 48 B base-3 (5 trits a byte) + 4 B (4 a byte) + f16 d
    {DType::TQ2_0, "tq2_0", 256, 66, true},      // 64 B of 2-bit trits + f16 d
    {DType::MXFP4, "mxfp4", 32, 17, true},       // e8m0 scale + 16 B of e2m1 nibbles
}};

// ggml's ids this build does not read (ggml.h's enum ggml_type; 4, 5 and 31-33, 36-38 are
// retired layouts that files may still carry).
struct UnhandledName {
  uint32_t id;
  const char* name;
};
constexpr UnhandledName kUnhandled[] = {
    {4, "Q4_2 (removed from ggml)"}, {5, "Q4_3 (removed from ggml)"}, {24, "I8"}, {25, "I16"}, {26, "I32"},
    {27, "I64"}, {28, "F64"}, {31, "Q4_0_4_4 (removed from ggml)"}, {32, "Q4_0_4_8 (removed from ggml)"},
    {33, "Q4_0_8_8 (removed from ggml)"}, {36, "IQ4_NL_4_4 (removed from ggml)"},
    {37, "IQ4_NL_4_8 (removed from ggml)"}, {38, "IQ4_NL_8_8 (removed from ggml)"}, {40, "NVFP4"}, {41, "Q1_0"},
};

std::string make_weight_type_names() {
  std::string s;
  for (uint32_t id = 0; id < 64; ++id)
    for (const DTypeTraits& t : kTraits)
      if (static_cast<uint32_t>(t.type) == id && t.weight_type) s += (s.empty() ? "" : " ") + std::string(t.name);
  return s;
}

}  // namespace

const DTypeTraits* dtype_traits(uint32_t raw_type) {
  for (const DTypeTraits& t : kTraits) {
    if (static_cast<uint32_t>(t.type) == raw_type) return &t;
  }
  return nullptr;
}

const char* ggml_type_name_unhandled(uint32_t raw_type) {
  for (const UnhandledName& u : kUnhandled)
    if (u.id == raw_type) return u.name;
  return nullptr;
}

const char* weight_type_names() {
  static const std::string names = make_weight_type_names();
  return names.c_str();
}

std::optional<DType> dtype_from_name(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const DTypeTraits& t : kTraits) {
    if (lower == t.name) return t.type;
  }
  return std::nullopt;
}

}  // namespace strata::kernels
