// tests/engine/plan/test_memory_estimate.cpp — per-device bytes on stories260K checked against
// numbers computed by hand from its shapes (F32; n_embd 64, 8 heads / 4 KV heads of 8, n_ff 172,
// 5 blocks, 512 tokens), for a layer split, a tensor split, KV on the CPU and a tied head.
#include <gtest/gtest.h>

#include "engine/plan/memory_estimate.h"
#include "kernels/cpu/isa.h"
#include "plan_test_models.h"

namespace strata::plan {
namespace {

// One block: attn_norm 256 + wq 16384 + wk 8192 + wv 8192 + wo 16384 + ffn_norm 256
//            + gate/up/down 3 x 44032 = 181760 bytes.
constexpr uint64_t kBlock = 181760;
constexpr uint64_t kEmbd = 512 * 64 * 4;        // token_embd 131072
constexpr uint64_t kHead = 256 + 512 * 64 * 4;  // output_norm + output 131328
// KV of a whole block at ctx 128, 1 sequence: 2 x 128 x 32 floats x 4 B.
constexpr uint64_t kKvBlock = 2 * 128 * 32 * 4;  // 32768

class StoriesMemory : public ::testing::Test {
 protected:
  // The matmul scratch a device reserves depends on the kernel paths of the ISA
  // (kernels::matmul_scratch_bound: tests/kernels/test_matmul.cpp checks it against real calls).
  // The scalar paths make the byte counts below the same on every machine: for batches of 8 they
  // are the quantized activations of the widest row, at most Q8_1's 36 B per 32 columns (Q4_1 /
  // Q5_1 weights; float weights use f32 activations in place).
  void SetUp() override {
    kernels::force_isa(kernels::Isa::Scalar);
    model_ = test::load_stories();
    if (!model_) GTEST_FAIL() << "stories260K.gguf not in " << test::shared_models();
    devices_ = {test::device("gpu0", 1 << 20, 100, 10, 10, 10, 1000, 2),
                test::device("gpu1", 1 << 20, 100, 10, 10, 10, 2000, 2),
                test::device("cpu", 8 << 20, 20, 1, 0, 0, 500, 2)};
  }
  void TearDown() override { kernels::force_isa(kernels::best_isa()); }
  Placement base() const {
    Placement p;
    p.n_ctx = 128;
    p.kv_type = kernels::DType::F32;  // the byte counts here are for an f32 cache
    p.n_seq = 1;
    p.max_batch = 8;
    p.layers.resize(5);
    return p;
  }
  std::unique_ptr<model::Model> model_;
  std::vector<DeviceInfo> devices_;
};

TEST_F(StoriesMemory, WeightsMatchTheFile) {
  for (const auto& l : model_->weights().layers) EXPECT_EQ(l.n_bytes(), kBlock);
  EXPECT_EQ(model_->weights().token_embd.n_bytes, kEmbd);
  EXPECT_EQ(model_->weights().output.n_bytes + model_->weights().output_norm.n_bytes, kHead);
  EXPECT_EQ(model_->weights().rope_freqs.n_bytes, 0u);
}

TEST_F(StoriesMemory, LayerSplitOverTwoDevices) {
  Placement p = base();
  p.embedding.devices = {"gpu0"};
  p.head.devices = {"gpu1"};
  for (int i = 0; i < 5; ++i) p.layers[i].target.devices = {i < 3 ? "gpu0" : "gpu1"};
  auto est = estimate_memory(p, model_->config(), model_->weights(), devices_);
  ASSERT_TRUE(est.ok()) << est.error().to_string();
  ASSERT_EQ(est->devices.size(), 2u);
  const DeviceMemory& g0 = est->devices[0];
  const DeviceMemory& g1 = est->devices[1];
  EXPECT_EQ(g0.device, "gpu0");
  EXPECT_EQ(g0.weight_bytes, kEmbd + 3 * kBlock);  // 676352
  EXPECT_EQ(g0.kv_bytes, 3 * kKvBlock);            // 98304
  // Scratch, batch 8, ctx 128, 2 threads, whole block: floats hidden 512 + norm 512 + q 512 + k 256
  // + v 256 + attn_out 512 + proj 512 + gate 1376 + up 1376 + scores 256 = 6080 -> 24320 B, plus
  // matmul scratch: the widest row (172 FFN units) holds 5 Q8_1 blocks of 36 B, x 8 tokens = 1440 B.
  EXPECT_EQ(g0.scratch_bytes, 25760u);
  EXPECT_EQ(g0.overhead_bytes, 1000u);
  EXPECT_EQ(g0.total_bytes, 801416u);
  EXPECT_EQ(g0.n_blocks, 3);
  EXPECT_TRUE(g0.has_embedding);
  EXPECT_FALSE(g0.has_head);

  EXPECT_EQ(g1.weight_bytes, 2 * kBlock + kHead);  // 494848
  EXPECT_EQ(g1.kv_bytes, 2 * kKvBlock);
  // + logits [8][512]: plan::head_rows, at least 8 rows (a speculative step's) for one sequence.
  EXPECT_EQ(g1.scratch_bytes, 25760u + 8 * 512 * 4);
  EXPECT_EQ(g1.total_bytes, 604528u);
  EXPECT_TRUE(g1.fits);
  EXPECT_EQ(g1.capacity_bytes, 1u << 20);
  EXPECT_EQ(est->total_bytes(), 801416u + 604528u);
  EXPECT_TRUE(est->fits());
}

TEST_F(StoriesMemory, TensorSplitOverTwoDevices) {
  Placement p = base();
  p.embedding.devices = {"gpu0"};
  p.head.devices = {"gpu1"};
  for (auto& l : p.layers) l.target = Target{{"gpu0", "gpu1"}, {1, 1}};
  auto est = estimate_memory(p, model_->config(), model_->weights(), devices_);
  ASSERT_TRUE(est.ok()) << est.error().to_string();
  ASSERT_EQ(est->devices.size(), 2u);
  // Each member: 2 of 4 KV heads (32 query rows, 16 KV rows) and 86 of 172 FFN units:
  // norms 512 + wq 8192 + wk 4096 + wv 4096 + wo 8192 + gate/up/down 3 x 22016 = 91136 B.
  constexpr uint64_t kShard = 91136;
  static_assert(2 * kShard == kBlock + 512, "norms are replicated");
  constexpr uint64_t kKvShard = 2 * 128 * 16 * 4;  // 16384
  // Scratch of a half shard: floats 512 + 512 + q 256 + k 128 + v 128 + attn_out 256 + proj 512
  // + gate 688 + up 688 + scores 256 = 3936 -> 15744 B, matmul scratch: 86 columns hold 2 Q8_1
  // blocks of 36 B, x 8 tokens = 576 B.
  constexpr uint64_t kScratch = 16320;
  // The head device is a member of the group: each member holds the output norm (256 B) and its
  // half of the output matrix (256 of 512 rows of 64 f32: 65536 B), and a logits scratch.
  constexpr uint64_t kHeadHalf = 256 + 256 * 64 * 4;
  const DeviceMemory& g0 = est->devices[0];
  const DeviceMemory& g1 = est->devices[1];
  EXPECT_EQ(g0.weight_bytes, 5 * kShard + kEmbd + kHeadHalf);
  EXPECT_EQ(g1.weight_bytes, 5 * kShard + kHeadHalf);
  EXPECT_EQ(g0.kv_bytes, 5 * kKvShard);
  EXPECT_EQ(g1.kv_bytes, 5 * kKvShard);
  EXPECT_EQ(g0.scratch_bytes, kScratch + 16384);  // + logits [8][512]
  EXPECT_EQ(g1.scratch_bytes, kScratch + 16384);
  EXPECT_TRUE(g0.has_head && g1.has_head);
  EXPECT_EQ(g0.total_bytes, 688168u - 2176 + kHeadHalf + 16384);
  EXPECT_EQ(g1.total_bytes, 691472u - 2176 + 14336 - kHead + kHeadHalf);
  EXPECT_EQ(g0.n_blocks, 5);
  EXPECT_EQ(g1.n_kv_blocks, 5);
}

TEST_F(StoriesMemory, UnevenTensorSplitAndSequences) {
  Placement p = base();
  p.n_seq = 3;
  p.embedding.devices = {"gpu0"};
  p.head.devices = {"gpu0"};
  for (auto& l : p.layers) l.target = Target{{"gpu0", "gpu1"}, {3, 1}};
  auto est = estimate_memory(p, model_->config(), model_->weights(), devices_);
  ASSERT_TRUE(est.ok()) << est.error().to_string();
  // 4 KV heads 3:1 -> 3 and 1; 172 FFN units 3:1 -> 129 and 43.
  // gpu1 shard: norms 512 + wq 8x2x... = 16 rows x 256 = 4096, wk/wv 8 rows x 256 = 2048 each,
  // wo 64 x 16 x 4 = 4096, gate/up/down 3 x 43 x 256 = 33024 -> 45824 B.
  const DeviceMemory* g1 = est->find("gpu1");
  ASSERT_NE(g1, nullptr);
  // The head shared 3:1 too: 384 and 128 of the 512 output rows (256 B each), the norm on both.
  EXPECT_EQ(g1->weight_bytes, 5u * 45824u + 256 + 128 * 256);
  EXPECT_EQ(est->find("gpu0")->weight_bytes, 5u * (kBlock + 512 - 45824) + kEmbd + 256 + 384 * 256);
  EXPECT_EQ(g1->kv_bytes, 5u * 2 * 3 * 128 * 8 * 4);  // 1 KV head of 8, 3 sequences
  EXPECT_TRUE(g1->has_head);
  EXPECT_TRUE(est->find("gpu0")->has_head);
}

TEST_F(StoriesMemory, KvOnCpu) {
  Placement p = base();
  p.embedding.devices = {"gpu0"};
  p.head.devices = {"gpu0"};
  for (auto& l : p.layers) {
    l.target.devices = {"gpu0"};
    l.kv_device = "cpu";
  }
  auto est = estimate_memory(p, model_->config(), model_->weights(), devices_);
  ASSERT_TRUE(est.ok()) << est.error().to_string();
  ASSERT_EQ(est->devices.size(), 2u);
  const DeviceMemory* g0 = est->find("gpu0");
  const DeviceMemory* cpu = est->find("cpu");
  EXPECT_EQ(g0->kv_bytes, 0u);
  EXPECT_EQ(g0->weight_bytes, kEmbd + 5 * kBlock + kHead);
  EXPECT_EQ(cpu->kv_bytes, 5 * kKvBlock);
  EXPECT_EQ(cpu->weight_bytes, 0u);
  EXPECT_EQ(cpu->n_kv_blocks, 5);
  // Holds only KV caches and computes nothing (attention runs on gpu0): no activation buffers.
  EXPECT_EQ(cpu->scratch_bytes, 0u);
  EXPECT_EQ(cpu->overhead_bytes, 500u);
}

TEST_F(StoriesMemory, EmbeddingOnlyDeviceAndDoesNotFit) {
  Placement p = base();
  p.embedding.devices = {"cpu"};
  p.head.devices = {"gpu0"};
  for (auto& l : p.layers) l.target.devices = {"gpu0"};
  auto est = estimate_memory(p, model_->config(), model_->weights(), devices_);
  ASSERT_TRUE(est.ok()) << est.error().to_string();
  // Device order follows the device list: gpu0 then cpu.
  ASSERT_EQ(est->devices.size(), 2u);
  EXPECT_EQ(est->devices[0].device, "gpu0");
  EXPECT_EQ(est->devices[1].device, "cpu");
  EXPECT_EQ(est->devices[1].weight_bytes, kEmbd);
  // hidden + norm [8][64] floats = 4096 B, matmul scratch 2 Q8_1 blocks x 8 tokens = 576 B.
  EXPECT_EQ(est->devices[1].scratch_bytes, 4672u);
  const DeviceMemory& g0 = est->devices[0];
  // 5 blocks + head + KV + scratch (with logits [8][512]) + overhead
  // = 908800 + 131328 + 163840 + 42144 + 1000
  EXPECT_EQ(g0.total_bytes, 1247112u);
  EXPECT_FALSE(g0.fits);
  EXPECT_EQ(g0.shortfall_bytes, 1247112u - (1u << 20));
  EXPECT_FALSE(est->fits());

  const Status s = check_fits(*est);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Code::OutOfMemory);
  EXPECT_EQ(s.error().message,
            "device 'gpu0': needs 1.2 MiB (weights 1015.8 KiB, KV 160.0 KiB, scratch 41.2 KiB, overhead 1000 B), "
            "has 1.0 MiB: short 193.9 KiB");

  const std::string table = format_memory_table(*est);
  EXPECT_NE(table.find("memory at ctx 128 x 1 seq, batch 8"), std::string::npos) << table;
  EXPECT_NE(table.find("✗ short 193.9 KiB"), std::string::npos) << table;
  EXPECT_NE(table.find("✓"), std::string::npos) << table;
  EXPECT_NE(table.find("device"), std::string::npos);
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 4);  // title, header, 2 devices

  const auto j = to_json(*est);
  EXPECT_EQ(j["devices"][0]["total_bytes"], 1247112u);
  EXPECT_EQ(j["fits"], false);
}

TEST_F(StoriesMemory, CheckFitsWithMargin) {
  Placement p = base();
  p.embedding.devices = {"gpu0"};
  p.head.devices = {"gpu1"};
  for (int i = 0; i < 5; ++i) p.layers[i].target.devices = {i < 3 ? "gpu0" : "gpu1"};
  auto est = estimate_memory(p, model_->config(), model_->weights(), devices_);
  ASSERT_TRUE(est.ok());
  EXPECT_TRUE(check_fits(*est, 0.05).ok());  // 805480 <= 996147
  const Status s = check_fits(*est, 0.25);   // 805480 > 786432
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("device 'gpu0'"), std::string::npos);
  EXPECT_NE(s.error().message.find("less a 25% margin"), std::string::npos) << s.error().message;
  EXPECT_EQ(s.error().message.find("gpu1"), std::string::npos);
}

TEST(TiedHead, CountedOnceOnTheEmbeddingDeviceTwiceElsewhere) {
  auto model = test::load_stories("stories260K.tied.gguf");
  if (!model) GTEST_FAIL() << "stories260K.tied.gguf missing";
  ASSERT_TRUE(model->config().tied_output);
  std::vector<DeviceInfo> devices = {test::device("a", 4 << 20), test::device("b", 4 << 20)};
  Placement p;
  p.n_ctx = 16;
  p.max_batch = 4;
  p.layers.resize(5);
  for (auto& l : p.layers) l.target.devices = {"a"};
  p.embedding.devices = {"a"};
  p.head.devices = {"a"};
  auto same = estimate_memory(p, model->config(), model->weights(), devices);
  ASSERT_TRUE(same.ok()) << same.error().to_string();
  EXPECT_EQ(same->devices[0].weight_bytes, kEmbd + 5 * kBlock + 256);
  p.head.devices = {"b"};
  auto apart = estimate_memory(p, model->config(), model->weights(), devices);
  ASSERT_TRUE(apart.ok());
  EXPECT_EQ(apart->find("a")->weight_bytes, kEmbd + 5 * kBlock);
  EXPECT_EQ(apart->find("b")->weight_bytes, 256 + kEmbd);
}

TEST(FormatBytes, Units) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(3u << 20), "3.0 MiB");
  EXPECT_EQ(format_bytes(uint64_t{24} << 30), "24.0 GiB");
  EXPECT_EQ(format_bytes(uint64_t{1} << 40), "1024.0 GiB");
}

}  // namespace
}  // namespace strata::plan
