// tests/engine/backend/test_sim_pacing.cpp — a simulated device never finishes faster than its
// declared speed: a matmul on a 1 GB/s device takes at least weight bytes / 1e9 seconds, a
// compute-bound one at least FLOPs / declared rate, and a transfer at least latency + bytes / link
// speed. Lower bounds only (a busy machine may always be slower), so these cannot flake on timing.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend/ops.h"
#include "engine/backend/sim/sim_ops.h"
#include "engine/backend/device.h"
#include "kernels/cpu/dtype.h"
#include "engine/backend/sim/sim_device.h"

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;
using backend::BufferUse;
using kernels::DType;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

#define ASSERT_OK(expr)                                                 \
  do {                                                                  \
    const auto& strata_s_ = (expr);                                     \
    ASSERT_TRUE(strata_s_.ok()) << #expr << ": " << strata_s_.error().to_string(); \
  } while (0)

// A simulated device whose speeds are all "infinite" except the ones a test sets.
backend::SimulatedSpec fast_spec() {
  backend::SimulatedSpec s;
  s.id = "gpu0";
  s.capacity_bytes = 1ull << 30;
  s.bandwidth_gbps = 1e9;
  s.tflops = 1e9;
  s.link_gbps = 1e9;
  s.link_latency_us = 0;
  s.threads = 1;
  return s;
}

struct Fixture {
  std::unique_ptr<backend::SimulatedDevice> device;
  std::unique_ptr<backend::Buffer> scores;
  std::unique_ptr<backend::Ops> ops;
};

// Device and op table (workspace as the runtime gives it: [threads][n_ctx] scores).
Fixture make(const backend::SimulatedSpec& spec) {
  Fixture f;
  f.device = std::make_unique<backend::SimulatedDevice>(spec);
  auto scores = f.device->allocate(64 * sizeof(float), BufferUse::Scratch);
  if (!scores.ok()) return f;
  f.scores = std::move(*scores);
  backend::OpsWorkspace ws;
  ws.scores = f.scores->floats();
  ws.scores_per_thread = 64;
  ws.matmul_bytes = 64 * 4096 * 4;
  ws.max_ctx = 64;
  ws.max_tokens = 64;
  auto ops = f.device->create_ops(ws);
  if (ops.ok()) f.ops = std::move(*ops);
  return f;
}

std::unique_ptr<backend::Buffer> filled(backend::Device& d, size_t n_floats, float value, BufferUse use) {
  auto b = d.allocate(n_floats * sizeof(float), use);
  if (!b.ok()) return nullptr;
  std::vector<float> host(n_floats, value);
  std::memcpy((*b)->host(), host.data(), n_floats * sizeof(float));
  return std::move(*b);
}

// The declared attention work grows with the context: values, not time.
TEST(SimPacing, AttentionCostGrowsWithContext) {
  backend::AttentionArgs a;
  a.kv_type = kernels::DType::F16;
  a.n_heads = 16;
  a.n_kv_heads = 4;
  a.head_dim = 64;
  a.n_tokens = 1;
  a.pos0 = 4095;  // decode with 4096 visible positions
  const backend::SimCost d = backend::attention_cost(a);
  EXPECT_DOUBLE_EQ(d.bytes, 4096.0 * 2 * 256 * 2 + 4.0 * 16 * 64 * 4);
  EXPECT_DOUBLE_EQ(d.flops, 4096.0 * 4 * 16 * 64);
  a.pos0 = 0;
  EXPECT_DOUBLE_EQ(backend::attention_cost(a).flops, 4.0 * 16 * 64);
  // A window caps the positions; a prompt of 32 tokens at 0 reads K and V once per 16-token tile
  // (positions [0, 16) then [0, 32)) and does sum_{t=1..32} t = 528 positions of dot products.
  a.window = 100;
  a.pos0 = 4095;
  EXPECT_DOUBLE_EQ(backend::attention_cost(a).flops, 100.0 * 4 * 16 * 64);
  a.window = 0;
  a.pos0 = 0;
  a.n_tokens = 32;
  const backend::SimCost p = backend::attention_cost(a);
  EXPECT_DOUBLE_EQ(p.flops, 528.0 * 4 * 16 * 64);
  EXPECT_DOUBLE_EQ(p.bytes, (16.0 + 32.0) * 2 * 256 * 2 + 32 * 4.0 * 16 * 64 * 4);
  // Not causal: every token sees all 32 positions.
  a.causal = false;
  EXPECT_DOUBLE_EQ(backend::attention_cost(a).flops, 32.0 * 32 * 4 * 16 * 64);
  // MLA's latent cache: the values are the keys' rows (one plane), read once.
  float cache[4];
  a.k_cache = a.v_cache = cache;
  a.causal = true;
  EXPECT_DOUBLE_EQ(backend::attention_cost(a).bytes, (16.0 + 32.0) * 1 * 256 * 2 + 32 * 4.0 * 16 * 64 * 4);
}

// Matmul on a 1 GB/s device: at least the weight's bytes / 1e9 seconds.
TEST(SimPacing, MatmulTakesAtLeastWeightBytesOverBandwidth) {
  backend::SimulatedSpec spec = fast_spec();
  spec.bandwidth_gbps = 1;
  Fixture f = make(spec);
  ASSERT_TRUE(f.ops);
  const int64_t rows = 2048, cols = 1024;  // F32: 8 MiB -> 8.4 ms at 1 GB/s
  auto w = filled(*f.device, static_cast<size_t>(rows * cols), 0.001f, BufferUse::Weights);
  auto x = filled(*f.device, static_cast<size_t>(4 * cols), 1.0f, BufferUse::Scratch);
  auto y = filled(*f.device, static_cast<size_t>(4 * rows), 0.0f, BufferUse::Scratch);
  ASSERT_TRUE(w && x && y);
  const double weight_bytes = static_cast<double>(kernels::row_bytes(DType::F32, cols)) * rows;
  for (int64_t n_tokens : {1, 4}) {
    const auto t0 = Clock::now();
    ASSERT_OK(f.ops->matmul({w->data(), DType::F32, rows, cols}, x->floats(), n_tokens, y->floats()));
    ASSERT_OK(f.ops->synchronize());
    const double elapsed = seconds_since(t0);
    const double declared = weight_bytes / (spec.bandwidth_gbps * 1e9);
    EXPECT_GE(elapsed, declared) << n_tokens << " tokens: a matmul over " << weight_bytes
                                 << " bytes of weights finished in " << elapsed * 1e3 << " ms on a "
                                 << spec.bandwidth_gbps << " GB/s device (declared at least " << declared * 1e3
                                 << " ms)";
    // The work was done, not skipped.
    std::vector<float> out(static_cast<size_t>(n_tokens * rows));
    ASSERT_OK(f.ops->to_host(y->data(), out.data(), out.size() * sizeof(float)));
    EXPECT_NEAR(out[0], 0.001f * cols, 1e-3);
  }
}

// The device's timeline (events) shows the paced time too, so traces describe the declared hardware.
TEST(SimPacing, EventsSeeThePacedTime) {
  backend::SimulatedSpec spec = fast_spec();
  spec.bandwidth_gbps = 1;
  Fixture f = make(spec);
  ASSERT_TRUE(f.ops);
  const int64_t rows = 1024, cols = 1024;  // 4 MiB -> 4.2 ms
  auto w = filled(*f.device, static_cast<size_t>(rows * cols), 0.5f, BufferUse::Weights);
  auto x = filled(*f.device, static_cast<size_t>(cols), 1.0f, BufferUse::Scratch);
  auto y = filled(*f.device, static_cast<size_t>(rows), 0.0f, BufferUse::Scratch);
  ASSERT_TRUE(w && x && y);
  auto before = f.ops->record_event();
  ASSERT_OK(before);
  ASSERT_OK(f.ops->matmul({w->data(), DType::F32, rows, cols}, x->floats(), 1, y->floats()));
  auto after = f.ops->record_event();
  ASSERT_OK(after);
  ASSERT_OK((*after)->synchronize());
  auto ns = (*after)->elapsed_ns_since(**before);
  ASSERT_OK(ns);
  const double declared = static_cast<double>(rows * cols * 4) / 1e9;
  EXPECT_GE(static_cast<double>(*ns) * 1e-9, declared) << "events around a paced matmul";
}

// The host issues ahead of a paced device (Ops::issues_ahead), and its events say how long until
// the work before them is done (Event::ns_from_now), which the trace uses to place a device's
// spans on its timeline: the reported wait is never longer than the real one (synchronize sleeps
// until the event's time, never less), and it is 0 once the event has completed.
TEST(SimPacing, EventsTellHowLongUntilTheyComplete) {
  backend::SimulatedSpec spec = fast_spec();
  spec.bandwidth_gbps = 1;
  Fixture f = make(spec);
  ASSERT_TRUE(f.ops);
  EXPECT_TRUE(f.ops->issues_ahead());
  const int64_t rows = 1024, cols = 1024;  // 4 MiB -> 4.2 ms
  auto w = filled(*f.device, static_cast<size_t>(rows * cols), 0.5f, BufferUse::Weights);
  auto x = filled(*f.device, static_cast<size_t>(cols), 1.0f, BufferUse::Scratch);
  auto y = filled(*f.device, static_cast<size_t>(rows), 0.0f, BufferUse::Scratch);
  ASSERT_TRUE(w && x && y);
  ASSERT_OK(f.ops->matmul({w->data(), DType::F32, rows, cols}, x->floats(), 1, y->floats()));
  auto after = f.ops->record_event();
  ASSERT_OK(after);
  const Clock::time_point asked = Clock::now();
  const std::optional<int64_t> left = (*after)->ns_from_now();
  ASSERT_TRUE(left.has_value());
  EXPECT_GE(*left, 0);
  ASSERT_OK((*after)->synchronize());
  const int64_t waited = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - asked).count();
  EXPECT_LE(*left, waited) << "the event completed before the time it reported";
  EXPECT_EQ((*after)->ns_from_now(), std::optional<int64_t>(0));
}

// Compute-bound: a device of 1 GFLOP/s (tflops 1e-3) with unbounded bandwidth takes at least
// 2 * rows * cols * n_tokens / 1e9 seconds for a matmul.
TEST(SimPacing, ComputeBoundMatmulTakesAtLeastFlopsOverRate) {
  backend::SimulatedSpec spec = fast_spec();
  spec.tflops = 1e-3;
  Fixture f = make(spec);
  ASSERT_TRUE(f.ops);
  const int64_t rows = 512, cols = 512, n_tokens = 16;  // 8.4 MFLOP -> 8.4 ms
  auto w = filled(*f.device, static_cast<size_t>(rows * cols), 0.25f, BufferUse::Weights);
  auto x = filled(*f.device, static_cast<size_t>(n_tokens * cols), 1.0f, BufferUse::Scratch);
  auto y = filled(*f.device, static_cast<size_t>(n_tokens * rows), 0.0f, BufferUse::Scratch);
  ASSERT_TRUE(w && x && y);
  const auto t0 = Clock::now();
  ASSERT_OK(f.ops->matmul({w->data(), DType::F32, rows, cols}, x->floats(), n_tokens, y->floats()));
  ASSERT_OK(f.ops->synchronize());
  const double elapsed = seconds_since(t0);
  const double flops = 2.0 * rows * cols * n_tokens;
  const double declared = flops / (spec.tflops * 1e12);
  EXPECT_GE(elapsed, declared) << flops << " FLOPs finished in " << elapsed * 1e3 << " ms on a " << spec.tflops * 1e3
                               << " GFLOP/s device (declared at least " << declared * 1e3 << " ms)";
}

// An element-wise op is bandwidth work too: add reads y and x (8 bytes per element at the least).
TEST(SimPacing, AddTakesAtLeastItsReadsOverBandwidth) {
  backend::SimulatedSpec spec = fast_spec();
  spec.bandwidth_gbps = 1;
  Fixture f = make(spec);
  ASSERT_TRUE(f.ops);
  const int64_t n = 1 << 20;  // reads 8 MiB -> 8.4 ms
  auto y = filled(*f.device, static_cast<size_t>(n), 1.0f, BufferUse::Scratch);
  auto x = filled(*f.device, static_cast<size_t>(n), 2.0f, BufferUse::Scratch);
  ASSERT_TRUE(x && y);
  const auto t0 = Clock::now();
  ASSERT_OK(f.ops->add(y->floats(), x->floats(), n));
  ASSERT_OK(f.ops->synchronize());
  const double elapsed = seconds_since(t0);
  const double declared = 8.0 * static_cast<double>(n) / 1e9;
  EXPECT_GE(elapsed, declared) << "add of " << n << " floats in " << elapsed * 1e3 << " ms (declared at least "
                               << declared * 1e3 << " ms)";
}

// Transfers across the host boundary: at least latency + bytes / link speed, both through the op
// table (from_host / to_host) and through the device's blocking copies.
TEST(SimPacing, TransfersTakeAtLeastLatencyPlusBytesOverLink) {
  backend::SimulatedSpec spec = fast_spec();
  spec.link_gbps = 1;
  spec.link_latency_us = 2000;
  Fixture f = make(spec);
  ASSERT_TRUE(f.ops);
  const size_t bytes = 4u << 20;  // 4.2 ms + 2 ms
  const double declared = spec.link_latency_us * 1e-6 + static_cast<double>(bytes) / (spec.link_gbps * 1e9);
  auto buf = f.device->allocate(bytes, BufferUse::Scratch);
  ASSERT_OK(buf);
  std::vector<uint8_t> host(bytes, 7), back(bytes, 0);

  auto t0 = Clock::now();
  ASSERT_OK(f.ops->from_host(host.data(), (*buf)->data(), bytes));
  ASSERT_OK(f.ops->synchronize());
  double elapsed = seconds_since(t0);
  EXPECT_GE(elapsed, declared) << "Ops::from_host of " << bytes << " bytes";

  t0 = Clock::now();
  ASSERT_OK(f.ops->to_host((*buf)->data(), back.data(), bytes));
  elapsed = seconds_since(t0);
  EXPECT_GE(elapsed, declared) << "Ops::to_host of " << bytes << " bytes";
  EXPECT_EQ(back, host);

  backend::Copy2D c;
  c.src = host.data();
  c.src_pitch = bytes;
  c.dst = (*buf)->data();
  c.dst_pitch = bytes;
  c.width = bytes;
  c.height = 1;
  t0 = Clock::now();
  ASSERT_OK(f.device->copy_from_host(c));
  elapsed = seconds_since(t0);
  EXPECT_GE(elapsed, declared) << "Device::copy_from_host of " << bytes << " bytes";

  c.src = (*buf)->data();
  c.dst = back.data();
  t0 = Clock::now();
  ASSERT_OK(f.device->copy_to_host(c));
  elapsed = seconds_since(t0);
  EXPECT_GE(elapsed, declared) << "Device::copy_to_host of " << bytes << " bytes";

  // Latency alone: a one-byte copy still pays it.
  t0 = Clock::now();
  ASSERT_OK(f.ops->from_host(host.data(), (*buf)->data(), 1));
  ASSERT_OK(f.ops->synchronize());
  elapsed = seconds_since(t0);
  EXPECT_GE(elapsed, spec.link_latency_us * 1e-6) << "a 1-byte from_host skipped the link latency";
}

}  // namespace
}  // namespace strata
