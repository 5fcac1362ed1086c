// tests/engine/backend/test_gpu_models.cpp — whole models on a CUDA device, through strata-engine
// as a user runs it: the stories260K golden text on cuda:0, a cuda:0 + cpu layer split that gives
// the CPU's text, and a random 16-layer Q4_K_M model whose greedy tokens and logits on cuda:0
// match the CPU's, a random mixture-of-experts model and a random Olmo 3 against the CPU. Labelled "gpu" in CTest (tools/gpu-check.sh runs them); every test skips,
// saying why, where there is no CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli_runner.h"
#include "engine/backend/registry/registry.h"
#include "test_support.h"

namespace strata {
namespace {

using test::CliRun;
using test::engine;
namespace fs = std::filesystem;

#define REQUIRE_CUDA()                                    \
  if (backend::find_backend("cuda")->device_count() == 0) \
  GTEST_SKIP() << "no CUDA device: " << backend::find_backend("cuda")->describe()

// Setup guarantees the shared models (tools/third_party.sh carries them to the GPU machine): a
// missing one is a failure, not a skip.
#define REQUIRE_SHARED(name) \
  ASSERT_TRUE(test::have(test::shared_model(name))) << "missing shared model " name

std::string stories() { return test::shared_model("stories260K.gguf").string(); }

nlohmann::json golden() {
  std::ifstream in(test::shared_model("stories260K.golden.json"));
  return nlohmann::json::parse(in);
}

std::vector<float> read_floats(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<float> v;
  float f;
  while (in.read(reinterpret_cast<char*>(&f), sizeof f)) v.push_back(f);
  return v;
}

struct LogitsComparison {
  double rel_l2 = INFINITY;       // ||cuda - cpu|| / ||cpu||
  double rms_diff = INFINITY;     // rms(cuda - cpu)
  double cpu_margin = 0;          // top-1 minus top-2 logit on the CPU
  size_t cpu_argmax = 0, cuda_argmax = 0;
};

LogitsComparison compare_logits(const std::vector<float>& cpu, const std::vector<float>& cuda) {
  LogitsComparison c;
  if (cpu.empty() || cpu.size() != cuda.size()) return c;
  double diff = 0, norm = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (!std::isfinite(cuda[i])) return c;
    diff += (static_cast<double>(cuda[i]) - cpu[i]) * (static_cast<double>(cuda[i]) - cpu[i]);
    norm += static_cast<double>(cpu[i]) * cpu[i];
  }
  c.rel_l2 = std::sqrt(diff / norm);
  c.rms_diff = std::sqrt(diff / static_cast<double>(cpu.size()));
  c.cpu_argmax = static_cast<size_t>(std::max_element(cpu.begin(), cpu.end()) - cpu.begin());
  c.cuda_argmax = static_cast<size_t>(std::max_element(cuda.begin(), cuda.end()) - cuda.begin());
  float second = -INFINITY;
  for (size_t i = 0; i < cpu.size(); ++i)
    if (i != c.cpu_argmax) second = std::max(second, cpu[i]);
  c.cpu_margin = static_cast<double>(cpu[c.cpu_argmax]) - second;
  return c;
}

// Runs the model on `devices` with greedy sampling; also writes the logits after the prompt.
CliRun greedy(const std::string& model, const std::string& prompt, int n, const std::string& devices,
              const fs::path& logits, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"run",      "-m",      model,     "-p",           prompt, "-n", std::to_string(n),
                                   "--temp",   "0",       "--devices", devices, "--dump-logits", logits.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return engine(args);
}

// (a) The golden greedy text of stories260K (F32 weights), decoded token by token on cuda:0.
TEST(GpuModels, StoriesGoldenTextOnCuda) {
  REQUIRE_CUDA();
  REQUIRE_SHARED("stories260K.gguf");
  const CliRun r = engine({"run", "--model", stories(), "--prompt", "", "--max-tokens", "256", "--temperature", "0",
                           "--devices", "cuda:0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, golden()["cases"][0]["text"].get<std::string>());
}

// (a') The same with a prompt (the prompt goes through the batched path).
TEST(GpuModels, StoriesGoldenTextWithPromptOnCuda) {
  REQUIRE_CUDA();
  REQUIRE_SHARED("stories260K.gguf");
  const CliRun r = engine({"run", "-m", stories(), "-p", "Once upon a time", "-n", "60", "--temp", "0", "--devices",
                           "cuda:0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, golden()["cases"][1]["text"].get<std::string>());
}

// (b) A layer split between cuda:0 and the CPU gives the CPU's greedy text (and really splits).
TEST(GpuModels, CudaCpuLayerSplitMatchesCpu) {
  REQUIRE_CUDA();
  REQUIRE_SHARED("stories260K.gguf");
  const std::vector<std::string> split = {"--devices", "cuda:0,cpu", "--split-mode", "layer", "--gpu-layers", "3"};
  std::vector<std::string> plan_args = {"plan", "-m", stories(), "--json"};
  plan_args.insert(plan_args.end(), split.begin(), split.end());
  const CliRun plan = engine(plan_args);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const auto j = nlohmann::json::parse(plan.out);
  const auto& layers = j["placement"]["layers"];
  ASSERT_EQ(layers.size(), 2u) << plan.out;
  EXPECT_NE(layers[0]["device"], layers[1]["device"]) << plan.out;
  EXPECT_TRUE(layers[0]["device"] == "cpu" || layers[1]["device"] == "cpu") << plan.out;

  const CliRun cpu = engine({"run", "-m", stories(), "-p", "Once upon a time", "-n", "60", "--temp", "0", "--devices",
                             "cpu"});
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  std::vector<std::string> args = {"run", "-m", stories(), "-p", "Once upon a time", "-n", "60", "--temp", "0"};
  args.insert(args.end(), split.begin(), split.end());
  const CliRun both = engine(args);
  ASSERT_EQ(both.exit_code, 0) << both.err;
  EXPECT_EQ(both.out, cpu.out);
}

// A prompt longer than the matrix-vector limit goes through the GEMM path (F16 tensor cores on
// CUDA): the logits after it match the CPU's. Tolerance 1e-2 relative (L2): stories260K's weights
// are F32, and F16 rounding of weights and activations (2^-11 each) over 5 layers stays well below.
TEST(GpuModels, StoriesLongPromptLogitsMatchCpu) {
  REQUIRE_CUDA();
  REQUIRE_SHARED("stories260K.gguf");
  const fs::path dir = test::temp_dir("gpu-models");
  const std::string prompt = golden()["cases"][0]["text"].get<std::string>().substr(0, 400);
  const CliRun cpu = greedy(stories(), prompt, 1, "cpu", dir / "long-cpu.f32");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  const CliRun gpu = greedy(stories(), prompt, 1, "cuda:0", dir / "long-cuda.f32");
  ASSERT_EQ(gpu.exit_code, 0) << gpu.err;
  const LogitsComparison c = compare_logits(read_floats(dir / "long-cpu.f32"), read_floats(dir / "long-cuda.f32"));
  EXPECT_LE(c.rel_l2, 1e-2) << "logits after a " << prompt.size() << "-character prompt";
  if (c.cpu_margin > 10 * c.rms_diff) {
    EXPECT_EQ(c.cuda_argmax, c.cpu_argmax) << "margin " << c.cpu_margin;
  }
}

// (c) A random 16-layer Q4_K_M model: the same greedy tokens on cuda:0 as on the CPU.
// The CPU multiplies quantized weights by 8-bit-quantized activations (Q8_K), so its logits sit
// ~2% (relative L2) from an exact f32-activation forward pass on this model (measured against
// tests/reference's NumPy forward with dequantized weights: 1.8%, rms 0.0058 on logits of sd 0.32).
// CUDA's kernels round differently, so logits are compared within 1e-1 relative (L2), and greedy
// tokens only where the top-2 margin is clear: seed 1 with "Once upon a time" gives a CPU greedy
// path whose top-2 margin is at least 0.256 at each of its 8 steps, 44x the CPU's rms distance
// from the exact pass. (That path repeats one token: a random model's text is not meant to read.)
constexpr const char* kRandomSeed = "1";

fs::path make_random_q4_k_m(const fs::path& dir, int layers = 16) {
  const fs::path model = dir / ("random-" + std::to_string(layers) + "l-q4_k_m.gguf");
  const CliRun made = engine({"make-model", "--arch", "llama", "--dim", "256", "--layers", std::to_string(layers),
                              "--heads", "4", "--kv-heads", "2", "--ffn", "768", "--ctx", "512", "--type", "q4_k_m",
                              "--seed", kRandomSeed, "--vocab-from", stories(), "-o", model.string()});
  EXPECT_EQ(made.exit_code, 0) << made.err;
  return made.exit_code == 0 ? model : fs::path();
}

TEST(GpuModels, RandomQ4KMModelSameGreedyTokensAsCpu) {
  REQUIRE_CUDA();
  REQUIRE_SHARED("stories260K.gguf");
  const fs::path dir = test::temp_dir("gpu-models");
  const fs::path model = make_random_q4_k_m(dir);
  ASSERT_FALSE(model.empty());

  const CliRun cpu = greedy(model.string(), "Once upon a time", 8, "cpu", dir / "q4km-cpu.f32");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  const CliRun gpu = greedy(model.string(), "Once upon a time", 8, "cuda:0", dir / "q4km-cuda.f32");
  ASSERT_EQ(gpu.exit_code, 0) << gpu.err;

  const LogitsComparison c = compare_logits(read_floats(dir / "q4km-cpu.f32"), read_floats(dir / "q4km-cuda.f32"));
  EXPECT_LE(c.rel_l2, 1e-1) << "logits after the prompt, cuda:0 against cpu";
  if (c.cpu_margin > 10 * c.rms_diff) {
    EXPECT_EQ(c.cuda_argmax, c.cpu_argmax) << "first greedy token; CPU top-2 margin " << c.cpu_margin
                                           << ", rms logit difference " << c.rms_diff;
  }
  EXPECT_EQ(gpu.out, cpu.out) << "8 greedy tokens; logits rel L2 " << c.rel_l2 << ", rms difference " << c.rms_diff
                              << ", first-step CPU margin " << c.cpu_margin;
}

// The same model through CUDA's prompt path (a prompt of more than 8 tokens: mmv in token groups
// of 8): logits within 1e-1 relative (L2) of the CPU's, as above.
TEST(GpuModels, RandomQ4KMModelLongPromptLogitsMatchCpu) {
  REQUIRE_CUDA();
  REQUIRE_SHARED("stories260K.gguf");
  const fs::path dir = test::temp_dir("gpu-models");
  const fs::path model = make_random_q4_k_m(dir);
  ASSERT_FALSE(model.empty());
  const std::string prompt = golden()["cases"][0]["text"].get<std::string>().substr(0, 120);
  const CliRun cpu = greedy(model.string(), prompt, 1, "cpu", dir / "q4km-long-cpu.f32");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  const CliRun gpu = greedy(model.string(), prompt, 1, "cuda:0", dir / "q4km-long-cuda.f32");
  ASSERT_EQ(gpu.exit_code, 0) << gpu.err;
  const LogitsComparison c =
      compare_logits(read_floats(dir / "q4km-long-cpu.f32"), read_floats(dir / "q4km-long-cuda.f32"));
  EXPECT_LE(c.rel_l2, 1e-1) << "logits after a " << prompt.size() << "-character prompt";
}

// Batch invariance on the GPU (issue 45): a random 4-layer Q4_K_M model (the K-quant kernels; on a
// real GPU, nvcc's code) after a prompt of about 30 tokens fed whole, one token a pass and in
// pieces of 7: the logits after the prompt are the same bytes, the 6 greedy tokens the same text.
TEST(GpuModels, RandomQ4KMLogitsIndependentOfBatch) {
  REQUIRE_CUDA();
  REQUIRE_SHARED("stories260K.gguf");
  const fs::path dir = test::temp_dir("gpu-models");
  const fs::path model = make_random_q4_k_m(dir, 4);
  ASSERT_FALSE(model.empty());
  const std::string prompt = golden()["cases"][0]["text"].get<std::string>().substr(0, 110);
  const CliRun whole = greedy(model.string(), prompt, 6, "cuda:0", dir / "bi-whole.f32", {"--batch", "512"});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const std::vector<float> ref = read_floats(dir / "bi-whole.f32");
  ASSERT_FALSE(ref.empty());
  for (const char* batch : {"1", "7"}) {
    const fs::path out = dir / (std::string("bi-") + batch + ".f32");
    const CliRun r = greedy(model.string(), prompt, 6, "cuda:0", out, {"--batch", batch});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, whole.out) << "--batch " << batch;
    const std::vector<float> got = read_floats(out);
    ASSERT_EQ(got.size(), ref.size());
    EXPECT_EQ(std::memcmp(got.data(), ref.data(), ref.size() * sizeof(float)), 0)
        << "--batch " << batch << ": the logits after the prompt differ from the whole prompt's";
  }
}

// A sliding-window model (random gemma3, window 16, batches of 8: rings of 128 rows on its
// local blocks) on cuda:0, 60 greedy tokens after a prompt of about 150: the cache wraps; the
// tokens and the logits after the prompt equal, bit for bit, those of the same run with
// --swa-full (one row per position), and the logits stay within 1e-1 (L2) of the CPU's.
TEST(GpuModels, WindowedKvRingMatchesAFullCacheOnCuda) {
  REQUIRE_CUDA();
  REQUIRE_SHARED("stories260K.gguf");
  const fs::path dir = test::temp_dir("gpu-models");
  const fs::path model = dir / "gemma3-window16.gguf";
  const CliRun made = engine({"make-model", "--arch", "gemma3", "--dim", "128", "--layers", "6", "--heads", "4",
                              "--kv-heads", "2", "--ffn", "256", "--ctx", "1024", "--sliding-window", "16",
                              "--swa-pattern", "3", "--type", "q8_0", "--seed", "3", "--vocab-from", stories(),
                              "-o", model.string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string prompt = golden()["cases"][0]["text"].get<std::string>().substr(0, 400);
  const std::vector<std::string> opts = {"--ctx", "1024", "--batch", "8"};
  std::vector<std::string> full_opts = opts;
  full_opts.push_back("--swa-full");
  const CliRun ring = greedy(model.string(), prompt, 60, "cuda:0", dir / "ring-cuda.f32", opts);
  ASSERT_EQ(ring.exit_code, 0) << ring.err;
  const CliRun full = greedy(model.string(), prompt, 60, "cuda:0", dir / "full-cuda.f32", full_opts);
  ASSERT_EQ(full.exit_code, 0) << full.err;
  const CliRun cpu = greedy(model.string(), prompt, 1, "cpu", dir / "ring-cpu.f32", opts);
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  EXPECT_EQ(ring.out, full.out) << "60 greedy tokens, ring vs one row per position";
  const std::vector<float> a = read_floats(dir / "ring-cuda.f32"), b = read_floats(dir / "full-cuda.f32");
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "logits after the prompt";
  EXPECT_LE(compare_logits(read_floats(dir / "ring-cpu.f32"), a).rel_l2, 1e-1) << "cuda:0 ring against the CPU's";
}

// Writes a random model with make-model `arch_args` (F32 weights, or `type`) and runs `n` greedy
// tokens of a 200-character prompt on the CPU and on cuda:0. F32 weights give the GPU no
// quantization to differ by; a type whose CPU dot takes f32 activations (the IQ / MXFP4 types)
// gives it none either: logits after the prompt within 1e-2 relative (L2) of the CPU's, greedy
// tokens equal.
void expect_f32_model_on_cuda_matches_cpu(const std::string& tag, const std::vector<std::string>& arch_args, int n,
                                          const std::string& type = "f32") {
  const fs::path dir = test::temp_dir("gpu-models");
  const fs::path model = dir / ("random-" + tag + "-" + type + ".gguf");
  std::vector<std::string> make = {"make-model"};
  make.insert(make.end(), arch_args.begin(), arch_args.end());
  make.insert(make.end(), {"--type", type, "--std", "0.08", "--vocab-from", stories(), "-o", model.string()});
  const CliRun made = engine(make);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string prompt = golden()["cases"][0]["text"].get<std::string>().substr(0, 200);
  const CliRun cpu = greedy(model.string(), prompt, n, "cpu", dir / (tag + "-cpu.f32"));
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  const CliRun gpu = greedy(model.string(), prompt, n, "cuda:0", dir / (tag + "-cuda.f32"));
  ASSERT_EQ(gpu.exit_code, 0) << gpu.err;
  const LogitsComparison c = compare_logits(read_floats(dir / (tag + "-cpu.f32")), read_floats(dir / (tag + "-cuda.f32")));
  EXPECT_LE(c.rel_l2, 1e-2) << tag << ": logits after the prompt, cuda:0 against cpu";
  EXPECT_EQ(gpu.out, cpu.out) << tag << ": " << n << " greedy tokens; logits rel L2 " << c.rel_l2;
}

// A mixture-of-experts model (qwen3moe, 8 experts, top-2, F32 weights) on cuda:0: the router's
// top-k on the host, tokens gathered per expert and added back weighted (gather_rows /
// scale_add_rows), through the prompt path (more than 8 tokens: cuBLAS in f32) and 4 decode steps
// (a top-k pick flipped by rounding would move the logits far more than the helper's 1e-2).
TEST(GpuModels, MoeModelMatchesCpu) {
  REQUIRE_CUDA();
  REQUIRE_SHARED("stories260K.gguf");
  expect_f32_model_on_cuda_matches_cpu("qwen3moe-8x2",
                                       {"--arch", "qwen3moe", "--dim", "256", "--layers", "4", "--heads", "4",
                                        "--kv-heads", "2", "--head-dim", "64", "--ffn", "512", "--experts", "8",
                                        "--experts-used", "2", "--expert-ff", "256", "--ctx", "512"},
                                       4);
}

// olmo2 as Olmo 3 (F32 weights): no input norms, Q and K normalised over whole rows (a 256-wide
// rms_norm per token, not per head), post-norms, a window on 3 layers of 4 and YaRN on the global
// one, on cuda:0 against the CPU.
TEST(GpuModels, Olmo3WholeRowQkNormsMatchCpu) {
  REQUIRE_CUDA();
  REQUIRE_SHARED("stories260K.gguf");
  expect_f32_model_on_cuda_matches_cpu("olmo3",
                                       {"--arch", "olmo2", "--dim", "256", "--layers", "4", "--heads", "4",
                                        "--kv-heads", "2", "--ffn", "512", "--ctx", "512", "--sliding-window", "24",
                                        "--yarn-factor", "4"},
                                       6);
}

// gpt-oss on cuda:0 against the CPU: attention sinks (in the split-context decode merge and in
// prompts), Q/K/V and output biases, local layers 0 and 2 (window 24 < the prompt), YaRN, the
// biased router's softmax over its top-k logits, biased experts with the clamped SwiGLU. Once with
// F32 weights, once with every matrix MXFP4 (the CUDA block decoder in mmv for decode, and
// dequantized for the prompt's cuBLAS product).
TEST(GpuModels, GptOssSinksBiasesAndMxfp4ExpertsMatchCpu) {
  REQUIRE_CUDA();
  REQUIRE_SHARED("stories260K.gguf");
  const std::vector<std::string> arch = {"--arch", "gpt-oss", "--dim", "256", "--layers", "4", "--heads", "8",
                                         "--kv-heads", "2", "--head-dim", "64", "--ffn", "256", "--experts", "8",
                                         "--experts-used", "2", "--expert-ff", "256", "--ctx", "512",
                                         "--sliding-window", "24", "--yarn-factor", "4"};
  expect_f32_model_on_cuda_matches_cpu("gpt-oss", arch, 6);
  expect_f32_model_on_cuda_matches_cpu("gpt-oss", arch, 6, "mxfp4");
}

// deepseek2 (MLA) on cuda:0 against the CPU: the latent cache of one KV head (rows of 64 + 16,
// values a prefix of the keys), RoPE on the last 16 of each row, each head's k_b / v_b product
// through gather_rows / scale_add_rows, a dense first block, sigmoid routing with the selection
// bias, expert groups and a weight scale, the shared expert. Then rows of 256 + 64 = 320, longer
// than the tiled attention's 256: the wide heads' kernel (attention_wide.cu), as V2/V3's 576 take.
TEST(GpuModels, Deepseek2LatentAttentionMatchesCpu) {
  REQUIRE_CUDA();
  REQUIRE_SHARED("stories260K.gguf");
  expect_f32_model_on_cuda_matches_cpu("deepseek2",
                                       {"--arch", "deepseek2", "--dim", "256", "--layers", "3", "--heads", "4",
                                        "--q-lora-rank", "64", "--kv-lora-rank", "64", "--rope-dims", "16",
                                        "--head-dim", "48", "--v-head-dim", "32", "--ffn", "256", "--experts", "8",
                                        "--experts-used", "2", "--expert-groups", "4", "--expert-groups-used", "2",
                                        "--expert-ff", "128", "--dense-layers", "1", "--expert-weights-scale", "2.5",
                                        "--ctx", "512"},
                                       6);
  expect_f32_model_on_cuda_matches_cpu("deepseek2-wide",
                                       {"--arch", "deepseek2", "--dim", "128", "--layers", "2", "--heads", "2",
                                        "--q-lora-rank", "64", "--kv-lora-rank", "256", "--rope-dims", "64",
                                        "--head-dim", "128", "--ffn", "128", "--experts", "4", "--experts-used", "2",
                                        "--expert-ff", "64", "--dense-layers", "1", "--ctx", "256"},
                                       4);
}

// starcoder2 on cuda:0 against the CPU: LayerNorms with biases (blocks and head: the layer_norm
// kernel), Q/K/V and output biases, the non-gated GELU FFN with its biases (the gelu kernel).
TEST(GpuModels, Starcoder2LayerNormsAndGeluFfnMatchCpu) {
  REQUIRE_CUDA();
  REQUIRE_SHARED("stories260K.gguf");
  expect_f32_model_on_cuda_matches_cpu("starcoder2",
                                       {"--arch", "starcoder2", "--dim", "256", "--layers", "4", "--heads", "8",
                                        "--kv-heads", "2", "--ffn", "512", "--ctx", "512"},
                                       6);
}

// cohere2 on cuda:0 against the CPU: the parallel block (attention and FFN from one LayerNorm, the
// FFN's update in its own buffer), RoPE on the local layers only, logits times logit_scale.
TEST(GpuModels, Cohere2ParallelBlockMatchesCpu) {
  REQUIRE_CUDA();
  REQUIRE_SHARED("stories260K.gguf");
  expect_f32_model_on_cuda_matches_cpu("cohere2",
                                       {"--arch", "cohere2", "--dim", "256", "--layers", "4", "--heads", "8",
                                        "--kv-heads", "2", "--ffn", "512", "--ctx", "512", "--sliding-window", "24"},
                                       6);
}

}  // namespace
}  // namespace strata
