// tests/engine/exec/test_windowed_kv.cpp — sliding-window blocks keep a ring of KV rows
// (plan::kv_cells) instead of one row per position. On a random gemma3 model (window 16, two of
// every three blocks local), context 1024, batches of 8: the ring has 128 rows, so 300 positions
// wrap it twice. Checked against the same model with Placement::swa_full (one row per position):
//   - the bytes: the estimate and the device's allocation both count 128 rows per local block;
//   - the logits of a long prompt and of the greedy steps after it, bit for bit;
//   - cutting a sequence back: kept as far as the ring holds (kv_rewind), else to 0, and the
//     logits after either equal the full cache's;
//   - copy_sequence of a ring, and moving the blocks (with their rings) to another device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "device_set.h"
#include "engine/exec/pipeline.h"
#include "engine/exec/session.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model.h"
#include "engine/model/random_model.h"
#include "engine/plan/memory_estimate.h"
#include "engine/plan/tensor_split.h"
#include "test_support.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using plan::Placement;

constexpr int64_t kCtx = 1024, kBatch = 8, kWindow = 16, kRing = 128;  // 16 + 64, rounded up to 64
constexpr int64_t kLayers = 6;

fs::path windowed_model() {
  const fs::path out = test::temp_dir("windowed_kv") / "gemma3-window16.gguf";
  if (fs::exists(out)) return out;
  auto vocab = gguf::GgufFile::open(test::shared_model("stories260K.gguf"));
  EXPECT_TRUE(vocab.ok());
  model::RandomModelSpec spec;
  spec.arch = model::Arch::Gemma3;
  spec.n_embd = 128;
  spec.n_layers = kLayers;
  spec.n_heads = 4;
  spec.n_kv_heads = 2;
  spec.n_ff = 256;
  spec.n_ctx = kCtx;
  spec.sliding_window = kWindow;
  spec.swa_pattern = 3;  // blocks 2 and 5 global
  spec.type = "q8_0";
  spec.stddev = 0.08f;
  EXPECT_TRUE(model::write_random_model(spec, *vocab, out).ok());
  return out;
}

using Devices = test::DeviceSet;

Placement placement(const model::ModelConfig& c, bool swa_full) {
  Placement p = exec::single_device_placement(c, "cpu", kCtx, 2, kBatch);
  p.swa_full = swa_full;
  return p;
}

std::vector<int32_t> random_tokens(size_t n, int32_t n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> pick(3, n_vocab - 1);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = pick(rng);
  return t;
}

int32_t argmax(const float* l, int64_t n) { return static_cast<int32_t>(std::max_element(l, l + n) - l); }

// One model on two CPU pipelines: `ring` with the windowed cache, `full` with swa_full. Each has
// a simulated device beside the CPU, for the re-placement test.
class WindowedKv : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = model::Model::load(windowed_model());
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    model_ = std::move(*m);
    for (int i = 0; i < 2; ++i) {
      devices_[i] = test::make_device_set("cpu,sim:gpu0:1GiB");
      auto p = exec::Pipeline::create(*model_, devices_[i].list(), placement(model_->config(), i == 1));
      ASSERT_TRUE(p.ok()) << p.error().to_string();
      pipelines_[i] = std::move(*p);
    }
  }
  exec::Pipeline& ring() { return *pipelines_[0]; }
  exec::Pipeline& full() { return *pipelines_[1]; }
  int64_t n_vocab() const { return model_->config().n_vocab; }

  // The same tokens into sequence seq of both pipelines; the last logits of each must be the same
  // bits. Returns the ring's argmax (the next greedy token).
  int32_t eval_both(int32_t seq, const std::vector<int32_t>& tokens, const std::string& what) {
    exec::Pipeline* ps[2] = {&ring(), &full()};
    std::vector<float> last[2];
    for (int i = 0; i < 2; ++i) {
      std::vector<float> logits(static_cast<size_t>(n_vocab()));
      exec::Pipeline::Request r;
      r.seq = seq;
      r.tokens = tokens;
      r.logits = logits.data();
      Status s = ps[i]->eval(std::span<const exec::Pipeline::Request>(&r, 1));
      EXPECT_TRUE(s.ok()) << what << ": " << s.error().to_string();
      if (!s.ok()) return -1;
      last[i] = std::move(logits);
    }
    size_t differ = 0;
    for (size_t i = 0; i < last[0].size(); ++i) differ += std::memcmp(&last[0][i], &last[1][i], sizeof(float)) != 0;
    EXPECT_EQ(differ, 0u) << what << ": " << differ << " logits differ between the ring and the full cache";
    EXPECT_EQ(ring().position(seq), full().position(seq)) << what;
    return argmax(last[0].data(), n_vocab());
  }
  // Greedy steps on both from `first`; every step's logits compared.
  void greedy_both(int32_t seq, int32_t first, int steps, const std::string& what) {
    int32_t next = first;
    for (int i = 0; i < steps; ++i) next = eval_both(seq, {next}, what + ", step " + std::to_string(i));
  }

  std::unique_ptr<model::Model> model_;
  Devices devices_[2];
  std::unique_ptr<exec::Pipeline> pipelines_[2];
};

TEST_F(WindowedKv, RowsAndBytesOfTheRing) {
  const model::ModelConfig& c = model_->config();
  for (int64_t l = 0; l < kLayers; ++l) {
    const bool global = l % 3 == 2;
    EXPECT_EQ(c.layer_attention(l).window, global ? 0 : kWindow) << "block " << l;
    EXPECT_EQ(plan::kv_cells(c, l, kCtx, kBatch, false), global ? kCtx : kRing) << "block " << l;
    EXPECT_EQ(plan::kv_cells(c, l, kCtx, kBatch, true), kCtx) << "block " << l;
    // One batch past the window, rounded up to 64: 16 + 200 -> 256; never more than the context.
    EXPECT_EQ(plan::kv_cells(c, l, kCtx, 200, false), global ? kCtx : 256) << "block " << l;
    EXPECT_EQ(plan::kv_cells(c, l, 100, kBatch, false), 100) << "block " << l;
  }
  EXPECT_EQ(ring().kv_rewind(), kRing - kWindow);
  EXPECT_EQ(full().kv_rewind(), INT64_MAX);
  // f16 K and V of 2 KV heads x 32: 128 B a row each. 2 sequences; 4 local blocks of 128 rows and
  // 2 global ones of 1024.
  const uint64_t row = 2 * 32 * 2;
  const uint64_t want_ring = 2 * 2 * row * (4 * kRing + 2 * kCtx), want_full = 2 * 2 * row * 6 * kCtx;
  std::vector<DeviceInfo> infos;
  for (backend::Device* d : devices_[0].list()) infos.push_back(d->info());
  for (int i = 0; i < 2; ++i) {
    auto est = plan::estimate_memory(placement(c, i == 1), c, model_->weights(), infos);
    ASSERT_TRUE(est.ok()) << est.error().to_string();
    uint64_t kv = 0;
    for (const auto& d : est->devices) kv += d.kv_bytes;
    EXPECT_EQ(kv, i == 0 ? want_ring : want_full) << (i == 0 ? "ring" : "swa_full") << " estimate";
    // What the CPU device allocated for KV caches: the same bytes.
    EXPECT_EQ(devices_[i].list()[0]->memory_use().kv, i == 0 ? want_ring : want_full)
        << (i == 0 ? "ring" : "swa_full") << " allocation";
  }
}

TEST_F(WindowedKv, LongPromptAndGreedyStepsGiveTheBitsOfAFullCache) {
  const std::vector<int32_t> prompt = random_tokens(300, static_cast<int32_t>(n_vocab()), 1);
  const int32_t first = eval_both(0, prompt, "300-token prompt");
  greedy_both(0, first, 60, "greedy after the prompt");
  EXPECT_EQ(ring().position(0), 360);
}

TEST_F(WindowedKv, CutsBackAsFarAsTheRingHoldsElseToZero) {
  const std::vector<int32_t> prompt = random_tokens(300, static_cast<int32_t>(n_vocab()), 2);
  eval_both(0, prompt, "prompt");
  // The ring holds positions [300 - 128, 300): the window before 300 - 112 = 188 and no earlier.
  EXPECT_EQ(ring().kept_prefix(0, 188), 188);
  EXPECT_EQ(ring().kept_prefix(0, 187), 0);
  EXPECT_EQ(full().kept_prefix(0, 187), 187);
  // Back 50 (a rejected speculative draft, an edited last turn): kept, and what follows is exact.
  EXPECT_EQ(ring().truncate(0, 250), 250);
  EXPECT_EQ(full().truncate(0, 250), 250);
  const int32_t next = eval_both(0, random_tokens(20, static_cast<int32_t>(n_vocab()), 3), "20 tokens after a cut to 250");
  greedy_both(0, next, 10, "greedy after the cut");
  // The sequence has been at 280: back to 100 is past what the ring holds, so nothing is kept.
  EXPECT_EQ(ring().truncate(0, 100), 0);
  EXPECT_EQ(ring().position(0), 0);
  EXPECT_EQ(full().truncate(0, 100), 100);
  // A session sharing 100 tokens with that history evaluates them again on the ring; the logits
  // equal the full cache's, which kept them.
  exec::Session on_ring(ring(), 1), on_full(full(), 1);
  ASSERT_TRUE(on_ring.eval(prompt).ok());
  ASSERT_TRUE(on_full.eval(prompt).ok());
  std::vector<int32_t> turn(prompt.begin(), prompt.begin() + 100);
  const std::vector<int32_t> more = random_tokens(30, static_cast<int32_t>(n_vocab()), 4);
  turn.insert(turn.end(), more.begin(), more.end());
  EXPECT_EQ(on_ring.keep_common_prefix(turn), 0);
  EXPECT_EQ(on_full.keep_common_prefix(turn), 100);
  auto a = on_ring.eval(std::span<const int32_t>(turn).subspan(static_cast<size_t>(on_ring.position())));
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  std::vector<float> ring_logits(*a, *a + n_vocab());
  auto b = on_full.eval(std::span<const int32_t>(turn).subspan(static_cast<size_t>(on_full.position())));
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  EXPECT_EQ(std::memcmp(ring_logits.data(), *b, static_cast<size_t>(n_vocab()) * sizeof(float)), 0)
      << "a turn re-read from position 0 on the ring vs kept from 100 on the full cache";
  EXPECT_EQ(on_ring.position(), 130);
}

TEST_F(WindowedKv, CopiedSequenceCarriesItsRing) {
  const std::vector<int32_t> prompt = random_tokens(300, static_cast<int32_t>(n_vocab()), 5);
  eval_both(0, prompt, "prompt");
  for (exec::Pipeline* p : {&ring(), &full()}) {
    Status s = p->copy_sequence(0, 1, 290);
    ASSERT_TRUE(s.ok()) << s.error().to_string();
  }
  const int32_t next = eval_both(1, random_tokens(30, static_cast<int32_t>(n_vocab()), 6), "30 tokens after a copy of 290");
  greedy_both(1, next, 10, "greedy on the copy");
  // 150 lies before what sequence 0's rings hold: refused, and sequence 1 is left as it was.
  Status far = ring().copy_sequence(0, 1, 150);
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.error().code, Code::InvalidArgument);
  EXPECT_NE(far.error().message.find("sliding-window"), std::string::npos) << far.error().message;
  EXPECT_EQ(ring().position(1), 330);
  EXPECT_TRUE(full().copy_sequence(0, 1, 150).ok());
}

TEST_F(WindowedKv, MovedBlocksTakeTheirRingsAlong) {
  const std::vector<int32_t> prompt = random_tokens(300, static_cast<int32_t>(n_vocab()), 7);
  const int32_t next = eval_both(0, prompt, "prompt");
  for (int i = 0; i < 2; ++i) {
    Placement p = placement(model_->config(), i == 1);
    for (int64_t l = 1; l < kLayers; l += 2) p.layers[static_cast<size_t>(l)].target.devices = {"gpu0"};
    auto moved = pipelines_[i]->apply(p, exec::Pipeline::KvOnApply::Copy);
    ASSERT_TRUE(moved.ok()) << moved.error().to_string();
    EXPECT_EQ(*moved, 3);
  }
  greedy_both(0, next, 20, "greedy after blocks 1, 3, 5 moved to gpu0");
}

// Gemma 3 270M at context 32768 (issue 47): llama.cpp allocates 111 MiB of f16 KV, 3 global
// blocks of 32768 cells and 15 windowed ones of 1024 (window 512 + a batch of 512). The plan
// counts the same rows with batches of 512, 768 with batches of 256, and the full 576 MiB with
// swa_full.
TEST(WindowedKvRealModel, Gemma3At32kPlansTheKvLlamaCppAllocates) {
  const fs::path path = test::real_models() / "gemma-3-270m-q4_k_m.gguf";
  ASSERT_TRUE(test::have(path)) << path << ": setup (tools/fetch_models.sh) guarantees it";
  auto m = model::Model::load(path);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const model::ModelConfig& c = (*m)->config();
  ASSERT_EQ(c.n_layers, 18);
  ASSERT_EQ(c.sliding_window, 512);
  const uint64_t row = 2 * static_cast<uint64_t>(c.kv_dim()) * 2;  // f16 K and V of one position
  const std::vector<DeviceInfo> infos = {test::make_device_set("cpu").list()[0]->info()};
  auto kv_of = [&](int64_t max_batch, bool swa_full) -> uint64_t {
    Placement p = exec::single_device_placement(c, "cpu", 32768, 1, max_batch);
    p.swa_full = swa_full;
    auto est = plan::estimate_memory(p, c, (*m)->weights(), infos);
    EXPECT_TRUE(est.ok()) << est.error().to_string();
    return est.ok() ? est->devices[0].kv_bytes : 0;
  };
  const double mib = 1024.0 * 1024.0, llama_cpp = 111.0 * mib;
  const uint64_t at512 = kv_of(512, false), at256 = kv_of(256, false), full = kv_of(512, true);
  EXPECT_EQ(at512, row * (3 * 32768 + 15 * 1024));
  EXPECT_EQ(at256, row * (3 * 32768 + 15 * 768));
  EXPECT_EQ(full, row * 18 * 32768);
  EXPECT_NEAR(static_cast<double>(at512), llama_cpp, 0.10 * llama_cpp) << at512 / mib << " MiB";
  EXPECT_NEAR(static_cast<double>(at256), llama_cpp, 0.10 * llama_cpp) << at256 / mib << " MiB";
  EXPECT_DOUBLE_EQ(full / mib, 576.0);
}

}  // namespace
}  // namespace strata
