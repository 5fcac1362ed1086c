// tests/app/test_engine_cli_split.cpp — strata-engine with several (simulated) devices: the same
// text as one device, plan / devices output, a valid Chrome trace, and one clear error line for
// each wrong placement or device declaration.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "app/cli_runner.h"
#include "test_support.h"

namespace strata {
namespace {

using test::CliRun;
using test::engine;
using test::expect_one_line_error;
namespace fs = std::filesystem;

std::string stories() { return test::shared_model("stories260K.gguf").string(); }

#define REQUIRE_STORIES() \
  if (!test::have(test::shared_model("stories260K.gguf"))) GTEST_SKIP() << "missing shared stories260K.gguf"

std::string single_device_text() {
  const CliRun r = engine({"run", "-m", stories(), "-p", "Once upon a time", "-n", "40", "--temp", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

class SplitRun : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(SplitRun, SameTextAsOneDevice) {
  REQUIRE_STORIES();
  std::vector<std::string> args = {"run", "-m", stories(), "-p", "Once upon a time", "-n", "40", "--temp", "0"};
  for (const auto& a : GetParam()) args.push_back(a);
  const CliRun r = engine(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, single_device_text());
}

INSTANTIATE_TEST_SUITE_P(
    Modes, SplitRun,
    ::testing::Values(std::vector<std::string>{"--devices", "sim:gpu0:1GiB,sim:gpu1:1GiB", "--split-mode", "layer"},
                      std::vector<std::string>{"--devices", "sim:gpu0:1GiB,sim:gpu1:1GiB,sim:gpu2:1GiB"},
                      std::vector<std::string>{"--devices", "cpu,sim:gpu0:1GiB,sim:gpu1:1GiB", "--split-mode", "tensor",
                                               "--split-ratio", "3,1"},
                      std::vector<std::string>{"--devices", "cpu,sim:gpu0:1GiB", "--gpu-layers", "3"},
                      std::vector<std::string>{"--devices", "cpu,sim:gpu0:1GiB,sim:gpu1:1GiB", "--kv-on-cpu"},
                      std::vector<std::string>{"--devices", "sim:gpu0:2560KiB,sim:gpu1:2560KiB", "--placement", "auto",
                                               "--ctx", "512"}));

TEST(EngineCliSplit, PlanPrintsPlacementMemoryAndReasons) {
  REQUIRE_STORIES();
  const CliRun r = engine({"plan", "-m", stories(), "--devices", "cpu,sim:gpu0:1GiB,sim:gpu1:1GiB", "--split-mode",
                           "layer", "--split-ratio", "3,2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["fits"].get<bool>());
  // 3:2 over 5 blocks: 0-2 on gpu0, 3-4 on gpu1.
  const auto& layers = j["placement"]["layers"];
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0]["device"], "gpu0");
  EXPECT_EQ(layers[0]["layers"], "0-2");
  EXPECT_EQ(layers[1]["device"], "gpu1");
  EXPECT_EQ(layers[1]["layers"], "3-4");
  EXPECT_GE(j["memory"]["devices"].size(), 2u);
  EXPECT_FALSE(j["explanation"].empty());
}

TEST(EngineCliSplit, DevicesListsSimulatedDevicesAsSimulated) {
  const CliRun r = engine({"devices", "--devices", "cpu,sim:gpu0:24GiB:bw=900GB/s,sim:gpu1:12GiB", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[1]["id"], "gpu0");
  EXPECT_TRUE(j[1]["simulated"].get<bool>());
  EXPECT_EQ(j[1]["bytes_total"].get<uint64_t>(), 24ull << 30);
  EXPECT_NE(j[1]["name"].get<std::string>().find("simulated"), std::string::npos);
  EXPECT_EQ(j[1]["bandwidth_gbps"].get<double>(), 900.0);
  EXPECT_FALSE(j[0]["simulated"].get<bool>());
}

TEST(EngineCliSplit, TraceIsChromeJsonWithLanesLayersAndTransfers) {
  REQUIRE_STORIES();
  const fs::path trace = test::temp_dir("cli-split") / "trace.json";
  const CliRun r = engine({"run", "-m", stories(), "-p", "Once upon a time", "-n", "8", "--temp", "0", "--devices",
                           "sim:gpu0:1GiB,sim:gpu1:1GiB", "--trace", trace.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(trace);
  const auto j = nlohmann::json::parse(in);
  std::map<int, std::string> lanes;
  std::set<std::pair<int, int64_t>> layer_tokens;  // (layer, token position)
  int transfers = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") lanes[e["tid"].get<int>()] = e["args"]["name"];
    if (e["ph"] == "X" && e["cat"] == "compute") {
      const int n_tokens = e["args"].value("n_tokens", 1);
      for (int t = 0; t < n_tokens; ++t)
        layer_tokens.insert({e["args"]["layer"].get<int>(), e["args"]["token"].get<int64_t>() + t});
    }
    if (e["ph"] == "X" && e["cat"] == "transfer") {
      ++transfers;
      EXPECT_EQ(e["args"]["bytes"].get<uint64_t>() % (64 * 4), 0u);  // whole hidden rows of 64 floats
      EXPECT_GT(e["args"]["bytes"].get<uint64_t>(), 0u);
    }
  }
  std::set<std::string> names;
  for (auto& [tid, name] : lanes) names.insert(name);
  EXPECT_TRUE(names.count("gpu0 (simulated)")) << r.err;
  EXPECT_TRUE(names.count("gpu1 (simulated)"));
  // 5 prompt positions + 7 generated ones are evaluated (the 8th sampled token is not), each
  // through all 5 blocks: one span (or a share of a prompt span) per layer per token.
  EXPECT_EQ(layer_tokens.size(), 5u * 12u);
  EXPECT_EQ(transfers, 8);  // one hand-over gpu0 -> gpu1 per forward pass (1 prompt + 7 decode)
}

struct BadPlacement {
  std::string name;
  std::string json;     // placement file content ("" -> use devices option only)
  std::string devices;
  std::string word;     // expected in the one-line error
};

void PrintTo(const BadPlacement& b, std::ostream* os) { *os << b.name; }

class EngineCliBadPlacement : public ::testing::TestWithParam<BadPlacement> {};

TEST_P(EngineCliBadPlacement, OneClearErrorLine) {
  REQUIRE_STORIES();
  const BadPlacement& b = GetParam();
  std::vector<std::string> args = {"run", "-m", stories(), "-p", "Once", "-n", "4", "--devices", b.devices};
  if (!b.json.empty()) {
    const fs::path p = test::temp_dir("cli-split") / (b.name + ".json");
    std::ofstream(p) << b.json;
    args.push_back("--placement");
    args.push_back(p.string());
  }
  expect_one_line_error(engine(args), b.word);
}

const std::string kOk = R"("embedding": {"device": "gpu0"}, "head": {"device": "gpu0"})";

INSTANTIATE_TEST_SUITE_P(
    Cases, EngineCliBadPlacement,
    ::testing::Values(
        BadPlacement{"missing_device", R"({"version": 1, "n_ctx": 256, )" + kOk + R"(, "layers": [{"layers": "0-4", "device": "gpu7"}]})",
                     "sim:gpu0:1GiB", "gpu7"},
        BadPlacement{"missing_layer", R"({"version": 1, "n_ctx": 256, )" + kOk + R"(, "layers": [{"layers": "0-3", "device": "gpu0"}]})",
                     "sim:gpu0:1GiB", "4"},
        BadPlacement{"overlap", R"({"version": 1, "n_ctx": 256, )" + kOk +
                                    R"(, "layers": [{"layers": "0-3", "device": "gpu0"}, {"layers": "2-4", "device": "gpu0"}]})",
                     "sim:gpu0:1GiB", "overlap"},
        BadPlacement{"negative_ratio", R"({"version": 1, "n_ctx": 256, )" + kOk +
                                           R"(, "layers": [{"layers": "0-4", "group": ["gpu0", "gpu1"], "ratio": [1, -2]}]})",
                     "sim:gpu0:1GiB,sim:gpu1:1GiB", "ratio"},
        BadPlacement{"layer_past_end", R"({"version": 1, "n_ctx": 256, )" + kOk + R"(, "layers": [{"layers": "0-9", "device": "gpu0"}]})",
                     "sim:gpu0:1GiB", "9"},
        BadPlacement{"not_json", "{layers: ", "sim:gpu0:1GiB", "error:"},
        BadPlacement{"zero_size_device", "", "sim:gpu0:0GiB", "gpu0"},
        BadPlacement{"bad_size_unit", "", "sim:gpu0:12parsecs", "parsecs"},
        BadPlacement{"duplicate_device", "", "sim:gpu0:1GiB,sim:gpu0:1GiB", "gpu0"},
        BadPlacement{"does_not_fit", "", "sim:gpu0:100KiB", "short"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace strata
