// tests/kernels/test_gemm.cpp — the packed-tile prompt kernels (gemm.h) against the scalar
// reference vec_dot: every type that has one, random-byte weights (every bit pattern of quants
// and packed scales), row counts that are not multiples of the 4-row tile, token counts that are
// not multiples of the 16-token group, and outputs outside the tile left untouched. Batches of
// at most 8 tokens run in both activation layouts (wide, and pairs: two lanes a token), and in
// each in-place layout (pairs, quads, octets: weights read without scratch) that holds them. The AVX-512
// VNNI kernels run where the CPU has them; their plain-C++ emulation (same layouts, same
// operations) runs everywhere, and where both run they must agree bit for bit. The AVX2 kernels
// (vpmaddubsw in place of vpdpbusd) must give the emulation's bits too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/type_kernels.h"

namespace strata::kernels {
namespace {

uint8_t* align64(std::vector<uint8_t>& v) {
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t{63});
}

struct Case {
  int64_t rows, cols, tokens;
};

struct Inputs {
  int64_t wrb;              // bytes of one weight row
  std::vector<uint8_t> w;   // [rows][wrb]: random bytes, sane fp16 scales
  std::vector<float> x;     // [tokens][cols] f32 activations
};

Inputs make_inputs(DType wt, const Case& c, uint32_t seed) {
  Inputs in;
  in.wrb = row_bytes(wt, c.cols);
  in.w.resize(static_cast<size_t>(in.wrb * c.rows));
  for (int64_t r = 0; r < c.rows; ++r) {
    const std::vector<uint8_t> row = test::random_bytes_row(wt, c.cols, seed + static_cast<uint32_t>(r));
    std::copy(row.begin(), row.end(), in.w.begin() + r * in.wrb);
  }
  in.x = test::random_floats(c.tokens * c.cols, seed + 1000);
  return in;
}

struct Outputs {
  std::vector<uint8_t> act;      // the packed groups, one after the other
  std::vector<uint8_t> scratch;  // scratch_bytes(cols) after the call: the last row quad unpacked
  std::vector<float> y;          // [tokens][ys], ys = rows + 3; the gap after each token's rows stays NaN
  int64_t ys;
};

// The layouts a case runs in: wide always, pairs too when it has at most kGemmPairTokens tokens,
// and each in-place layout (GemmKernels::in_place) the kernels have that holds its tokens.
enum class Layout { Wide, Pairs, InPlacePairs, InPlaceQuads, InPlaceOctets };
constexpr Layout kInPlaceLayouts[kGemmInPlaceLayouts] = {Layout::InPlacePairs, Layout::InPlaceQuads,
                                                         Layout::InPlaceOctets};
int in_place_index(Layout l) { return static_cast<int>(l) - static_cast<int>(Layout::InPlacePairs); }
bool is_in_place(Layout l) { return in_place_index(l) >= 0; }

std::vector<Layout> layouts_for(const GemmKernels& gk, const Case& c) {
  std::vector<Layout> out{Layout::Wide};
  if (c.tokens <= kGemmPairTokens) out.push_back(Layout::Pairs);
  for (int i = 0; i < kGemmInPlaceLayouts; ++i)
    if (c.tokens <= kGemmInPlaceTokens[i] && gk.in_place[i].rows) out.push_back(kInPlaceLayouts[i]);
  return out;
}
const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Wide: return "wide";
    case Layout::Pairs: return "pairs";
    case Layout::InPlacePairs: return "in-place pairs";
    case Layout::InPlaceQuads: return "in-place quads";
    case Layout::InPlaceOctets: return "in-place octets";
  }
  return "?";
}

Outputs run_gemm(const GemmKernels& gk, const Case& c, const Inputs& in, Layout layout) {
  GemmPackGroup pack = gk.pack_group;
  GemmRows rows = gk.rows;
  if (layout == Layout::Pairs) pack = gk.pack_group_pairs, rows = gk.rows_pairs;
  if (is_in_place(layout)) {
    pack = gk.in_place[in_place_index(layout)].pack_group;
    rows = gk.in_place[in_place_index(layout)].rows;
  }
  const int64_t n_groups = layout != Layout::Wide ? 1 : (c.tokens + kGemmTokenGroup - 1) / kGemmTokenGroup;
  const int64_t gb = gk.group_bytes(c.cols), sb = gk.scratch_bytes(c.cols);
  std::vector<uint8_t> act_buf(static_cast<size_t>(n_groups * gb + 64));
  std::vector<uint8_t> ws_buf(static_cast<size_t>(sb + 64));
  uint8_t* act = align64(act_buf);
  uint8_t* ws = align64(ws_buf);
  for (int64_t g = 0; g < n_groups; ++g) pack(in.x.data(), c.cols, c.tokens, g, act + g * gb);

  Outputs out;
  out.ys = c.rows + 3;
  out.y.assign(static_cast<size_t>(c.tokens * out.ys), NAN);
  rows(in.w.data(), in.wrb, c.rows, c.cols, act, c.tokens, out.y.data(), out.ys, ws, nullptr, 0);
  out.act.assign(act, act + n_groups * gb);
  out.scratch.assign(ws, ws + sb);
  return out;
}

void check_gemm(const GemmKernels& gk, DType wt, const Case& c, uint32_t seed, Layout layout) {
  const DType at = vec_dot_type(wt);
  const int64_t arb = row_bytes(at, c.cols);
  const Inputs in = make_inputs(wt, c, seed);
  const Outputs out = run_gemm(gk, c, in, layout);
  const int64_t ys = out.ys;
  const std::vector<float>& y = out.y;

  std::vector<uint8_t> a(static_cast<size_t>(arb));
  for (int64_t t = 0; t < c.tokens; ++t) {
    quantize_row(at, in.x.data() + t * c.cols, a.data(), c.cols);
    for (int64_t r = 0; r < c.rows; ++r) {
      const uint8_t* wr = in.w.data() + r * in.wrb;
      float want = 0;
      type_kernels(wt, Isa::Scalar)->vec_dot(c.cols, wr, a.data(), &want);
      // Batch invariance (issue 45): the scalar reference sums in dot_order.h's order, and so does
      // every layout's tile for each token (its lanes' integer sums added before each block's
      // float step), so a token's output is the reference's bits, wherever it sits in the batch.
      uint32_t got_bits, want_bits;
      std::memcpy(&got_bits, &y[t * ys + r], 4);
      std::memcpy(&want_bits, &want, 4);
      ASSERT_EQ(got_bits, want_bits)
          << dtype_name(wt) << " " << layout_name(layout) << " rows=" << c.rows << " cols=" << c.cols
          << " tokens=" << c.tokens << " t=" << t << " r=" << r << ": " << y[t * ys + r] << " vs " << want;
    }
    for (int64_t r = c.rows; r < ys; ++r) ASSERT_TRUE(std::isnan(y[t * ys + r])) << "wrote past the rows, t=" << t;
  }
}

// The weight types with packed kernels (the AVX-512 tables and their emulation alike).
const DType kPackedTypes[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                              DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K};

bool has_packed_kernels(DType wt) {
  for (DType p : kPackedTypes)
    if (p == wt) return true;
  return false;
}

std::vector<Case> cases_for(DType wt) {
  const int64_t blk = traits(wt).block_elems;
  return {{1, 256, 1},   {3, 256, 5},    {4, 512, 16},  {5, 256, 17},   {9, 768, 33},  {13, 512, 64},
          {8, 256, 70},  {6, 3 * blk, 2}, {7, 1024, 31}, {4, 5 * blk, 48}, {5, 512, 8},   {17, 768, 7},
          {2, 3 * blk, 3}, {9, 256, 4}};
}

uint32_t seed_of(const Case& c) { return static_cast<uint32_t>(c.rows * 97 + c.tokens); }

TEST(Gemm, PackedKernelsMatchScalar) {
  if (!isa_supported(Isa::Avx512))
    GTEST_SKIP() << "no AVX-512 VNNI on this CPU: Gemm.EmulatedPackedKernelsMatchScalar checks the same "
                    "packed-tile algorithm in plain C++";
  int checked = 0;
  for (DType wt : test::weight_types()) {
    const GemmKernels* gk = gemm_kernels(wt, Isa::Avx512);
    if (!gk) continue;
    for (const Case& c : cases_for(wt))
      for (Layout l : layouts_for(*gk, c)) check_gemm(*gk, wt, c, seed_of(c), l);
    ++checked;
  }
  EXPECT_EQ(checked, 10);
}

// Runs on every CPU: the emulated kernels (gemm_emulated.cpp), same cases and tolerance.
TEST(Gemm, EmulatedPackedKernelsMatchScalar) {
  int checked = 0;
  for (DType wt : test::weight_types()) {
    const GemmKernels* gk = detail::emulated_gemm(wt);
    ASSERT_EQ(gk != nullptr, has_packed_kernels(wt)) << dtype_name(wt);
    if (!gk) continue;
    for (const Case& c : cases_for(wt))
      for (Layout l : layouts_for(*gk, c)) check_gemm(*gk, wt, c, seed_of(c), l);
    ++checked;
  }
  EXPECT_EQ(checked, 10);
}

// The hardware kernels `hw` against the emulation, case by case, in every layout hw has: the
// same packed activations, the same output bits (tolerance 0: the same integer sums in every lane
// and the same float operations, fma included, in the same order per output), and, with
// same_scratch, the same weight scratch (every byte of the last row quad; the in-place layouts
// write none).
void expect_bit_identical_to_emulation(const GemmKernels& hw, DType wt, bool same_scratch) {
  const GemmKernels* em = detail::emulated_gemm(wt);
  ASSERT_NE(em, nullptr) << dtype_name(wt);
  for (const Case& c : cases_for(wt))
    for (Layout l : layouts_for(hw, c)) {
      if (is_in_place(l)) {
        ASSERT_NE(em->in_place[in_place_index(l)].rows, nullptr) << dtype_name(wt) << " " << layout_name(l);
      }
      ASSERT_EQ(hw.group_bytes(c.cols), em->group_bytes(c.cols));
      if (same_scratch && !is_in_place(l)) {
        ASSERT_EQ(hw.scratch_bytes(c.cols), em->scratch_bytes(c.cols));
      }
      const Inputs in = make_inputs(wt, c, seed_of(c));
      const Outputs a = run_gemm(hw, c, in, l);
      const Outputs b = run_gemm(*em, c, in, l);
      const std::string what = std::string(dtype_name(wt)) + " " + layout_name(l) + " rows=" + std::to_string(c.rows) +
                               " cols=" + std::to_string(c.cols) + " tokens=" + std::to_string(c.tokens);
      EXPECT_EQ(a.act, b.act) << "packed activations differ: " << what;
      if (same_scratch && !is_in_place(l)) {
        EXPECT_EQ(a.scratch, b.scratch) << "weight scratch (last row quad) differs: " << what;
      }
      ASSERT_EQ(a.y.size(), b.y.size());
      EXPECT_EQ(0, std::memcmp(a.y.data(), b.y.data(), a.y.size() * sizeof(float))) << "outputs differ: " << what;
    }
}

// Where the CPU has AVX-512 VNNI: the emulation writes the same activations and weight scratch,
// and gives the same output bits.
TEST(Gemm, EmulatedIsBitIdenticalToAvx512) {
  if (!isa_supported(Isa::Avx512))
    GTEST_SKIP() << "no AVX-512 VNNI on this CPU: no AVX-512 kernels to compare the emulation with";
  for (DType wt : kPackedTypes) {
    const GemmKernels* hw = detail::avx512_gemm(wt);  // the VNNI tiles, AMX or not
    ASSERT_NE(hw, nullptr) << dtype_name(wt);
    expect_bit_identical_to_emulation(*hw, wt, true);
  }
}

// Where the CPU has AMX (isa.h: and Linux grants it): the wide kernels on AMX tiles give the
// scalar reference's bits and the emulation's (the VNNI tiles') in every case, with panels of
// 16 rows cut at any row count (the cases' 1-17 rows, and 37 below), 1-5 token groups (passes of
// up to 4) and 1-16 blocks (chunks of 2, run 2 ahead). Their other layouts are the VNNI table's.
const DType kAmxTypes[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                           DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};

TEST(Gemm, AmxWideKernelsMatchScalarAndTheVnniBits) {
  if (!amx_supported()) GTEST_SKIP() << "no AMX-INT8 on this CPU (or the kernel did not grant it)";
  int checked = 0;
  for (DType wt : test::weight_types()) {
    const GemmKernels* amx = detail::amx_gemm(wt);
    bool listed = false;
    for (DType a : kAmxTypes) listed = listed || a == wt;
    ASSERT_EQ(amx != nullptr, listed) << dtype_name(wt);
    if (!amx) continue;
    const GemmKernels* vnni = detail::avx512_gemm(wt);
    ASSERT_NE(vnni, nullptr);
    EXPECT_EQ(amx->rows, vnni->rows) << dtype_name(wt);
    EXPECT_EQ(amx->rows_pairs, vnni->rows_pairs) << dtype_name(wt);
    ASSERT_NE(amx->rows_large, nullptr) << dtype_name(wt);
    EXPECT_GE(amx->scratch_bytes(1024), vnni->scratch_bytes(1024)) << dtype_name(wt);
    GemmKernels large = *amx;  // the AMX kernel in the wide layout's place
    large.rows = amx->rows_large;
    std::vector<Case> cases = cases_for(wt);
    cases.push_back({37, 2 * traits(wt).block_elems * (traits(wt).block_elems == 32 ? 8 : 1), 75});
    for (const Case& c : cases) check_gemm(large, wt, c, seed_of(c), Layout::Wide);
    expect_bit_identical_to_emulation(large, wt, false);
    ++checked;
  }
  EXPECT_EQ(checked, 8);
}

// gemm_kernels() hands out the AMX table at the Avx512 level while amx_active(), the VNNI one
// after force_amx(false); Q3_K / Q2_K (scale groups of 16, levels without a fold) keep the VNNI
// table either way.
TEST(Gemm, AmxOnlyWhileActive) {
  if (!amx_supported()) {
    EXPECT_EQ(detail::amx_gemm(DType::Q4_K), nullptr);
    GTEST_SKIP() << "no AMX-INT8 on this CPU (or the kernel did not grant it)";
  }
  const bool was = amx_active();
  force_amx(true);
  EXPECT_EQ(gemm_kernels(DType::Q4_K, Isa::Avx512), detail::amx_gemm(DType::Q4_K));
  EXPECT_EQ(gemm_kernels(DType::Q6_K, Isa::Avx512), detail::amx_gemm(DType::Q6_K));
  EXPECT_EQ(gemm_kernels(DType::Q3_K, Isa::Avx512), detail::avx512_gemm(DType::Q3_K));
  force_amx(false);
  EXPECT_FALSE(amx_active());
  EXPECT_EQ(gemm_kernels(DType::Q4_K, Isa::Avx512), detail::avx512_gemm(DType::Q4_K));
  force_amx(was);
}

// The types with AVX2 packed kernels. Q4_0, Q5_0 and Q8_0 keep a weight scratch of their own
// (levels without the + 128, or |w| and w's sign), but every lane's integer sum is the AVX-512
// kernels' (the activations' offset slot holds each lane's correction), so their outputs are too.
// Q4_1 / Q5_1 and the K-quants unpack into the AVX-512 kernels' scratch.
const DType kAvx2PackedTypes[] = {DType::Q4_0, DType::Q5_0, DType::Q8_0, DType::Q4_1, DType::Q5_1,
                                  DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K};
bool avx2_same_scratch_as_avx512(DType wt) {
  return traits(wt).block_elems == 256 || wt == DType::Q4_1 || wt == DType::Q5_1;
}

// Every x86-64 CPU with AVX2 (the AMD and older Intel ones run these in matmul): against the
// scalar reference, and bit for bit against the emulation of the AVX-512 kernels in every layout.
TEST(Gemm, Avx2PackedKernelsMatchScalarAndTheAvx512Bits) {
  if (!isa_supported(Isa::Avx2)) GTEST_SKIP() << "no AVX2 on this CPU";
  int checked = 0;
  for (DType wt : test::weight_types()) {
    const GemmKernels* gk = gemm_kernels(wt, Isa::Avx2);
    bool listed = false;
    for (DType p : kAvx2PackedTypes) listed = listed || p == wt;
    ASSERT_EQ(gk != nullptr, listed) << dtype_name(wt);
    if (!gk) continue;
    for (const Case& c : cases_for(wt))
      for (Layout l : layouts_for(*gk, c)) check_gemm(*gk, wt, c, seed_of(c), l);
    expect_bit_identical_to_emulation(*gk, wt, avx2_same_scratch_as_avx512(wt));
    ++checked;
  }
  EXPECT_EQ(checked, 10);
}

// The AVX2 in-place tiles (Q4_0, Q5_0, Q8_0) sum each lane as the AVX2 scratch tile does: in
// the pairs layout they give rows_pairs' bits, on every case of up to 8 tokens.
TEST(Gemm, Avx2InPlacePairsGiveTheScratchTilesBits) {
  if (!isa_supported(Isa::Avx2)) GTEST_SKIP() << "no AVX2 on this CPU";
  int checked = 0;
  for (DType wt : {DType::Q4_0, DType::Q5_0, DType::Q8_0}) {
    const GemmKernels* gk = gemm_kernels(wt, Isa::Avx2);
    ASSERT_NE(gk, nullptr) << dtype_name(wt);
    for (int i = 0; i < kGemmInPlaceLayouts; ++i) {
      ASSERT_NE(gk->in_place[i].rows, nullptr) << dtype_name(wt) << " " << layout_name(kInPlaceLayouts[i]);
    }
    for (const Case& c : cases_for(wt)) {
      if (c.tokens > kGemmPairTokens) continue;
      const Inputs in = make_inputs(wt, c, seed_of(c));
      const Outputs a = run_gemm(*gk, c, in, Layout::InPlacePairs);
      const Outputs b = run_gemm(*gk, c, in, Layout::Pairs);
      EXPECT_EQ(a.act, b.act) << dtype_name(wt);
      ASSERT_EQ(a.y.size(), b.y.size());
      EXPECT_EQ(0, std::memcmp(a.y.data(), b.y.data(), a.y.size() * sizeof(float)))
          << dtype_name(wt) << " rows=" << c.rows << " cols=" << c.cols << " tokens=" << c.tokens;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3 * 7);
}

TEST(Gemm, OnlyWhereTheIsaIsSupported) {
  for (DType wt : test::weight_types()) {
    EXPECT_EQ(gemm_kernels(wt, Isa::Scalar), nullptr);
    if (!isa_supported(Isa::Avx512)) {
      EXPECT_EQ(gemm_kernels(wt, Isa::Avx512), nullptr);
    }
    if (!isa_supported(Isa::Avx2)) {
      EXPECT_EQ(gemm_kernels(wt, Isa::Avx2), nullptr);
    }
  }
  if (isa_supported(Isa::Avx512)) {
    for (DType wt : kPackedTypes) {
      EXPECT_NE(gemm_kernels(wt, Isa::Avx512), nullptr) << dtype_name(wt);
    }
  }
}

TEST(Gemm, ZeroActivationsGiveZeros) {
  // All-zero tokens (d = 0) and padding lanes: nothing may leak into them. The AVX-512 and AVX2
  // kernels where the CPU has them, the emulated ones always.
  for (DType wt : test::weight_types()) {
    for (const GemmKernels* gk :
         {gemm_kernels(wt, Isa::Avx512), gemm_kernels(wt, Isa::Avx2), detail::emulated_gemm(wt)}) {
      if (!gk) continue;
      const char* which = gk == detail::emulated_gemm(wt)         ? "emulated"
                          : gk == gemm_kernels(wt, Isa::Avx2) ? "avx2"
                                                              : "avx512";
      const int64_t cols = 512, rows = 5, tokens = 20;
      const int64_t wrb = row_bytes(wt, cols);
      std::vector<uint8_t> w(static_cast<size_t>(wrb * rows));
      for (int64_t r = 0; r < rows; ++r) {
        const std::vector<uint8_t> row = test::random_bytes_row(wt, cols, 5 + static_cast<uint32_t>(r));
        std::copy(row.begin(), row.end(), w.begin() + r * wrb);
      }
      std::vector<float> x(static_cast<size_t>(tokens * cols), 0.f);
      std::vector<uint8_t> act_buf(static_cast<size_t>(2 * gk->group_bytes(cols) + 64));
      std::vector<uint8_t> ws_buf(static_cast<size_t>(gk->scratch_bytes(cols) + 64));
      uint8_t* act = align64(act_buf);
      for (int64_t g = 0; g < 2; ++g) gk->pack_group(x.data(), cols, tokens, g, act + g * gk->group_bytes(cols));
      std::vector<float> y(static_cast<size_t>(tokens * rows), NAN);
      gk->rows(w.data(), wrb, rows, cols, act, tokens, y.data(), rows, align64(ws_buf), w.data(), rows);
      for (float v : y) ASSERT_EQ(v, 0.f) << dtype_name(wt) << " " << which;
      // Pairs: 6 zero tokens, so lanes of tokens 6 and 7 are padding too.
      const int64_t few = 6;
      gk->pack_group_pairs(x.data(), cols, few, 0, act);
      std::vector<float> yp(static_cast<size_t>(few * rows), NAN);
      gk->rows_pairs(w.data(), wrb, rows, cols, act, few, yp.data(), rows, align64(ws_buf), w.data(), rows);
      for (float v : yp) ASSERT_EQ(v, 0.f) << dtype_name(wt) << " " << which << " pairs";
      // In place: one token fewer than each layout holds (one padding token), or the one token.
      for (int i = 0; i < kGemmInPlaceLayouts; ++i) {
        const GemmKernels::InPlace& ip = gk->in_place[i];
        if (!ip.rows) continue;
        const int64_t n = kGemmInPlaceTokens[i] - 1;
        ip.pack_group(x.data(), cols, n, 0, act);
        std::vector<float> yi(static_cast<size_t>(n * rows), NAN);
        ip.rows(w.data(), wrb, rows, cols, act, n, yi.data(), rows, align64(ws_buf), w.data(), rows);
        for (float v : yi)
          ASSERT_EQ(v, 0.f) << dtype_name(wt) << " " << which << " " << layout_name(kInPlaceLayouts[i]);
      }
    }
  }
}

}  // namespace
}  // namespace strata::kernels
