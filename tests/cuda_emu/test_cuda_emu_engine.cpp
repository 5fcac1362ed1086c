// tests/cuda_emu/test_cuda_emu_engine.cpp — the engine's CUDA backend (engine/backend/cuda, unchanged)
// on the emulated GPUs, end to end through `strata-engine`: the devices it lists, and stories260K's
// golden greedy text (../shared/models/stories260K.golden.json, case "Once upon a time", 60 steps) on
// cuda:0, on cuda:0 + cuda:1 split by layers (peer copies, and with peer access off the staged
// path), split by tensors (NCCL all-reduce), and on cuda:0 + cpu; and the same logits bytes at any
// prompt batch and over a layer split. The model and the golden file must be there: a missing file
// fails the test.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

struct EngineRun {
  int exit_code = -1;
  std::string out, err;
};

std::string shared_model(const std::string& name) { return std::string(STRATA_SHARED_MODELS_DIR) + "/" + name; }

// Runs strata-engine with `args` (already shell-quoted) and the environment assignments `env`.
EngineRun engine(const std::string& env, const std::string& args) {
  const std::string err_path =
      (std::filesystem::temp_directory_path() / ("cuda_emu_engine_" + std::to_string(::getpid()) + ".err")).string();
  const std::string cmd = env + " '" + std::string(STRATA_ENGINE_BINARY) + "' " + args + " 2>'" + err_path + "'";
  EngineRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_path);
  r.err.assign(std::istreambuf_iterator<char>(e), std::istreambuf_iterator<char>());
  std::filesystem::remove(err_path);
  return r;
}

std::string golden_text() {
  std::ifstream in(shared_model("stories260K.golden.json"));
  EXPECT_TRUE(in.good()) << "missing " << shared_model("stories260K.golden.json");
  if (!in.good()) return "<missing golden file>";
  const nlohmann::json j = nlohmann::json::parse(in);
  const nlohmann::json& c = j["cases"][1];
  EXPECT_EQ(c["prompt"].get<std::string>(), "Once upon a time");
  EXPECT_EQ(c["steps"].get<int>(), 64);
  return c["text"].get<std::string>();
}

void expect_golden(const std::string& env, const std::string& devices) {
  const std::string model = shared_model("stories260K.gguf");
  ASSERT_TRUE(std::filesystem::exists(model)) << "missing " << model;
  // 60 new tokens after the 4 prompt tokens and BOS: the golden case's 64 steps.
  const EngineRun r = engine("STRATA_CUDA_EMU_DEVICES=2x4GiB " + env,
                       "run -m '" + model + "' -p 'Once upon a time' -n 60 --temp 0 -t 2 " + devices);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, golden_text()) << r.err;
}

TEST(CudaEmuEngine, DevicesListsTheEmulatedGpus) {
  const EngineRun r = engine("STRATA_CUDA_EMU_DEVICES=2x4GiB", "devices");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| cuda0 | cuda | NVIDIA H200 (emulated) | 9.0 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| cuda1 | cuda | NVIDIA H200 (emulated) | 9.0 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 devices"), std::string::npos) << r.out;
}

TEST(CudaEmuEngine, GoldenTextOnCuda0) { expect_golden("", "--devices cuda:0"); }
// Speculative decoding (engine/exec/speculative.h) on the GPU: a pass of the sampled token and up to
// 6 guesses (the batched matrix-vector kernels, attention over several new rows) gives each row
// the logits a one-token pass gives, so the greedy text is the plain one: the golden text, and on a
// prompt whose names repeat (so that prompt lookup's guesses are taken) the text of a plain run.
TEST(CudaEmuEngine, SpeculativeDecodingGivesThePlainTextOnCuda0) {
  const std::string model = shared_model("stories260K.gguf");
  ASSERT_TRUE(std::filesystem::exists(model)) << "missing " << model;
  const std::string spec = " --speculative lookup --draft-fixed --draft-max 6 --stats";
  const EngineRun golden = engine("STRATA_CUDA_EMU_DEVICES=2x4GiB",
                                  "run -m '" + model + "' -p 'Once upon a time' -n 60 --temp 0 -t 2 --devices cuda:0" + spec);
  ASSERT_EQ(golden.exit_code, 0) << golden.err;
  EXPECT_EQ(golden.out, golden_text()) << golden.err;
  const std::string args = "run -m '" + model + "' -p 'Once upon a time, there was a little girl named Lily. Lily liked "
                           "to play with her ball.' -n 60 --temp 0 -t 2 --devices cuda:0";
  const EngineRun plain = engine("STRATA_CUDA_EMU_DEVICES=2x4GiB", args);
  const EngineRun guessed = engine("STRATA_CUDA_EMU_DEVICES=2x4GiB", args + spec);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(guessed.exit_code, 0) << guessed.err;
  EXPECT_EQ(guessed.out, plain.out) << guessed.err;
  const size_t at = guessed.err.find(" drafted, ");
  ASSERT_NE(at, std::string::npos) << guessed.err;
  EXPECT_GT(std::atoi(guessed.err.c_str() + at + 10), 0) << guessed.err;  // "N accepted"
}
TEST(CudaEmuEngine, GoldenTextLayerSplitTwoGpusPeer) { expect_golden("", "--devices cuda:0,cuda:1 --split-mode layer"); }
TEST(CudaEmuEngine, GoldenTextLayerSplitTwoGpusStaged) {
  expect_golden("STRATA_CUDA_EMU_P2P=0", "--devices cuda:0,cuda:1 --split-mode layer");
}
TEST(CudaEmuEngine, GoldenTextTensorSplitNccl) { expect_golden("", "--devices cuda:0,cuda:1 --split-mode tensor"); }
TEST(CudaEmuEngine, GoldenTextGpuAndCpu) { expect_golden("", "--devices cuda:0,cpu --split-mode layer"); }


std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing " << p;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Batch invariance on the GPU (issue 45): a 40-token prompt through stories260K (F32 weights: the
// matrix products that took cublasSgemm before) fed whole, one token a pass and in pieces of 7,
// on cuda:0 and split by layers over cuda:0 + cuda:1: the logits after the prompt are the same
// bytes and the 20 greedy tokens the same text. The fast prompt mode (STRATA_CUDA_FAST_GEMM=1,
// cuBLAS) runs, and its logits are within 1e-3 (L2, relative) of them: close, not the same bits.
TEST(CudaEmuEngine, LogitsIndependentOfBatchAndLayerSplit) {
  const std::string model = shared_model("stories260K.gguf");
  ASSERT_TRUE(std::filesystem::exists(model)) << "missing " << model;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("cuda_emu_bi_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string prompt =
      "Once upon a time, there was a little girl named Lily. She liked to play in the park with her dog and "
      "her red ball.";
  auto run = [&](const std::string& env, const std::string& extra, const std::string& name) {
    const std::filesystem::path logits = dir / (name + ".f32");
    const EngineRun r = engine("STRATA_CUDA_EMU_DEVICES=2x4GiB " + env,
                               "run -m '" + model + "' -p '" + prompt + "' -n 20 --temp 0 -t 2 --dump-logits '" +
                                   logits.string() + "' " + extra);
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
    return std::make_pair(r.out, read_bytes(logits));
  };
  const auto whole = run("", "--devices cuda:0 --batch 512", "whole");
  ASSERT_FALSE(whole.first.empty());
  ASSERT_GT(whole.second.size(), 1000u);
  const std::pair<const char*, std::string> variants[] = {
      {"one token a pass", "--devices cuda:0 --batch 1"},
      {"pieces of 7", "--devices cuda:0 --batch 7"},
      {"layer split over two GPUs", "--devices cuda:0,cuda:1 --split-mode layer --batch 512"},
      {"layer split, pieces of 7", "--devices cuda:0,cuda:1 --split-mode layer --batch 7"}};
  int i = 0;
  for (const auto& [name, extra] : variants) {
    const auto got = run("", extra, "v" + std::to_string(i++));
    EXPECT_EQ(got.first, whole.first) << name;
    EXPECT_TRUE(got.second == whole.second) << name << ": the logits after the prompt differ";
  }
  const auto fast = run("STRATA_CUDA_FAST_GEMM=1", "--devices cuda:0 --batch 512", "fast");
  ASSERT_EQ(fast.second.size(), whole.second.size());
  const size_t n = whole.second.size() / 4;
  std::vector<float> a(n), b(n);
  std::memcpy(a.data(), whole.second.data(), n * 4);
  std::memcpy(b.data(), fast.second.data(), n * 4);
  double diff = 0, norm = 0;
  for (size_t k = 0; k < n; ++k) {
    diff += (static_cast<double>(a[k]) - b[k]) * (static_cast<double>(a[k]) - b[k]);
    norm += static_cast<double>(a[k]) * a[k];
  }
  EXPECT_LE(std::sqrt(diff / norm), 1e-3) << "fast prompt mode against the batch-invariant logits";
  std::filesystem::remove_all(dir);
}

}  // namespace
