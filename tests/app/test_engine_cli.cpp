// tests/app/test_engine_cli.cpp — strata-engine as a user runs it: exact greedy text on stdout,
// token ids, and one clear error line (non-zero exit, no crash, no hang) for each bad input.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/core/version.h"
#include "engine/gguf/gguf_writer.h"
#include "kernels/cpu/isa.h"
#include "app/cli_runner.h"
#include "test_support.h"

namespace strata {
namespace {

using test::CliRun;
using test::engine;
using test::expect_one_line_error;
using test::slurp;
namespace fs = std::filesystem;

nlohmann::json golden() {
  std::ifstream in(test::shared_model("stories260K.golden.json"));
  return nlohmann::json::parse(in);
}

#define REQUIRE_SHARED(name)                                                        \
  if (!test::have(test::shared_model(name))) GTEST_FAIL() << "missing shared " name

// The version is CMake's project version (engine/core/version.h), as the API and the GUI say it.
TEST(EngineCli, VersionIsTheProjectVersion) {
  const CliRun r = engine({"--version"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::string("strata-engine ") + strata::version() + "\n");
  EXPECT_STRNE(strata::version(), "");
}

// bench --isa: the kernels of that instruction set run and are the ones reported (so that a figure
// measured for an AVX2-only CPU on an AVX-512 one says so); a name outside the list is refused.
TEST(EngineCli, BenchIsaPicksAndReportsTheKernels) {
  REQUIRE_SHARED("stories260K.gguf");
  const std::string model = test::shared_model("stories260K.gguf").string();
  std::vector<std::pair<std::string, std::string>> isas{{"scalar", "scalar vec_dot"}};
  if (kernels::isa_supported(kernels::Isa::Avx2)) isas.push_back({"avx2", "avx2 vec_dot"});
  for (const auto& [isa, decode_path] : isas) {
    const CliRun r = engine({"bench", "-m", model, "-p", "8", "-n", "4", "-r", "1", "-t", "1", "--no-bandwidth",
                             "--json", "--isa", isa});
    ASSERT_EQ(r.exit_code, 0) << isa << ": " << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["isa"], isa);
    EXPECT_EQ(j["kernels"]["f32"]["decode"], decode_path) << isa;
  }
  expect_one_line_error(engine({"bench", "-m", model, "--isa", "avx9"}), "--isa");
  // amx: the Avx512 level with the AMX tiles (where the CPU and the OS allow them), reported as such;
  // avx512: without them.
  if (kernels::amx_supported()) {
    for (const auto& [isa, reported] : std::vector<std::pair<std::string, std::string>>{{"amx", "avx512+amx"},
                                                                                        {"avx512", "avx512"}}) {
      const CliRun r = engine({"bench", "-m", model, "-p", "8", "-n", "4", "-r", "1", "-t", "1", "--no-bandwidth",
                               "--json", "--isa", isa});
      ASSERT_EQ(r.exit_code, 0) << isa << ": " << r.err;
      EXPECT_EQ(nlohmann::json::parse(r.out)["isa"], reported);
    }
  } else {
    expect_one_line_error(engine({"bench", "-m", model, "--isa", "amx"}), "--isa amx");
  }
}

// STRATA_ISA caps the ISA of a whole run (CI runs the suite again with STRATA_ISA=avx2 on AVX-512
// machines, so that the paths of an AVX2-only CPU are tested there too).
TEST(EngineCli, StrataIsaEnvironmentCapsTheKernels) {
  REQUIRE_SHARED("stories260K.gguf");
  const std::string model = test::shared_model("stories260K.gguf").string();
  const CliRun r = engine({"bench", "-m", model, "-p", "8", "-n", "4", "-r", "1", "-t", "1", "--no-bandwidth", "--json"},
                          "STRATA_ISA=scalar");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["isa"], "scalar");
  EXPECT_EQ(j["kernels"]["f32"]["decode"], "scalar vec_dot");
}

TEST(EngineCli, RunPrintsExactGreedyText256) {
  REQUIRE_SHARED("stories260K.gguf");
  const CliRun r = engine({"run", "--model", test::shared_model("stories260K.gguf").string(), "--prompt", "",
                        "--max-tokens", "256", "--temperature", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, golden()["cases"][0]["text"].get<std::string>());
  EXPECT_EQ(r.err, "");
}

TEST(EngineCli, RunWithPromptEchoesPromptAndContinues) {
  REQUIRE_SHARED("stories260K.tied.gguf");
  const CliRun r = engine({"run", "-m", test::shared_model("stories260K.tied.gguf").string(), "-p", "Once upon a time",
                        "-n", "60", "--temp", "0", "-t", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, golden()["cases"][1]["text"].get<std::string>());
}

TEST(EngineCli, TokenizePrintsIds) {
  REQUIRE_SHARED("stories260K.gguf");
  const CliRun r = engine({"tokenize", "-m", test::shared_model("stories260K.gguf").string(), "-p", "Once upon a time"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1 403 407 261 378\n");
}

TEST(EngineCli, InfoReportsShapeAndParameters) {
  REQUIRE_SHARED("stories260K.gguf");
  const CliRun r = engine({"info", "-m", test::shared_model("stories260K.gguf").string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_EQ(j["tensor_count"], 48);
  EXPECT_EQ(j["model"]["n_layers"], 5);
  EXPECT_EQ(j["model"]["n_kv_heads"], 4);
  EXPECT_EQ(j["types"]["f32"]["tensors"], 48);
  // 260K parameters plus the untied output copy (512 x 64).
  EXPECT_GT(j["parameters"].get<uint64_t>(), 260000u);
  EXPECT_LT(j["parameters"].get<uint64_t>(), 330000u);
}

TEST(EngineCli, MakeModelWritesRunnableQuantizedModel) {
  REQUIRE_SHARED("stories260K.gguf");
  const fs::path out = test::temp_dir("cli") / "random-q8.gguf";
  CliRun r = engine({"make-model", "--arch", "llama", "--dim", "128", "--layers", "3", "--heads", "4", "--kv-heads", "2",
                  "--ffn", "256", "--ctx", "256", "--type", "q8_0", "--vocab-from",
                  test::shared_model("stories260K.gguf").string(), "-o", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = engine({"info", "-m", out.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"]["n_embd"], 128);
  EXPECT_EQ(j["model"]["n_layers"], 3);
  EXPECT_EQ(j["model"]["n_kv_heads"], 2);
  EXPECT_EQ(j["model"]["n_vocab"], 512);
  EXPECT_EQ(j["types"]["q8_0"]["tensors"], 3 * 7 + 2);
  const CliRun a = engine({"run", "-m", out.string(), "-p", "Once", "-n", "12", "--temp", "0", "-t", "1"});
  const CliRun b = engine({"run", "-m", out.string(), "-p", "Once", "-n", "12", "--temp", "0", "-t", "2"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out) << "thread count changed greedy output";
  EXPECT_EQ(a.out.rfind("Once", 0), 0u);
}

// ---- bad input: exit != 0, exactly one line on stderr naming the problem ----

struct BadCase {
  std::string name;
  std::vector<std::string> args;
  std::string expect_in_error;  // a word the error line must contain
};

fs::path write_bytes(const std::string& name, const std::string& bytes) {
  const fs::path p = test::temp_dir("cli") / name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

// A tiny valid GGUF with one tensor; returns its bytes and the offset of the tensor's type field.
std::string tiny_gguf(size_t* type_field) {
  gguf::GgufWriter w;
  w.set_string("general.architecture", "llama");
  std::vector<uint8_t> data(32 * 2 * 4, 0);
  EXPECT_TRUE(w.add_tensor("blk.0.attn_q.weight", kernels::DType::F32, {32, 2}, data).ok());
  auto bytes = w.to_bytes();
  EXPECT_TRUE(bytes.ok());
  std::string s(bytes->begin(), bytes->end());
  // name, then n_dims (u32), dims (2 x u64), type (u32), offset (u64)
  *type_field = s.find("blk.0.attn_q.weight") + std::string("blk.0.attn_q.weight").size() + 4 + 16;
  return s;
}

TEST(EngineCliBadInput, TruncatedFile) {
  REQUIRE_SHARED("stories260K.gguf");
  const std::string full = slurp(test::shared_model("stories260K.gguf"));
  const fs::path p = write_bytes("truncated.gguf", full.substr(0, full.size() / 2));
  expect_one_line_error(engine({"run", "-m", p.string(), "-p", "x", "-n", "4"}), "error:");
  const fs::path q = write_bytes("truncated-header.gguf", full.substr(0, 100));
  expect_one_line_error(engine({"run", "-m", q.string(), "-p", "x", "-n", "4"}), "error:");
}

TEST(EngineCliBadInput, WrongMagic) {
  const fs::path p = write_bytes("magic.gguf", std::string("GGML") + std::string(60, '\0'));
  expect_one_line_error(engine({"info", "-m", p.string()}), "magic");
}

TEST(EngineCliBadInput, TensorPastEnd) {
  size_t type_at = 0;
  std::string s = tiny_gguf(&type_at);
  const uint64_t huge = 1ull << 40;
  std::memcpy(&s[type_at + 4], &huge, 8);  // the tensor's data offset
  const fs::path p = write_bytes("past-end.gguf", s);
  const CliRun r = engine({"info", "-m", p.string()});
  expect_one_line_error(r, "blk.0.attn_q.weight");
}

TEST(EngineCliBadInput, UnknownTensorType) {
  size_t type_at = 0;
  std::string s = tiny_gguf(&type_at);
  const uint32_t type = 99;
  std::memcpy(&s[type_at], &type, 4);
  const fs::path p = write_bytes("type99.gguf", s);
  // `info` opens the file and says which tensor has which type, and that the model cannot run.
  const CliRun r = engine({"info", "-m", p.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("unsupported  1 tensors"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("blk.0.attn_q.weight"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("type 99 (unknown to ggml)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not runnable: unknown tensor type id 99"), std::string::npos) << r.out;
  // Running it is a one-line error naming the id, the tensor and the types this build reads.
  const CliRun run = engine({"run", "-m", p.string(), "-p", "x", "-n", "1"});
  expect_one_line_error(run, "unknown tensor type id 99");
  EXPECT_NE(run.err.find("'blk.0.attn_q.weight'"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("iq2_xxs"), std::string::npos) << run.err;
  // A type ggml defines but this build does not read is named (NVFP4, id 40).
  const uint32_t nvfp4 = 40;
  std::memcpy(&s[type_at], &nvfp4, 4);
  const fs::path q = write_bytes("type40.gguf", s);
  const CliRun r40 = engine({"info", "-m", q.string()});
  EXPECT_EQ(r40.exit_code, 0) << r40.err;
  EXPECT_NE(r40.out.find("NVFP4 (type 40) is not supported"), std::string::npos) << r40.out;
}

TEST(EngineCliBadInput, MissingFile) {
  expect_one_line_error(engine({"run", "-m", "/nonexistent/model.gguf", "-p", "x"}), "/nonexistent/model.gguf");
}

TEST(EngineCliBadInput, PromptLongerThanContext) {
  REQUIRE_SHARED("stories260K.gguf");
  expect_one_line_error(engine({"run", "-m", test::shared_model("stories260K.gguf").string(), "--ctx", "8", "-p",
                                "Once upon a time there was a little girl named Lily who loved to play"}),
                        "context");
}

class EngineCliBadOption : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(EngineCliBadOption, RejectsValue) {
  REQUIRE_SHARED("stories260K.gguf");
  const auto& [option, value] = GetParam();
  const CliRun r = engine({"run", "-m", test::shared_model("stories260K.gguf").string(), "-p", "x", option, value});
  expect_one_line_error(r, option);
}

INSTANTIATE_TEST_SUITE_P(Values, EngineCliBadOption,
                         ::testing::Values(std::make_pair("--max-tokens", "-5"), std::make_pair("--threads", "-1"),
                                           std::make_pair("--temperature", "-1"),
                                           std::make_pair("--ctx", "99999999999"), std::make_pair("--top-p", "7"),
                                           std::make_pair("--threads", "100000"),
                                           std::make_pair("--max-tokens", "lots")));


// Speculative decoding's draft model in the plan: its weights, KV and scratch on --draft-device,
// beside the placement's; a device too small for both is refused with the figures; a draft of another
// vocabulary is named.
TEST(EngineCli, PlanCountsTheDraftModelOnItsDevice) {
  REQUIRE_SHARED("stories260K.gguf");
  const std::string model = test::shared_model("stories260K.gguf").string();
  const CliRun r = engine({"plan", "-m", model, "--draft", model, "--ctx", "256", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& d = j["draft"];
  ASSERT_TRUE(d.is_object()) << r.out;
  EXPECT_EQ(d["device"], "cpu");
  EXPECT_EQ(d["model"], "stories260K.gguf");
  uint64_t placed = 0;
  for (const nlohmann::json& dev : j["memory"]["devices"])
    if (dev["device"] == "cpu") placed = dev["total_bytes"].get<uint64_t>();
  ASSERT_GT(placed, 0u);
  const uint64_t draft = d["total_bytes"].get<uint64_t>();
  EXPECT_EQ(draft, d["weight_bytes"].get<uint64_t>() + d["kv_bytes"].get<uint64_t>() + d["scratch_bytes"].get<uint64_t>());
  EXPECT_EQ(d["device_total_bytes"].get<uint64_t>(), placed + draft);
  EXPECT_TRUE(d["fits"].get<bool>());
  // A CPU that holds the placement but not the draft beside it.
  const uint64_t between = placed + draft / 2;
  const CliRun tight = engine({"plan", "-m", model, "--draft", model, "--ctx", "256", "--devices",
                               "cpu:" + std::to_string(between)});
  EXPECT_EQ(tight.exit_code, 1);
  EXPECT_NE(tight.err.find("cannot hold the draft model beside the placement"), std::string::npos) << tight.err;
  EXPECT_NE(tight.out.find("short"), std::string::npos) << tight.out;
  const CliRun foreign = engine({"plan", "-m", model, "--draft", test::shared_model("llama-2-tiny-random.gguf").string()});
  EXPECT_NE(foreign.exit_code, 0);
  EXPECT_NE(foreign.err.find("not the same vocabulary"), std::string::npos) << foreign.err;
}

}  // namespace
}  // namespace strata
