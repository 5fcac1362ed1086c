// tests/engine/plan/test_cost_model.cpp — predicted times against hand-computed values on a
// synthetic F32 model (4 blocks, n_embd 256, n_ff 512, 8 heads, 1000 tokens).
#include <gtest/gtest.h>

#include "engine/plan/activation_traffic.h"
#include "engine/plan/cost_model.h"
#include "plan_test_models.h"

namespace strata::plan {
namespace {

// One block: 4 x 256^2 + 3 x 256 x 512 + 2 x 256 = 655872 parameters, 2623488 bytes (F32).
constexpr double kBlockBytes = 2623488;
constexpr double kBlockFlops = 2.0 * 655872;
// Its activations per token (f32 elements x 4; q, k, v rows 256 each, 512 FFN units):
// attention 2 x 256 (norm) + 3 x 256 + 3 x 256 (Q, K, V in and out) + 2 x 512 (RoPE on q, k) +
// 4 x 256 (attention: q, k, v in, out) + 2 x 256 (O) + 3 x 256 (residual) = 5376;
// FFN 2 x 256 + 2 x (256 + 512) (gate, up) + 3 x 512 (SwiGLU) + (512 + 256) (down) + 3 x 256 = 5120.
constexpr double kBlockActivations = 4.0 * (5376 + 5120);
// The embedding writes its row (256 floats); the head norms the row (x, weights, out), reads it
// into the product and writes 1000 logits: (3 x 256 + 256 + 1000) x 4 bytes; the logits (4000
// bytes) then go to the host over the device's link.
constexpr double kEmbeddingActivations = 1024;
constexpr double kHeadActivations = 4.0 * (3 * 256 + 256 + 1000);
constexpr double kLogitsBytes = 4000;
// Each block writes the token's K and V rows into the cache: 2 x 256 elements of F16 (the
// placements' default cache type), with an empty cache too.
constexpr double kKvAppend = 2 * 256 * 2;

Placement one_device(const std::string& id, int64_t n) {
  Placement p;
  p.n_ctx = 64;
  p.max_batch = 16;
  p.layers.resize(static_cast<size_t>(n));
  for (auto& l : p.layers) l.target.devices = {id};
  p.embedding.devices = p.head.devices = {id};
  return p;
}

TEST(CostModel, BlockIsBandwidthOrComputeBound) {
  auto m = test::synthetic_model(4);
  EXPECT_EQ(m.weights.layers[0].n_bytes(), kBlockBytes);
  EXPECT_EQ(shard_parameters(m.config, m.weights.layers[0], whole_layer(m.config)), 655872u);
  const auto d = test::device("g", 1 << 30, /*bw*/ 100, /*tflops*/ 10);
  // Decode: (2623488 B + 41984 B of activations) / 100 GB/s = 0.02665472 ms; FLOPs 1311744 / 10
  // TFLOPS = 0.000131 ms.
  EXPECT_NEAR(block_ms(m.config, m.weights.layers[0], whole_layer(m.config), true, d, 1),
              (kBlockBytes + kBlockActivations) / 1e8, 1e-12);
  // Prefill, batch 1000: the weights are 0.0000262 ms a token, but each token's own activations
  // (0.00041984 ms) are not shared by the batch: more than the compute, 0.000131 ms.
  EXPECT_NEAR(block_ms(m.config, m.weights.layers[0], whole_layer(m.config), true, d, 1000),
              (kBlockBytes / 1000 + kBlockActivations) / 1e8, 1e-12);
  // At 1 TFLOPS the compute, 0.00131 ms, is the bound.
  const auto slow = test::device("s", 1 << 30, /*bw*/ 100, /*tflops*/ 1);
  EXPECT_NEAR(block_ms(m.config, m.weights.layers[0], whole_layer(m.config), true, slow, 1000), kBlockFlops / 1e9, 1e-12);
  // Unknown speeds fall back to 20 GB/s.
  const auto unknown = test::device("u", 1 << 30, 0, 0);
  EXPECT_NEAR(block_ms(m.config, m.weights.layers[0], whole_layer(m.config), true, unknown, 1),
              (kBlockBytes + kBlockActivations) / (kDefaultBandwidthGbps * 1e6), 1e-12);
}

// Attention priced by context: decode at C cached tokens adds, per block, max(K and V bytes of
// C + 1 positions / bandwidth, 4 x positions x q_dim FLOPs / rate); prompts see C + max_batch / 2
// positions per token, K and V read once per 16 tokens. Every token writes its own K and V rows,
// an empty cache too.
TEST(CostModel, AttentionGrowsWithContext) {
  auto m = test::synthetic_model(4);
  const std::vector<DeviceInfo> devices = {test::device("g", 1 << 30, 100, 10)};
  Placement p = one_device("g", 4);
  p.kv_type = kernels::DType::F16;
  auto empty = estimate_cost(p, m.config, m.weights, devices);
  auto full = estimate_cost(p, m.config, m.weights, devices, 4095);
  ASSERT_TRUE(empty.ok() && full.ok());
  const double kv_elems = static_cast<double>(m.config.n_kv_heads * m.config.head_dim);
  const double q_elems = static_cast<double>(m.config.n_heads * m.config.head_dim);
  // F16: 2 bytes per element; the new K and V rows, 2 x 256 x 2 B, written per block and token.
  const double append = 2 * kv_elems * 2 / 1e8;
  EXPECT_NEAR(empty->stages[0].attention_ms, 4 * append, 1e-15);
  EXPECT_EQ(full->context, 4095);
  // Decode: 4096 positions.
  const double per_block = std::max(4096 * 2 * kv_elems * 2 / 1e8 + append, 4 * 4096 * q_elems / 1e10);
  EXPECT_NEAR(full->stages[0].attention_ms, 4 * per_block, 1e-12);
  EXPECT_NEAR(full->decode_ms_per_token - empty->decode_ms_per_token, 4 * (per_block - append), 1e-12);
  // Prompt: 4095 + 16 / 2 positions per token on average.
  const double prompt_block = std::max(4103 * 2 * kv_elems * 2 / 1e8 / 16 + append, 4 * 4103 * q_elems / 1e10);
  EXPECT_NEAR(full->prefill_ms_per_token - empty->prefill_ms_per_token, 4 * (prompt_block - append), 1e-12);
  EXPECT_LT(full->decode_tokens_per_s, empty->decode_tokens_per_s);
  EXPECT_FALSE(estimate_cost(p, m.config, m.weights, devices, -1).ok());
}

TEST(CostModel, OneDeviceSumsBlocksEmbeddingAndHead) {
  auto m = test::synthetic_model(4);
  const std::vector<DeviceInfo> devices = {test::device("g", 1 << 30, 100, 10)};
  auto c = estimate_cost(one_device("g", 4), m.config, m.weights, devices);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  ASSERT_EQ(c->stages.size(), 1u);
  // embedding row 1024 B and its f32 copy; head 1024 + 1024000 B, its activations, FLOPs 2 x 1000 x
  // 256, then the logits over the 10 GB/s link with its 10 us.
  const double emb = (1024 + kEmbeddingActivations) / 1e8;
  const double head = std::max((1025024 + kHeadActivations) / 1e8, 512000 / 1e10) + kLogitsBytes / 1e7 + 0.010;
  const double expect = 4 * (kBlockBytes + kBlockActivations + kKvAppend) / 1e8 + emb + head;
  EXPECT_NEAR(c->decode_ms_per_token, expect, 1e-12);
  EXPECT_NEAR(c->bottleneck_ms, expect, 1e-12);
  EXPECT_NEAR(c->decode_tokens_per_s, 1000 / expect, 1e-6);
  EXPECT_TRUE(c->stages[0].has_embedding);
  EXPECT_TRUE(c->stages[0].has_head);
  EXPECT_EQ(c->stages[0].recv_ms, 0.0);
  ASSERT_EQ(c->devices.size(), 1u);
  EXPECT_NEAR(c->devices[0].decode_ms, expect, 1e-12);
  // Prefill (batch 16): per block max(weights / 16 + activations, flops); head once per batch.
  const double prefill =
      emb + 4 * (std::max((kBlockBytes / 16 + kBlockActivations) / 1e8, kBlockFlops / 1e10) + kKvAppend / 1e8) + head / 16;
  EXPECT_NEAR(c->prefill_ms_per_token, prefill, 1e-12);
}

TEST(CostModel, PipelineTransfersAndSequences) {
  auto m = test::synthetic_model(4);
  // a: 100 GB/s, link 10 GB/s, 10 us; b: 50 GB/s, link 5 GB/s, 20 us.
  const std::vector<DeviceInfo> devices = {test::device("a", 1 << 30, 100, 10, 10, 10),
                                                 test::device("b", 1 << 30, 50, 10, 5, 20)};
  Placement p = one_device("a", 4);
  p.layers[2].target.devices = p.layers[3].target.devices = {"b"};
  p.head.devices = {"b"};
  p.n_seq = 4;
  auto c = estimate_cost(p, m.config, m.weights, devices);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  ASSERT_EQ(c->stages.size(), 2u);
  const double s0 = (1024 + kEmbeddingActivations) / 1e8 + 2 * (kBlockBytes + kBlockActivations + kKvAppend) / 1e8;
  // Into b: 1024 B at min(10, 5) GB/s + max(10, 20) us.
  const double recv = 1024 / 5e6 + 0.020;
  // The logits leave b over its own link: 4000 B at 5 GB/s + 20 us.
  const double logits = kLogitsBytes / 5e6 + 0.020;
  const double s1 =
      recv + 2 * (kBlockBytes + kBlockActivations + kKvAppend) / 5e7 + (1025024 + kHeadActivations) / 5e7 + logits;
  EXPECT_NEAR(c->stages[0].decode_ms, s0, 1e-12);
  EXPECT_NEAR(c->stages[1].recv_ms, recv, 1e-12);
  EXPECT_NEAR(c->stages[1].decode_ms, s1, 1e-12);
  EXPECT_NEAR(c->decode_ms_per_token, s0 + s1, 1e-12);
  EXPECT_NEAR(c->bottleneck_ms, s1, 1e-12);
  // 4 sequences on 2 stages: 2 groups of 2 rows, each group one micro-batch in flight. Per row of
  // a 2-row micro-batch each stage reads its weights once for both rows (bytes / 2) and pays the
  // link latency once (latency / 2); the embedding row lookup, every row's activations and its
  // logits' copy stay per token.
  const double s0r = (1024 + kEmbeddingActivations) / 1e8 + 2 * (kBlockBytes / 2 + kBlockActivations + kKvAppend) / 1e8;
  const double s1r = 1024 / 5e6 + 0.020 / 2 + 2 * (kBlockBytes / 2 + kBlockActivations + kKvAppend) / 5e7 +
                     (1025024.0 / 2 + kHeadActivations) / 5e7 + logits;
  // A round (every sequence one token): max(one group's trip, 2 groups x slowest stage).
  const double round = std::max(2 * (s0r + s1r), 2 * 2 * std::max(s0r, s1r));
  EXPECT_EQ(c->decode_micro_batches, 2);
  EXPECT_EQ(c->decode_rows_per_micro_batch, 2);
  EXPECT_NEAR(c->decode_round_ms, round, 1e-12);
  EXPECT_NEAR(c->decode_tokens_per_s, 4000 / round, 1e-6);
  EXPECT_NEAR(c->objective_ms(), round / 4, 1e-12);
  // Batching pays: faster than 4 sequences one after another, and than the old unbatched bound.
  EXPECT_GT(c->decode_tokens_per_s, 4000 / std::max(s0 + s1, 4 * s1));
  // One boundary (a -> b): the hidden state, 256 floats, crosses it once per token.
  EXPECT_EQ(c->boundaries, 1);
  EXPECT_FALSE(c->stages[0].receives);
  EXPECT_TRUE(c->stages[1].receives);
  EXPECT_EQ(c->stages[1].transfer_bytes, 1024u);
  EXPECT_EQ(c->transfer_bytes_per_token, 1024u);
  const nlohmann::json j = to_json(*c);
  EXPECT_EQ(j["boundaries"], 1);
  EXPECT_EQ(j["transfer_bytes_per_token"], 1024);
  EXPECT_EQ(j["stages"][1]["transfer_bytes"], 1024);
}

TEST(CostModel, ConcurrentStagesAreThoseWithDisjointDevices) {
  using Sets = std::vector<std::vector<std::string>>;
  EXPECT_EQ(concurrent_stage_count(Sets{{"a"}, {"b"}}), 2);                      // layer split
  EXPECT_EQ(concurrent_stage_count(Sets{{"a"}, {"a", "b"}, {"a"}}), 1);          // tensor group, ends on a
  EXPECT_EQ(concurrent_stage_count(Sets{{"a"}, {"b"}, {"c"}}), 3);               // three devices
  EXPECT_EQ(concurrent_stage_count(Sets{{"a"}, {"b"}, {"a"}}), 2);               // a returns: takes turns
  EXPECT_EQ(concurrent_stage_count(Sets{{"a", "b"}, {"c", "d"}}), 2);            // two groups
  EXPECT_EQ(concurrent_stage_count(Sets{{"cpu"}, {"cpu", "gpu0"}, {"gpu1"}}), 2);  // the middle one shares cpu
  EXPECT_EQ(concurrent_stage_count(Sets{}), 1);
}

TEST(CostModel, TensorGroupAllReducesAndKvElsewhere) {
  auto m = test::synthetic_model(2);
  const std::vector<DeviceInfo> devices = {test::device("a", 1 << 30, 100, 10, 10, 10),
                                                 test::device("b", 1 << 30, 100, 10, 10, 10),
                                                 test::device("cpu", 1 << 30, 20, 1, 0, 0)};
  Placement p = one_device("a", 2);
  for (auto& l : p.layers) l.target = Target{{"a", "b"}, {1, 1}};
  auto c = estimate_cost(p, m.config, m.weights, devices);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  // Embedding on a, then the group, which also runs the head: a is a member, so each member
  // computes half the vocabulary's logits (plan::head_shares).
  ASSERT_EQ(c->stages.size(), 2u);
  EXPECT_TRUE(c->stages[1].has_head);
  const double ar = 2 * (1024 / 1e7 + 0.010);
  EXPECT_NEAR(c->stages[1].allreduce_ms, 2 * ar, 1e-12);
  // Half shards: (2623488 + 2048) / 2 bytes each, and their activations: 4 of 8 heads (q, k, v
  // rows 128 each) and 256 of 512 FFN units, the norms and residual adds whole. Attention 512
  // (norm) + 3 x (256 + 128) (Q, K, V) + 512 (RoPE) + 512 (attention) + (128 + 256) (O) + 768 =
  // 3840 floats; FFN 512 + 2 x (256 + 256) + 3 x 256 + (256 + 256) + 768 = 3584.
  const auto shards = split_layer(m.config, m.weights.layers[0], {1, 1}, 0);
  ASSERT_TRUE(shards.ok());
  const double shard_act = 4.0 * (3840 + 3584);
  EXPECT_EQ(attention_activation_bytes(m.config, m.weights.layers[0], (*shards)[0]) +
                ffn_activation_bytes(m.config, m.weights.layers[0], (*shards)[0]),
            shard_act);
  // The head's rows halved: 500 vocabulary rows each, the norm whole; the slower half (the same
  // here): half the output matrix and norm, (3 x 256 + 256 + 500) floats, 2000 B of logits over
  // the 10 GB/s link and its 10 us.
  const double head_half = head_rows_ms(m.config, m.weights, devices[0], 1, 500);
  EXPECT_NEAR(head_half, std::max((1025024.0 / 2 + 4.0 * (3 * 256 + 256 + 500)) / 1e8, 256000 / 1e10) + 2000 / 1e7 + 0.010,
              1e-12);
  // Each member writes its 4 heads' K and V rows: half the append.
  EXPECT_NEAR(c->stages[1].compute_ms, 2 * ((kBlockBytes + 2048) / 2 + shard_act + kKvAppend / 2) / 1e8 + head_half, 1e-12);
  EXPECT_EQ(c->stages[1].recv_ms, 1024 / 1e7 + 0.010);  // a -> {a, b}: b needs it
  // Bytes per token: into the group 1024, 2 all-reduces of 1024 per block (2 blocks), nothing back.
  EXPECT_EQ(c->boundaries, 1);
  EXPECT_EQ(c->stages[1].transfer_bytes, 1024u + 2 * 2 * 1024u);
  EXPECT_EQ(c->transfer_bytes_per_token, 5u * 1024u);
  // The head on a device of its own (the CPU) is a third stage, whole there.
  Placement apart = p;
  apart.head.devices = {"cpu"};
  auto ca = estimate_cost(apart, m.config, m.weights, devices);
  ASSERT_TRUE(ca.ok()) << ca.error().to_string();
  ASSERT_EQ(ca->stages.size(), 3u);
  EXPECT_NEAR(ca->stages[2].compute_ms, head_ms(m.config, m.weights, devices[2], 1), 1e-12);
  // 8 sequences: both stages use a, so neither overlaps the other and one micro-batch of 8
  // rows reads every weight once per step (two would read them twice). The round is
  // the trip of that one micro-batch.
  p.n_seq = 8;
  auto c8 = estimate_cost(p, m.config, m.weights, devices);
  ASSERT_TRUE(c8.ok()) << c8.error().to_string();
  EXPECT_EQ(c8->decode_micro_batches, 1);
  EXPECT_EQ(c8->decode_rows_per_micro_batch, 8);

  Placement k = one_device("a", 2);
  k.layers[1].kv_device = "cpu";
  auto ck = estimate_cost(k, m.config, m.weights, devices);
  ASSERT_TRUE(ck.ok());
  // Per block with KV on the CPU: (2 x 256 + 2 x 256) floats over a's 10 GB/s link (cpu has none),
  // two latencies of 10 us.
  ASSERT_EQ(ck->stages.size(), 2u);
  EXPECT_NEAR(ck->stages[1].kv_transfer_ms, 4096 / 1e7 + 0.020, 1e-12);
  EXPECT_EQ(ck->stages[1].recv_ms, 0.0);  // same device a
  // q, k, v out and the attention result back: (2 x 256 + 2 x 256) x 4 bytes; no boundary.
  EXPECT_EQ(ck->boundaries, 0);
  EXPECT_EQ(ck->transfer_bytes_per_token, 4096u);
}

}  // namespace
}  // namespace strata::plan

namespace strata::plan {
namespace {

// Issue 49 item 4: the CPU's decode is limited by its kernels, not only by its memory. A measured
// one-token product rate below the bandwidth sets the decode time of the weights of that type;
// prompt batches still read at the bandwidth and are bound by the FLOP rate.
TEST(CostModel, MeasuredProductRateSetsDecodeTime) {
  auto m = test::synthetic_model(4);
  auto d = test::device("cpu", 1 << 30, /*bw*/ 100, /*tflops*/ 10);
  d.matvec_gbps = {MatvecRate{kernels::DType::F32, 8.0}, MatvecRate{kernels::DType::Q4_K, 50.0}};
  const auto& l = m.weights.layers[0];
  // The synthetic model's matrices are F32: 2623488 B at 8 GB/s (the norms, 2 x 256 x 4 B, read with
  // them); the activations, plain memory traffic, at the bandwidth.
  EXPECT_NEAR(block_ms(m.config, l, whole_layer(m.config), true, d, 1), kBlockBytes / 8e6 + kBlockActivations / 1e8, 1e-9);
  EXPECT_NEAR(block_ms(m.config, l, whole_layer(m.config), true, d, 1000), (kBlockBytes / 1000 + kBlockActivations) / 1e8,
              1e-12);
  // A rate above the bandwidth does not speed anything up.
  d.matvec_gbps = {MatvecRate{kernels::DType::F32, 400.0}};
  EXPECT_NEAR(block_ms(m.config, l, whole_layer(m.config), true, d, 1), (kBlockBytes + kBlockActivations) / 1e8, 1e-12);
  // A whole placement: decode time is the sum and tok/s its inverse (one sequence).
  d.matvec_gbps = {MatvecRate{kernels::DType::F32, 8.0}};
  auto cost = estimate_cost(one_device("cpu", 4), m.config, m.weights, {d});
  ASSERT_TRUE(cost.ok()) << cost.error().message;
  EXPECT_GT(cost->decode_ms_per_token, 4 * kBlockBytes / 8e6);
  EXPECT_NEAR(cost->decode_tokens_per_s, 1000.0 / cost->decode_ms_per_token, 1e-9);
}

// Short rows are slower per byte: each weight row of a one-token product costs MatvecRate::row_ns
// beyond its bytes at the rate (SmolLM2's 576-column rows read at 2/3 of the long-row rate). The
// block's decode time grows by its matrices' rows times it (the norms ride along at the matrices'
// rate, as above); prompts are not charged it.
TEST(CostModel, PerRowAndPerCallTimesAddToDecode) {
  auto m = test::synthetic_model(4);
  auto d = test::device("cpu", 1 << 30, /*bw*/ 100, /*tflops*/ 10);
  const auto& l = m.weights.layers[0];
  double rows = 0, matrix_bytes = 0;
  for (const model::TensorView* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
    if (t->n_bytes > 0) {
      rows += static_cast<double>(t->rows * t->n_mats);
      matrix_bytes += static_cast<double>(t->n_bytes);
    }
  ASSERT_GT(rows, 0);
  d.matvec_gbps = {MatvecRate{kernels::DType::F32, 8.0, 0.0}};
  const double without = block_ms(m.config, l, whole_layer(m.config), true, d, 1);
  d.matvec_gbps = {MatvecRate{kernels::DType::F32, 8.0, 50.0}};
  const double with = block_ms(m.config, l, whole_layer(m.config), true, d, 1);
  EXPECT_NEAR(with - without, rows * 50e-6 * kBlockBytes / matrix_bytes, 1e-9);
  // And each product call its fixed time (DeviceInfo::matvec_call_us), once per matrix.
  double matrices = 0;
  for (const model::TensorView* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
    if (t->n_bytes > 0) matrices += static_cast<double>(t->n_mats);
  d.matvec_call_us = 4.0;
  const double with_calls = block_ms(m.config, l, whole_layer(m.config), true, d, 1);
  EXPECT_NEAR(with_calls - with, matrices * 4e-3 * kBlockBytes / matrix_bytes, 1e-9);
  d.matvec_call_us = 0.0;
  EXPECT_NEAR(block_ms(m.config, l, whole_layer(m.config), true, d, 1000), (kBlockBytes / 1000 + kBlockActivations) / 1e8,
              1e-12);
  // A simulated device with half the host's threads: half the rate, twice the time per row.
  auto cpu = test::device("cpu", 1 << 30, 100, 10, 10, 2, 0, /*threads*/ 2);
  cpu.matvec_gbps = {MatvecRate{kernels::DType::F32, 8.0, 50.0}};
  cpu.matvec_call_us = 3.0;
  const auto sim = test::device("gpu0", 1 << 30, 900, 80, 25, 10, 0, /*threads*/ 1);
  const std::vector<DeviceInfo> bounded = host_bounded({cpu, sim});
  ASSERT_EQ(bounded[1].matvec_gbps.size(), 1u);
  EXPECT_DOUBLE_EQ(bounded[1].matvec_gbps[0].gbps, 4.0);
  EXPECT_DOUBLE_EQ(bounded[1].matvec_gbps[0].row_ns, 100.0);
  EXPECT_DOUBLE_EQ(bounded[1].matvec_call_us, 3.0);  // its calls hand out work as the host's do
}

// Simulated devices run the CPU's kernels on their own threads: what this machine can run is
// bounded by the host CPU, scaled by the simulated device's share of its threads.
TEST(CostModel, HostBoundedCapsSimulatedDevices) {
  auto m = test::synthetic_model(4);
  auto cpu = test::device("cpu", 1 << 30, /*bw*/ 20, /*tflops*/ 0.2, 10, 2, 0, /*threads*/ 2);
  cpu.matvec_gbps = {MatvecRate{kernels::DType::F32, 8.0}};
  const auto gpu = test::device("gpu0", 1 << 30, /*bw*/ 900, /*tflops*/ 80, 25, 10, 0, /*threads*/ 1);
  const std::vector<DeviceInfo> devices{cpu, gpu};
  const auto bounded = host_bounded(devices);
  ASSERT_EQ(bounded.size(), 2u);
  EXPECT_EQ(bounded[0].bandwidth_gbps, 20);  // the CPU itself is unchanged
  EXPECT_EQ(bounded[1].bandwidth_gbps, 10);  // 900 declared, the host's 20 x 1/2 threads
  EXPECT_NEAR(bounded[1].tflops, 0.1, 1e-12);
  ASSERT_EQ(bounded[1].matvec_gbps.size(), 1u);
  EXPECT_EQ(bounded[1].matvec_gbps[0].gbps, 4.0);
  const Placement p = one_device("gpu0", 4);
  EXPECT_TRUE(uses_simulated(p, devices));
  EXPECT_FALSE(uses_simulated(one_device("cpu", 4), devices));
  auto declared = estimate_cost(p, m.config, m.weights, devices);
  auto here = estimate_cost(p, m.config, m.weights, bounded);
  ASSERT_TRUE(declared.ok() && here.ok());
  // Declared: 900 GB/s; here: 4 GB/s per F32 weight byte: over 100x slower, as the chat runs.
  EXPECT_GT(declared->decode_tokens_per_s, 100 * here->decode_tokens_per_s);
  // Weights at 4 GB/s, activations at the bounded 10 GB/s.
  EXPECT_NEAR(here->decode_ms_per_token, 4 * (kBlockBytes / 4e6 + (kBlockActivations + kKvAppend) / 1e7) +
                                             head_ms(m.config, m.weights, bounded[1], 1) +
                                             embedding_ms(m.config, m.weights, bounded[1]),
              1e-6);
  // No host CPU among the devices: nothing to bound by.
  EXPECT_EQ(host_bounded({gpu})[0].bandwidth_gbps, 900);
}

}  // namespace
}  // namespace strata::plan

namespace strata::plan {
namespace {

// Issue 51: a device pays for each op's activations too, not only for the weights: the input and
// output of every product, the norms, RoPE, the attention op's q, k, v and output, SwiGLU and the
// residual adds, all f32 (activation_traffic.h). A batch shares the weights, not these. At the
// shape of bench/split_efficiency.py's model (dim 1024, 16 heads, 4 KV heads of 64, FFN 2816,
// 32000 tokens) they are 2.8 MB a token: 2.8 ms a row on a 1 GB/s device.
TEST(CostModel, ActivationBytesAtTheBenchmarkModelsShape) {
  const auto m = test::synthetic_model(16, 1024, 2816, 16, 4, 32000);
  const auto& c = m.config;
  const auto& l = m.weights.layers[0];
  // Attention: norm 2 x 1024; Q 1024 + 1024, K and V 1024 + 256 each; RoPE 2 x (1024 + 256);
  // attention q 1024, k and v 2 x 256 in, out 1024; O 1024 + 1024; residual 3 x 1024.
  EXPECT_EQ(attention_activation_bytes(c, l, whole_layer(c)),
            4u * (2048 + 2048 + 2 * 1280 + 2 * 1280 + 2560 + 2048 + 3072));  // 67584
  // FFN: norm 2 x 1024; gate and up 1024 + 2816 each; SwiGLU 3 x 2816; down 2816 + 1024; residual.
  EXPECT_EQ(ffn_activation_bytes(c, l, whole_layer(c)), 4u * (2048 + 2 * 3840 + 3 * 2816 + 3840 + 3072));  // 100352
  // Head: the row's norm (x, weights, out) 3 x 1024, the product 1024 in and 32000 logits out.
  EXPECT_EQ(head_activation_bytes(c, c.n_vocab), 4u * (3 * 1024 + 1024 + 32000));  // 144384
  EXPECT_EQ(head_activation_bytes(c, 16000), 4u * (3 * 1024 + 1024 + 16000));  // a tensor group's half
  EXPECT_EQ(embedding_activation_bytes(c), 4096u);
  // One block at 16 rows on a 1 GB/s device: its weights once, 16 rows of 167936 B of activations.
  const auto d = test::device("a", uint64_t{4} << 30, /*bw*/ 1, /*tflops*/ 80, /*link*/ 25, /*latency*/ 10);
  EXPECT_NEAR(16 * block_ms(c, l, whole_layer(c), true, d, 16), (static_cast<double>(l.n_bytes()) + 16 * 167936.0) / 1e6,
              1e-9);
  // Optional ops add their traffic: Q/K/V biases (in place: read and write), a post-attention
  // norm, a residual scale.
  model::ModelConfig scaled = c;
  scaled.residual_scale = 0.5f;
  model::LayerWeights biased = l;
  biased.bq = test::f32_view("bq", 1024, 1);
  biased.post_attn_norm = test::f32_view("post_attn_norm", 1024, 1);
  EXPECT_EQ(attention_activation_bytes(scaled, biased, whole_layer(c)),
            67584u + 4u * (2 * (1024 + 2 * 256) + 2 * 1024 + 2 * 1024));
  // A tensor-split shard with no heads writes a zero update and adds it.
  const LayerShard none{0, 0, 0, 2816, 0, 0};
  EXPECT_EQ(attention_activation_bytes(c, l, none), 4u * (1024 + 3 * 1024));
  // A routed expert of 512 units, per token: rows gathered 2 x 1024, gate and up 2 x (1024 + 512),
  // activation 3 x 512, down 512 + 1024, weighted add 3 x 1024.
  model::ModelConfig moe = c;
  moe.n_ff_exp = 512;
  EXPECT_EQ(expert_activation_bytes(moe, model::LayerWeights{}), 4u * (2048 + 3072 + 1536 + 1536 + 3072));
}

// A decode round by hand: the benchmark model's shape (F32 here) on one 1 GB/s device, 8
// sequences in one micro-batch of 8 rows: the weights once, then per row the activations, the new
// K and V rows (2 x 256 F16 per block), the embedding row and its f32 copy, and the logits' copy
// to the host over the 25 GB/s link with its 10 us.
TEST(CostModel, DecodeRoundChargesEveryRowsActivations) {
  const auto m = test::synthetic_model(16, 1024, 2816, 16, 4, 32000);
  const auto& w = m.weights;
  const std::vector<DeviceInfo> devices = {
      test::device("a", uint64_t{8} << 30, /*bw*/ 1, /*tflops*/ 80, /*link*/ 25, /*latency*/ 10)};
  Placement p = one_device("a", 16);
  p.n_seq = 8;
  auto c = estimate_cost(p, m.config, w, devices);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->decode_micro_batches, 1);
  EXPECT_EQ(c->decode_rows_per_micro_batch, 8);
  const double weights = 16.0 * static_cast<double>(w.layers[0].n_bytes()) +
                         static_cast<double>(w.output_norm.n_bytes + w.output.n_bytes);
  const double embedding_row = static_cast<double>(w.token_embd.n_bytes) / 32000;
  const double per_row = 16 * (167936.0 + 2 * 256 * 2) + 144384.0 + embedding_row + 4096;
  const double logits = 128000 / 25e6 + 0.010;
  EXPECT_NEAR(c->decode_round_ms, weights / 1e6 + 8 * (per_row / 1e6 + logits), 1e-9);
  EXPECT_NEAR(c->decode_tokens_per_s, 8000 / c->decode_round_ms, 1e-9);
  // One sequence: the same with one row.
  p.n_seq = 1;
  auto one = estimate_cost(p, m.config, w, devices);
  ASSERT_TRUE(one.ok());
  EXPECT_NEAR(one->decode_round_ms, weights / 1e6 + per_row / 1e6 + logits, 1e-9);
}

}  // namespace
}  // namespace strata::plan
