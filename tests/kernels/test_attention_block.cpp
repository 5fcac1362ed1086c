// tests/kernels/test_attention_block.cpp — the AVX2 and AVX-512 attention block kernels that read
// key blocks in place from an F32 / F16 / Q8_0 cache (decode) against their twins that read f32
// copies of them (prompts): bit-identical m, l and acc for 1 to 9 query rows, rows with different
// key ranges, head sizes with and without a 16-float tail, strided rows of several KV heads, with
// and without a block to prefetch. attention.h's promise (a token's output does not depend on whether it came
// alone or in a prompt) rests on this.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_block.h"

namespace strata::kernels::detail {
namespace {

constexpr int64_t B = kAttentionKeyBlock;

struct Case {
  Isa family;  // Avx2 or Avx512
  DType type;
  int64_t head_dim;
  int64_t n_rows;
  bool ragged;    // rows see different key ranges (as in a causal prompt tile)
  int64_t n_kv;   // KV heads in a cache row (the block is head 1 when there are several)
  bool prefetch;  // a next block to prefetch
};

std::string name_of(const Case& c) {
  return std::string(isa_name(c.family)) + " " + dtype_name(c.type) + " hd " + std::to_string(c.head_dim) +
         " rows " + std::to_string(c.n_rows) + (c.ragged ? " ragged" : "") + " kv " + std::to_string(c.n_kv) + (c.prefetch ? " prefetch" : "");
}

void check(const Case& c, uint32_t seed) {
  SCOPED_TRACE(name_of(c));
  const int64_t hd = c.head_dim, kv_dim = c.n_kv * hd;
  const int64_t row_b = row_bytes(c.type, kv_dim), head_b = row_bytes(c.type, hd);
  const int64_t head = c.n_kv > 1 ? 1 : 0;
  // Two blocks of positions: the block under test, then the one to prefetch.
  std::vector<uint8_t> k(static_cast<size_t>(2 * B * row_b)), v(k.size());
  const std::vector<float> kf = test::random_floats(2 * B * kv_dim, seed), vf = test::random_floats(2 * B * kv_dim, seed + 1);
  for (int64_t p = 0; p < 2 * B; ++p) {
    store_kv_row(kf.data() + p * kv_dim, c.type, kv_dim, Isa::Avx2, k.data() + p * row_b);
    store_kv_row(vf.data() + p * kv_dim, c.type, kv_dim, Isa::Avx2, v.data() + p * row_b);
  }
  // The f32 copy the prompt path makes: [B][hd] of the head under test.
  std::vector<float> k32(static_cast<size_t>(B * hd)), v32(k32.size());
  for (int64_t j = 0; j < B; ++j) {
    dequantize_row(c.type, k.data() + j * row_b + head * head_b, k32.data() + j * hd, hd);
    dequantize_row(c.type, v.data() + j * row_b + head * head_b, v32.data() + j * hd, hd);
  }
  const std::vector<float> q = test::random_floats(c.n_rows * hd, seed + 2);
  std::vector<int32_t> lo(static_cast<size_t>(c.n_rows)), hi(lo.size());
  for (int64_t r = 0; r < c.n_rows; ++r) {
    lo[r] = c.ragged ? static_cast<int32_t>((r * 7) % 20) : 0;
    hi[r] = c.ragged ? static_cast<int32_t>(B - (r * 11) % 30) : static_cast<int32_t>(B - 3);
  }
  struct Out {
    std::vector<float> p, m, l, acc;
  };
  auto args = [&](Out& o) {
    o.p.assign(static_cast<size_t>(c.n_rows * B), 0.0f);
    o.m.assign(static_cast<size_t>(c.n_rows), 0.0f);
    o.l = o.m;
    o.acc.assign(static_cast<size_t>(c.n_rows * hd), 0.0f);
    AttentionBlockArgs a;
    a.q = q.data();
    a.k = k32.data();
    a.v = v32.data();
    a.n_rows = c.n_rows;
    a.hdp = hd;
    a.lo = lo.data();
    a.hi = hi.data();
    a.scale = 0.125f;
    a.p = o.p.data();
    a.m = o.m.data();
    a.l = o.l.data();
    a.acc = o.acc.data();
    return a;
  };
  const AttentionBlockFamily f = attention_block_family(c.family, hd);
  ASSERT_EQ(f.isa, c.family);
  Out want, got;
  f.block(args(want));
  AttentionBlockArgs a = args(got);
  a.k = a.v = nullptr;
  // Stale scratch, as a reused workspace holds: the in-place kernel must not depend on it.
  std::fill(got.p.begin(), got.p.end(), 1e30f);
  CacheBlock cb;
  cb.k = k.data() + head * head_b;
  cb.v = v.data() + head * head_b;
  cb.row_stride_bytes = row_b;
  cb.type = c.type;
  if (c.prefetch) {
    cb.next_k = k.data() + B * row_b;
    cb.next_v = v.data() + B * row_b;
    cb.next_bytes = (B - 5) * row_b;
  }
  f.cache(a, cb);
  for (int64_t r = 0; r < c.n_rows; ++r) {
    EXPECT_EQ(std::memcmp(&got.m[r], &want.m[r], sizeof(float)), 0) << "row " << r << " m " << got.m[r] << " vs " << want.m[r];
    EXPECT_EQ(std::memcmp(&got.l[r], &want.l[r], sizeof(float)), 0) << "row " << r << " l " << got.l[r] << " vs " << want.l[r];
    for (int64_t d = 0; d < hd; ++d)
      ASSERT_EQ(std::memcmp(&got.acc[r * hd + d], &want.acc[r * hd + d], sizeof(float)), 0)
          << "row " << r << " d " << d << ": " << got.acc[r * hd + d] << " vs " << want.acc[r * hd + d];
  }
}

void check_family(Isa family) {
  uint32_t seed = 100;
  int checked = 0;
  for (DType type : {DType::F32, DType::F16, DType::Q8_0})
    for (int64_t hd : {32, 40, 48, 64, 80, 128}) {
      // Q8_0: multiples of 32 only; AVX-512: of 16 (hd 40 takes the AVX2 family there).
      if (!attention_block_cache_supported(family, type, hd)) continue;
      for (int64_t rows : {1, 2, 3, 4, 5, 8, 9})
        for (bool ragged : {false, true})
          for (int64_t n_kv : {1, 4}) {
            check({family, type, hd, rows, ragged, n_kv, rows % 2 == 1}, seed++);
            ++checked;
          }
    }
  // F32 / F16 at 6 head sizes (AVX-512: 5) and Q8_0 at 3, 28 cases each.
  EXPECT_EQ(checked, (family == Isa::Avx512 ? 13 : 15) * 28);
}

TEST(AttentionBlockCache, Avx2BitIdenticalToItsF32BlockKernel) {
  if (!isa_supported(Isa::Avx2)) GTEST_SKIP() << "no AVX2 on this CPU";
  check_family(Isa::Avx2);
}

TEST(AttentionBlockCache, Avx512BitIdenticalToItsF32BlockKernel) {
  if (!isa_supported(Isa::Avx512)) GTEST_SKIP() << "no AVX-512 on this CPU";
  check_family(Isa::Avx512);
}

TEST(AttentionBlockCache, SupportedShapes) {
  if (!isa_supported(Isa::Avx2)) GTEST_SKIP() << "no AVX2 on this CPU: the in-place kernels need it";
  EXPECT_TRUE(attention_block_cache_supported(Isa::Avx2, DType::F16, 64));
  EXPECT_TRUE(attention_block_cache_supported(Isa::Avx2, DType::F32, 40));
  EXPECT_FALSE(attention_block_cache_supported(Isa::Avx2, DType::F16, 36));
  EXPECT_TRUE(attention_block_cache_supported(Isa::Avx2, DType::Q8_0, 96));
  EXPECT_FALSE(attention_block_cache_supported(Isa::Avx2, DType::Q8_0, 40));
  EXPECT_FALSE(attention_block_cache_supported(Isa::Avx2, DType::BF16, 64));
  EXPECT_FALSE(attention_block_cache_supported(Isa::Scalar, DType::F16, 64));
  EXPECT_EQ(attention_block_family(Isa::Scalar, 64).isa, Isa::Scalar);
  EXPECT_EQ(attention_block_family(Isa::Avx2, 64).isa, Isa::Avx2);
  if (!isa_supported(Isa::Avx512)) return;
  EXPECT_TRUE(attention_block_cache_supported(Isa::Avx512, DType::F16, 48));
  EXPECT_FALSE(attention_block_cache_supported(Isa::Avx512, DType::F16, 40));
  EXPECT_EQ(attention_block_family(Isa::Avx512, 64).isa, Isa::Avx512);
  EXPECT_EQ(attention_block_family(Isa::Avx512, 40).isa, Isa::Avx2);  // not a multiple of 16
}

}  // namespace
}  // namespace strata::kernels::detail
