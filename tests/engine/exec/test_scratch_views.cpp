// tests/engine/exec/test_scratch_views.cpp — carve_scratch: every view of a device's scratch starts
// 16-byte aligned (the CUDA matrix-vector kernels take their vector path only there: an unaligned
// moe_x sent every expert matmul to the scalar kernel), views do not overlap, and all of them fit in
// the layout's floats(). Layouts with odd sizes before the MoE buffers: scores [3][13], logits
// [1][517], router [5][7], and a real MoE config's layout.
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "engine/exec/scratch_views.h"
#include "engine/plan/scratch_layout.h"

namespace strata {
namespace {

void expect_aligned_disjoint(const plan::ScratchLayout& l, int threads) {
  alignas(64) static float buffer[1 << 16];
  ASSERT_LE(l.floats(), static_cast<int64_t>(sizeof buffer / sizeof(float)));
  const arch::ScratchViews s = exec::carve_scratch(buffer, l, threads);
  const std::vector<std::pair<const char*, std::pair<const float*, int64_t>>> views = {
      {"hidden", {s.hidden, l.hidden}}, {"norm", {s.norm, l.norm}},       {"q", {s.q, l.q}},
      {"k", {s.k, l.k}},                {"v", {s.v, l.v}},                {"attn_out", {s.attn_out, l.attn_out}},
      {"proj", {s.proj, l.proj}},       {"gate", {s.gate, l.gate}},       {"up", {s.up, l.up}},
      {"scores", {s.scores, l.scores}}, {"logits", {s.logits, l.logits}}, {"router", {s.router, l.router}},
      {"moe_x", {s.moe_x, l.moe_x}},    {"moe_y", {s.moe_y, l.moe_y}}};
  const float* prev_end = buffer;
  for (const auto& [name, view] : views) {
    const auto& [p, n] = view;
    if (n == 0) {
      EXPECT_EQ(p, nullptr) << name;
      continue;
    }
    ASSERT_NE(p, nullptr) << name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u) << name << " starts " << (p - buffer) << " floats in";
    EXPECT_GE(p, prev_end) << name << " overlaps the view before it";
    prev_end = p + n;
  }
  EXPECT_LE(prev_end - buffer, l.floats()) << "the views run past floats()";
}

TEST(ScratchViews, EveryViewIs16ByteAlignedAfterOddSizes) {
  plan::ScratchLayout l;
  l.hidden = l.norm = l.proj = l.moe_x = l.moe_y = 5 * 64;
  l.q = l.attn_out = 5 * 64;
  l.k = l.v = 5 * 32;
  l.gate = l.up = 5 * 96;
  l.scores = 3 * 13;
  l.logits = 517;
  l.router = 5 * 7;
  expect_aligned_disjoint(l, 3);
}

TEST(ScratchViews, OddEmbeddingWidthsToo) {
  plan::ScratchLayout l;
  l.hidden = l.norm = l.proj = l.moe_x = l.moe_y = 3 * 33;
  l.q = l.attn_out = 3 * 33;
  l.k = l.v = 3 * 11;
  l.gate = l.up = 3 * 45;
  l.scores = 1 * 19;
  l.router = 3 * 5;
  expect_aligned_disjoint(l, 1);
}

}  // namespace
}  // namespace strata
