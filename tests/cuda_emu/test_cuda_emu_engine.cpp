// tests/cuda_emu/test_cuda_emu_engine.cpp — the engine's CUDA backend (engine/backend/cuda, unchanged)
// on the emulated GPUs, end to end through `strata-engine`: the devices it lists, and stories260K's
// golden greedy text (../shared/models/stories260K.golden.json, case "Once upon a time", 60 steps) on
// cuda:0, on cuda:0 + cuda:1 split by layers (peer copies, and with peer access off the staged
// path), split by tensors (NCCL all-reduce), and on cuda:0 + cpu. The model and the golden file
// must be there: a missing file fails the test.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
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

}  // namespace
