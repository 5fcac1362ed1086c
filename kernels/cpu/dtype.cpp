// kernels/cpu/dtype.cpp — the table of element types and their block geometry.
#include "kernels/cpu/dtype.h"

#include <array>
#include <cctype>
#include <string>

namespace strata::kernels {
namespace {

constexpr std::array<DTypeTraits, 15> kTraits{{
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
    {DType::BF16, "bf16", 1, 2, true},
}};

}  // namespace

const DTypeTraits* dtype_traits(uint32_t raw_type) {
  for (const DTypeTraits& t : kTraits) {
    if (static_cast<uint32_t>(t.type) == raw_type) return &t;
  }
  return nullptr;
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
