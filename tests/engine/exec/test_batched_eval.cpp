// tests/engine/exec/test_batched_eval.cpp — one Pipeline::eval of several sequences stacks their
// tokens into one micro-batch (one matrix product per weight for all of them) and still gives
// each sequence what it gets alone:
// - the trace shows one Compute pass per layer carrying every sequence's token (n_tokens = 4 on
//   one device), so the weights are read once per step, not once per sequence;
// - logits per sequence equal the single-sequence run at every step, the batched run fed each
//   sequence's own single-run tokens (teacher-forced), and its argmax the single run's wherever
//   that run's top two logits are further apart than the tolerance allows on both sides:
//   within 1e-3 relative (max|a-b| / max|b|) with F32 weights, where the 4 prompts stacked (16+
//   rows) take the 4-token kernel and each alone the one-token kernel, which sum in another order
//   (float32 rounding carried through the KV cache: measured ~1e-4 after 8 steps; decode steps of
//   fewer than 16 rows are bit for bit the same, see kF32Dot4MinTokens); within 5e-2 with
//   quantized weights, where a batch and a single token take different kernels (packed tiles,
//   4-token dots, one-token dots) that sum in another order, and the activations are re-quantized
//   to int8 before every product, so one ulp can flip a rounding that later layers carry on:
//   measured up to 3.9e-2 on these random models (AVX-512 VNNI, 2 threads). Handing a sequence
//   another's rows or KV cache is an error of order 1 (0.9-1.6 measured when two runs' tokens
//   part), far outside that;
// - the same over a layer split on two simulated devices and a tensor-parallel pair, where a step
//   is spread over one micro-batch per stage.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/backend/device.h"
#include "engine/exec/pipeline.h"
#include "engine/exec/session.h"
#include "engine/model/model.h"
#include "engine/model/random_model.h"
#include "engine/trace/recorder.h"
#include "device_set.h"
#include "test_support.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

fs::path random_model(const std::string& type) {
  const fs::path out = test::temp_dir("batched") / ("random6-" + type + ".gguf");
  if (fs::exists(out)) return out;
  auto vocab = gguf::GgufFile::open(test::shared_model("stories260K.gguf"));
  EXPECT_TRUE(vocab.ok());
  model::RandomModelSpec spec;
  spec.n_embd = 256;
  spec.n_layers = 6;
  spec.n_heads = 4;
  spec.n_kv_heads = 2;
  spec.n_ff = 512;
  spec.n_ctx = 256;
  spec.type = type;
  spec.stddev = 0.08f;  // large enough that greedy choices are not near-ties
  spec.n_threads = 2;
  EXPECT_TRUE(model::write_random_model(spec, *vocab, out).ok());
  return out;
}

const char* kPrompts[] = {"Once upon a time", "The cat sat on the mat and looked", "Lily", "A big red ball rolled"};
constexpr int kSeqs = 4;
constexpr int kSteps = 8;

struct Trajectory {
  std::vector<int32_t> tokens;               // greedy tokens, kSteps of them
  std::vector<std::vector<float>> logits;    // after the prompt and after every decode step
};

int32_t argmax(const std::vector<float>& l) {
  return static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
}

// All sequences through one pipeline: the prompts in one eval, then kSteps decode steps with
// every sequence's token in one eval. Sequence i is fed forced[i][step] (its single run's
// tokens); its own argmax is recorded.
std::vector<Trajectory> run_together(const model::Model& m, exec::Pipeline& p,
                                     const std::vector<std::vector<int32_t>>& forced) {
  const int64_t nv = m.config().n_vocab;
  std::vector<Trajectory> out(kSeqs);
  std::vector<std::vector<int32_t>> prompts(kSeqs);
  std::vector<std::vector<float>> logits(kSeqs, std::vector<float>(static_cast<size_t>(nv)));
  std::vector<exec::Pipeline::Request> reqs(kSeqs);
  for (int i = 0; i < kSeqs; ++i) {
    prompts[i] = m.tokenizer().encode(kPrompts[i], true, true);
    reqs[i] = {i, prompts[i], logits[i].data()};
  }
  Status s = p.eval(reqs);
  EXPECT_TRUE(s.ok()) << s.error().to_string();
  std::vector<int32_t> next(kSeqs);
  for (int step = 0; step < kSteps; ++step) {
    for (int i = 0; i < kSeqs; ++i) {
      out[i].logits.push_back(logits[i]);
      out[i].tokens.push_back(argmax(logits[i]));
      next[i] = forced[static_cast<size_t>(i)][static_cast<size_t>(step)];
      reqs[i] = {i, std::span<const int32_t>(&next[i], 1), logits[i].data()};
    }
    s = p.eval(reqs);
    EXPECT_TRUE(s.ok()) << s.error().to_string();
  }
  return out;
}

// One sequence alone on a fresh single-CPU pipeline.
Trajectory run_alone(const model::Model& m, int i) {
  const int64_t nv = m.config().n_vocab;
  test::DeviceSet devices = test::make_device_set("cpu");
  auto p = exec::Pipeline::create(m, devices.list(), exec::single_device_placement(m.config(), "cpu", 128, 1, 64));
  EXPECT_TRUE(p.ok());
  Trajectory t;
  std::vector<float> logits(static_cast<size_t>(nv));
  std::vector<int32_t> prompt = m.tokenizer().encode(kPrompts[i], true, true);
  exec::Pipeline::Request r{0, prompt, logits.data()};
  EXPECT_TRUE((*p)->eval(std::span<const exec::Pipeline::Request>(&r, 1)).ok());
  int32_t next = 0;
  for (int step = 0; step < kSteps; ++step) {
    t.logits.push_back(logits);
    next = argmax(logits);
    t.tokens.push_back(next);
    r = {0, std::span<const int32_t>(&next, 1), logits.data()};
    EXPECT_TRUE((*p)->eval(std::span<const exec::Pipeline::Request>(&r, 1)).ok());
  }
  return t;
}

std::vector<Trajectory> run_each_alone(const model::Model& m) {
  std::vector<Trajectory> alone;
  for (int i = 0; i < kSeqs; ++i) alone.push_back(run_alone(m, i));
  return alone;
}

std::vector<std::vector<int32_t>> tokens_of(const std::vector<Trajectory>& runs) {
  std::vector<std::vector<int32_t>> t;
  for (const Trajectory& r : runs) t.push_back(r.tokens);
  return t;
}

void expect_same(const std::vector<Trajectory>& together, const std::vector<Trajectory>& alone, double tolerance) {
  int compared = 0;
  for (int i = 0; i < kSeqs; ++i) {
    const Trajectory& a = alone[static_cast<size_t>(i)];
    const Trajectory& t = together[static_cast<size_t>(i)];
    ASSERT_EQ(t.logits.size(), a.logits.size());
    for (size_t k = 0; k < a.logits.size(); ++k) {
      EXPECT_LE(test::relative_error(t.logits[k], a.logits[k]), tolerance) << kPrompts[i] << " step " << k;
      // A near tie: either token is within the tolerance.
      if (test::top2_margin(a.logits[k]) <= 2 * tolerance * test::max_abs(a.logits[k])) continue;
      ++compared;
      EXPECT_EQ(t.tokens[k], a.tokens[k]) << kPrompts[i] << " step " << k;
    }
  }
  // The token check is not empty: at least a quarter of the 32 steps are not near ties (10-15
  // were on the quantized random models at 5e-2, AVX-512 VNNI; F32's tolerance leaves nearly all).
  EXPECT_GE(compared, kSeqs * kSteps / 4);
}

plan::Placement cpu_placement(const model::ModelConfig& c) {
  return exec::single_device_placement(c, "cpu", 128, kSeqs, 64);
}

TEST(BatchedEval, OneComputePassPerLayerCarriesEverySequence) {
  ASSERT_TRUE(test::have(test::shared_model("stories260K.gguf")));
  auto m = model::Model::load(test::shared_model("stories260K.gguf"));
  ASSERT_TRUE(m.ok());
  test::DeviceSet devices = test::make_device_set("cpu");
  trace::Recorder rec;
  auto p = exec::Pipeline::create(**m, devices.list(), cpu_placement((*m)->config()), &rec);
  ASSERT_TRUE(p.ok());
  const int64_t nv = (*m)->config().n_vocab;
  std::vector<std::vector<float>> logits(kSeqs, std::vector<float>(static_cast<size_t>(nv)));
  std::vector<int32_t> tok(kSeqs, 1);
  std::vector<exec::Pipeline::Request> reqs;
  for (int i = 0; i < kSeqs; ++i) reqs.push_back({i, std::span<const int32_t>(&tok[i], 1), logits[i].data()});
  ASSERT_TRUE((*p)->eval(reqs).ok());
  int compute = 0, head = 0;
  for (const trace::Event& e : rec.snapshot()) {
    if (e.kind == trace::EventKind::Compute && e.layer == 0) {
      ++compute;
      EXPECT_EQ(e.n_tokens, kSeqs);
    }
    if (e.kind == trace::EventKind::Head) {
      ++head;
      EXPECT_EQ(e.n_tokens, kSeqs);  // the output matrix once, for the 4 rows that want logits
    }
  }
  EXPECT_EQ(compute, 1);
  EXPECT_EQ(head, 1);
  // Each sequence moved by one position.
  for (int i = 0; i < kSeqs; ++i) EXPECT_EQ((*p)->position(i), 1);
}

TEST(BatchedEval, F32EqualsEachSequenceAlone) {
  ASSERT_TRUE(test::have(test::shared_model("stories260K.gguf")));
  auto m = model::Model::load(test::shared_model("stories260K.gguf"));
  ASSERT_TRUE(m.ok());
  test::DeviceSet devices = test::make_device_set("cpu");
  auto p = exec::Pipeline::create(**m, devices.list(), cpu_placement((*m)->config()));
  ASSERT_TRUE(p.ok());
  const std::vector<Trajectory> alone = run_each_alone(**m);
  expect_same(run_together(**m, **p, tokens_of(alone)), alone, 1e-3);
}

class BatchedQuantized : public ::testing::TestWithParam<std::string> {};

TEST_P(BatchedQuantized, EqualsEachSequenceAlone) {
  auto m = model::Model::load(random_model(GetParam()));
  ASSERT_TRUE(m.ok());
  test::DeviceSet devices = test::make_device_set("cpu");
  auto p = exec::Pipeline::create(**m, devices.list(), cpu_placement((*m)->config()));
  ASSERT_TRUE(p.ok());
  const std::vector<Trajectory> alone = run_each_alone(**m);
  expect_same(run_together(**m, **p, tokens_of(alone)), alone, 5e-2);
}

INSTANTIATE_TEST_SUITE_P(Types, BatchedQuantized, ::testing::Values("q8_0", "q4_k_m", "q4_0"));

void put(plan::Placement& p, int64_t first, int64_t end, std::vector<std::string> devices, std::vector<double> ratio) {
  for (int64_t l = first; l < end; ++l) {
    p.layers[static_cast<size_t>(l)].target.devices = devices;
    p.layers[static_cast<size_t>(l)].target.ratio = ratio;
  }
}

TEST(BatchedEval, LayerSplitAndTensorGroupEqualEachSequenceAlone) {
  auto m = model::Model::load(random_model("q8_0"));
  ASSERT_TRUE(m.ok());
  const model::ModelConfig& c = (*m)->config();
  test::DeviceSet devices = test::make_device_set("cpu,sim:gpu0:1GiB,sim:gpu1:1GiB");
  plan::Placement p = cpu_placement(c);
  p.embedding.devices = {"gpu0"};
  put(p, 0, 2, {"gpu0"}, {});
  put(p, 2, 4, {"gpu0", "gpu1"}, {1, 1});
  put(p, 4, c.n_layers, {"gpu1"}, {});
  p.head.devices = {"gpu1"};
  auto pipeline = exec::Pipeline::create(**m, devices.list(), p);
  ASSERT_TRUE(pipeline.ok()) << pipeline.error().to_string();
  // Tensor-parallel sums and per-stage batches: the quantized tolerance of the header.
  const std::vector<Trajectory> alone = run_each_alone(**m);
  expect_same(run_together(**m, **pipeline, tokens_of(alone)), alone, 5e-2);
}

}  // namespace
}  // namespace strata
