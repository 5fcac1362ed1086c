// tests/kernels/test_iquants.cpp — the IQ, ternary and MXFP4 block types: decoders bit for bit
// against gguf-py's gguf.quants.dequantize (tests/data/iquant_golden.bin, written by
// tools/gen_iquant_golden.py), dot products and matmul against the decoded rows, the quantizers'
// round-trip error, and which types can be written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

#include "kernel_test_util.h"
#include "kernels/cpu/blocks.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/type_kernels.h"

namespace strata::kernels {
namespace {

const std::vector<DType> kNewTypes = {DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S, DType::IQ3_XXS,
                                      DType::IQ3_S,   DType::IQ1_S,  DType::IQ1_M, DType::IQ4_NL,
                                      DType::IQ4_XS,  DType::TQ1_0,  DType::TQ2_0, DType::MXFP4};

struct Golden {
  std::vector<uint8_t> blocks;
  std::vector<float> values;
  int64_t n_blocks = 0;
};

std::map<uint32_t, Golden> read_golden() {
  std::ifstream f(std::string(STRATA_SOURCE_DIR) + "/tests/data/iquant_golden.bin", std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::map<uint32_t, Golden> out;
  size_t pos = 0;
  while (pos + 8 <= bytes.size()) {
    uint32_t id, count;
    std::memcpy(&id, &bytes[pos], 4);
    std::memcpy(&count, &bytes[pos + 4], 4);
    pos += 8;
    const DTypeTraits* tr = dtype_traits(id);
    if (tr == nullptr) break;  // the test below fails on the missing types
    Golden g;
    g.n_blocks = count;
    const size_t nb = count * static_cast<size_t>(tr->block_bytes), nv = count * static_cast<size_t>(tr->block_elems);
    g.blocks.assign(bytes.begin() + pos, bytes.begin() + pos + nb);
    pos += nb;
    g.values.resize(nv);
    std::memcpy(g.values.data(), &bytes[pos], nv * 4);
    pos += nv * 4;
    out[id] = std::move(g);
  }
  return out;
}

TEST(IQuants, TraitsMatchGgml) {
  // (block elements, block bytes) as gguf-py's GGML_QUANT_SIZES.
  const std::map<DType, std::pair<int, int>> want = {
      {DType::IQ2_XXS, {256, 66}}, {DType::IQ2_XS, {256, 74}}, {DType::IQ2_S, {256, 82}},
      {DType::IQ3_XXS, {256, 98}}, {DType::IQ3_S, {256, 110}}, {DType::IQ1_S, {256, 50}},
      {DType::IQ1_M, {256, 56}},   {DType::IQ4_NL, {32, 18}},  {DType::IQ4_XS, {256, 136}},
      {DType::TQ1_0, {256, 54}},   {DType::TQ2_0, {256, 66}},  {DType::MXFP4, {32, 17}}};
  for (const auto& [t, geo] : want) {
    const DTypeTraits* tr = dtype_traits(static_cast<uint32_t>(t));
    ASSERT_NE(tr, nullptr);
    EXPECT_EQ(tr->block_elems, geo.first) << tr->name;
    EXPECT_EQ(tr->block_bytes, geo.second) << tr->name;
    EXPECT_TRUE(tr->weight_type) << tr->name;
    EXPECT_EQ(dtype_from_name(tr->name), t);
  }
  EXPECT_STREQ(ggml_type_name_unhandled(40), "NVFP4");
  EXPECT_EQ(ggml_type_name_unhandled(23), nullptr);  // IQ4_XS is handled
  EXPECT_EQ(ggml_type_name_unhandled(999), nullptr);
  EXPECT_NE(std::string(weight_type_names()).find("iq2_xxs"), std::string::npos);
  EXPECT_NE(std::string(weight_type_names()).find("mxfp4"), std::string::npos);
}

// Every decoder, bit for bit gguf-py's, on 24 random blocks a type.
TEST(IQuants, DecodersMatchGgufPyBitForBit) {
  const std::map<uint32_t, Golden> golden = read_golden();
  for (DType t : kNewTypes) {
    const auto it = golden.find(static_cast<uint32_t>(t));
    ASSERT_NE(it, golden.end()) << dtype_name(t) << " missing from iquant_golden.bin";
    const Golden& g = it->second;
    const int64_t n = static_cast<int64_t>(g.values.size());
    std::vector<float> y(static_cast<size_t>(n), -1.f);
    dequantize_row(t, g.blocks.data(), y.data(), n);
    int64_t mismatches = 0, first = -1;
    for (int64_t i = 0; i < n; ++i) {
      uint32_t a, b;
      std::memcpy(&a, &y[i], 4);
      std::memcpy(&b, &g.values[i], 4);
      if (a != b && !(y[i] == 0.f && g.values[i] == 0.f)) {
        if (first < 0) first = i;
        ++mismatches;
      }
    }
    EXPECT_EQ(mismatches, 0) << dtype_name(t) << ": first at " << first << ": " << y[first] << " vs "
                             << g.values[first];
    // Every ISA's table gives the scalar one's values (the x86 tables fall back to it for these types).
    for (Isa isa : test::all_isas()) {
      if (!isa_supported(isa)) continue;
      std::vector<float> z(static_cast<size_t>(n));
      best_type_kernels(t, isa).dequantize_row(g.blocks.data(), z.data(), n);
      EXPECT_EQ(0, std::memcmp(z.data(), y.data(), z.size() * 4)) << dtype_name(t) << " " << isa_name(isa);
    }
  }
}

// vec_dot (f32 activations) against the decoded row summed in double: relative 1e-5 of sum |w a|.
TEST(IQuants, VecDotMatchesDecodedRow) {
  const std::map<uint32_t, Golden> golden = read_golden();
  for (DType t : kNewTypes) {
    const Golden& g = golden.at(static_cast<uint32_t>(t));
    const int64_t n = static_cast<int64_t>(g.values.size());
    ASSERT_EQ(vec_dot_type(t), DType::F32);
    const std::vector<float> a = test::random_floats(n, 77);
    double want = 0, mag = 0;
    for (int64_t i = 0; i < n; ++i) want += double(g.values[i]) * a[i], mag += std::fabs(double(g.values[i]) * a[i]);
    for (Isa isa : test::all_isas()) {
      if (!isa_supported(isa)) continue;
      float got = 0;
      best_type_kernels(t, isa).vec_dot(n, g.blocks.data(), a.data(), &got);
      EXPECT_NEAR(got, want, 1e-5 * mag) << dtype_name(t) << " " << isa_name(isa);
    }
  }
}

// matmul through the thread pool (decode and prompt batches) against the decoded weights.
TEST(IQuants, MatmulMatchesDecodedWeights) {
  const std::map<uint32_t, Golden> golden = read_golden();
  ThreadPool pool(2);
  for (DType t : kNewTypes) {
    const Golden& g = golden.at(static_cast<uint32_t>(t));
    const int64_t cols = traits(t).block_elems == 32 ? 256 : 512;
    const int64_t rows = static_cast<int64_t>(g.values.size()) / cols;
    for (int64_t n_tokens : {1, 5, 20}) {
      const std::vector<float> x = test::random_floats(cols * n_tokens, 5);
      std::vector<float> y(static_cast<size_t>(rows * n_tokens));
      std::vector<uint8_t> scratch;
      matmul(pool, t, g.blocks.data(), rows, cols, x.data(), n_tokens, y.data(), scratch);
      for (int64_t tok = 0; tok < n_tokens; ++tok)
        for (int64_t r = 0; r < rows; ++r) {
          double want = 0, mag = 0;
          for (int64_t c = 0; c < cols; ++c) {
            const double p = double(g.values[r * cols + c]) * x[tok * cols + c];
            want += p, mag += std::fabs(p);
          }
          ASSERT_NEAR(y[tok * rows + r], want, 1e-5 * mag) << dtype_name(t) << " row " << r << " token " << tok;
        }
    }
  }
}

// The quantizers that exist: round trip on N(0, 1) data within a per-type bound (measured values beside),
// and they write blocks the gguf-py-checked decoder reads back.
TEST(IQuants, QuantizersRoundTrip) {
  const std::map<DType, double> bound = {
      {DType::IQ4_NL, 0.095},  // measured 0.0798
      {DType::IQ4_XS, 0.095},  // 0.0801
      {DType::MXFP4, 0.135},   // 0.1134
      {DType::TQ1_0, 0.85},    // 0.7970 (ternary: most N(0, 1) values round to 0 at d = max |x|)
      {DType::TQ2_0, 0.85},    // 0.7970
  };
  const int64_t n = 256 * 16;
  const std::vector<float> x = test::random_floats(n, 99);
  for (DType t : kNewTypes) {
    const auto it = bound.find(t);
    EXPECT_EQ(can_quantize(t), it != bound.end()) << dtype_name(t);
    if (it == bound.end()) continue;
    const std::vector<float> y = test::dequantized(t, test::quantized(t, x).data(), n);
    double e = 0, s = 0;
    for (int64_t i = 0; i < n; ++i) e += (double(x[i]) - y[i]) * (double(x[i]) - y[i]), s += double(x[i]) * x[i];
    const double err = std::sqrt(e / s);
    std::printf("  %-7s rel rms error %.4f (bound %.2f)\n", dtype_name(t), err, it->second);
    EXPECT_LE(err, it->second) << dtype_name(t);
  }
  // Exact values survive: ternary weights {-1, 0, 1} * 0.5 and the MXFP4 grid at a power-of-two scale.
  std::vector<float> tern(256), fp4(32);
  for (int i = 0; i < 256; ++i) tern[i] = 0.5f * static_cast<float>(i % 3 - 1);
  for (DType t : {DType::TQ1_0, DType::TQ2_0})
    EXPECT_EQ(test::dequantized(t, test::quantized(t, tern).data(), 256), tern) << dtype_name(t);
  for (int i = 0; i < 32; ++i) fp4[i] = 0.25f * 0.5f * static_cast<float>(kMxfp4Values[i % 16]);
  fp4[7] = 0.25f * 0.5f * 12.f;  // the largest magnitude present sets the exponent
  EXPECT_EQ(test::dequantized(DType::MXFP4, test::quantized(DType::MXFP4, fp4).data(), 32), fp4);
}

}  // namespace
}  // namespace strata::kernels
