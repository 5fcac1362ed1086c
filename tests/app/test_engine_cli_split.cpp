// tests/app/test_engine_cli_split.cpp — strata-engine with several (simulated) devices: the same
// text as one device, plan / devices output, a valid Chrome trace, and one clear error line for
// each wrong placement or device declaration.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "app/cli_runner.h"
#include "app/engine_cli/devices_table.h"
#include "test_support.h"

namespace strata {
namespace {

using test::CliRun;
using test::engine;
using test::expect_one_line_error;
namespace fs = std::filesystem;

std::string stories() { return test::shared_model("stories260K.gguf").string(); }

#define REQUIRE_STORIES() \
  if (!test::have(test::shared_model("stories260K.gguf"))) GTEST_FAIL() << "missing shared stories260K.gguf"

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
                                               "--ctx", "512"},
                      // Placement below the block: the FFN of blocks 1-2 on gpu1 (llama.cpp -ot style).
                      std::vector<std::string>{"--devices", "sim:gpu0:1GiB,sim:gpu1:1GiB", "--split-mode", "none",
                                               "--override", "blk\\.[12]\\.ffn=gpu1"}));

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
  const auto out = nlohmann::json::parse(r.out);
  const auto& j = out["devices"];
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[1]["id"], "gpu0");
  EXPECT_TRUE(j[1]["simulated"].get<bool>());
  EXPECT_EQ(j[1]["bytes_total"].get<uint64_t>(), 24ull << 30);
  EXPECT_NE(j[1]["name"].get<std::string>().find("simulated"), std::string::npos);
  EXPECT_EQ(j[1]["bandwidth_gbps"].get<double>(), 900.0);
  EXPECT_FALSE(j[0]["simulated"].get<bool>());
  // The fields of real GPUs are there for every device, empty where they do not apply.
  for (const auto& d : j) {
    SCOPED_TRACE(d.dump());
    EXPECT_EQ(d["compute_capability"], "");
    EXPECT_EQ(d["ordinal"], -1);
    EXPECT_TRUE(d["peers"].is_array());
    EXPECT_TRUE(d["peers"].empty());
    EXPECT_EQ(d["failed"], false);
    EXPECT_EQ(d["failure"], "");
    EXPECT_GE(d["threads"].get<int>(), 1);
  }
  // What the build and the runtime say about CUDA.
  const auto& cuda = out["cuda"];
#ifdef STRATA_BUILDS_CUDA_MODULE
  EXPECT_TRUE(cuda["compiled"].get<bool>());
#else
  EXPECT_FALSE(cuda["compiled"].get<bool>());
  EXPECT_EQ(cuda["device_count"], 0);
#endif
  EXPECT_FALSE(cuda["description"].get<std::string>().empty());
  EXPECT_GE(cuda["device_count"].get<int>(), 0);
}

// With no --devices: every CUDA device (on this machine: none), then the CPU. The same numbers in
// the table, and the runtime's line.
TEST(EngineCliSplit, DevicesByDefaultListsEveryCudaDeviceThenTheCpu) {
  const CliRun r = engine({"devices", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = nlohmann::json::parse(r.out);
  const auto& j = out["devices"];
  ASSERT_FALSE(j.empty());
  EXPECT_EQ(j.back()["id"], "cpu");
  const int count = out["cuda"]["device_count"].get<int>();
  ASSERT_EQ(static_cast<int>(j.size()), count + 1) << out.dump(2);
  std::set<std::string> cuda_ids;
  for (int n = 0; n < count; ++n) cuda_ids.insert(j[n]["id"].get<std::string>());
  for (int n = 0; n < count; ++n) {
    const auto& d = j[n];
    SCOPED_TRACE(d.dump());
    EXPECT_EQ(d["kind"], "cuda");
    EXPECT_EQ(d["ordinal"], n);
    EXPECT_FALSE(d["simulated"].get<bool>());
    if (d["failed"].get<bool>()) {
      EXPECT_FALSE(d["failure"].get<std::string>().empty());
      continue;
    }
    const std::string cc = d["compute_capability"];
    EXPECT_TRUE(cc.size() >= 3 && cc.find('.') != std::string::npos) << cc;
    EXPECT_GT(d["bytes_total"].get<uint64_t>(), 0u);
    for (const auto& p : d["peers"]) {
      EXPECT_TRUE(cuda_ids.count(p.get<std::string>())) << p;
      EXPECT_NE(p, d["id"]);
    }
  }
  EXPECT_EQ(j.back()["compute_capability"], "");
  EXPECT_EQ(j.back()["ordinal"], -1);

  const CliRun text = engine({"devices"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("| cc | memory | free |"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("| cpu | cpu |"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("CUDA: " + out["cuda"]["description"].get<std::string>()), std::string::npos) << text.out;
  if (count >= 2) {
    EXPECT_NE(text.out.find("peer access"), std::string::npos) << text.out;
  }
  if (count == 0) {
    // Asking for CUDA where there is none: one line that says why.
    expect_one_line_error(engine({"devices", "--devices", "cuda"}), "cuda");
  }
}

// The text of `devices` for a machine with GPUs, from made-up infos: two H200s with peer access
// to each other, a third that failed (no peers), a simulated device and the CPU.
TEST(EngineCliSplit, DevicesTextShowsComputeCapabilityPeersAndFailures) {
  auto cuda = [](int n, std::vector<std::string> peers) {
    DeviceInfo i;
    i.id = "cuda" + std::to_string(n);
    i.backend = "cuda";
    i.caps.host_memory = false;
    i.caps.peer_access = true;
    i.name = "NVIDIA H200";
    i.bytes_total = 140ull << 30;
    i.bytes_free = 139ull << 30;
    i.bandwidth_gbps = 4800;
    i.compute_capability = "9.0";
    i.ordinal = n;
    i.peers = std::move(peers);
    return i;
  };
  DeviceInfo failed = cuda(2, {});
  failed.failed = true;
  failed.failure = "cudaStreamSynchronize failed: an illegal memory access was encountered";
  DeviceInfo sim;
  sim.id = "gpu0";
  sim.backend = "sim";
  sim.name = "sim-gpu0 24 GiB (simulated)";
  sim.simulated = true;
  sim.bytes_total = sim.bytes_free = 24ull << 30;
  DeviceInfo cpu;
  cpu.name = "CPU (2 threads)";
  cpu.id = "cpu";
  cpu.backend = "cpu";
  cpu.caps.host_cpu = true;
  const std::vector<DeviceInfo> infos{cuda(0, {"cuda1"}), cuda(1, {"cuda0"}), failed, sim, cpu};
  const std::string text = cli::format_devices_text(infos, {{"cuda", "CUDA runtime 13.0, driver 13.0", 3}});
  EXPECT_NE(text.find("| cuda0 | cuda | NVIDIA H200 | 9.0 | 140.0 GiB | 139.0 GiB | 4800.0 GB/s |"), std::string::npos)
      << text;
  EXPECT_NE(text.find("| cuda2 | cuda | NVIDIA H200 (failed) | 9.0 |"), std::string::npos) << text;
  EXPECT_NE(text.find("\ncuda2 failed: cudaStreamSynchronize failed: an illegal memory access was encountered\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("| gpu0 | sim | sim-gpu0 24 GiB (simulated) | - |"), std::string::npos) << text;
  EXPECT_NE(text.find("| cpu | cpu | CPU (2 threads) | - |"), std::string::npos) << text;
  EXPECT_NE(text.find("peer access (row reads and writes column's memory directly):\n"
                      "|  | cuda0 | cuda1 | cuda2 |\n"
                      "|---|---|---|---|\n"
                      "| cuda0 | - | yes | no |\n"
                      "| cuda1 | yes | - | no |\n"
                      "| cuda2 | no | no | - |\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.substr(text.rfind('\n', text.size() - 2) + 1), "CUDA: CUDA runtime 13.0, driver 13.0; 3 devices\n");
  // One CUDA device: no pairs, no matrix.
  EXPECT_EQ(cli::format_peer_matrix({cuda(0, {}), cpu}), "");
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

// A mixture-of-experts model through the CLI: make-model writes it, plan names every part and
// its bytes, and running with the experts on the CPU gives the text of the CPU alone.
TEST(EngineCliSplit, MoeExpertsOnCpuPlanAndRun) {
  REQUIRE_STORIES();
  const fs::path model = test::temp_dir("cli-moe") / "qwen3moe.gguf";
  const CliRun made = engine({"make-model", "--arch", "qwen3moe", "--layers", "4", "--dim", "64", "--heads", "4",
                              "--kv-heads", "2", "--ffn", "128", "--experts", "8", "--experts-used", "2", "--expert-ff",
                              "64", "--type", "f32", "--vocab-from", stories(), "-o", model.string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const CliRun plan = engine({"plan", "-m", model.string(), "--devices", "cpu,sim:gpu0:1GiB", "--experts-on-cpu", "2",
                              "--ctx", "256", "--json"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const nlohmann::json j = nlohmann::json::parse(plan.out);
  EXPECT_EQ(j["placement"]["layers"], nlohmann::json::parse(R"([{"layers": "0-1", "device": "gpu0", "experts": "cpu"},
                                                               {"layers": "2-3", "device": "gpu0"}])"));
  ASSERT_EQ(j["parts"].size(), 2u) << j["parts"].dump();
  const nlohmann::json& first = j["parts"][0];
  EXPECT_EQ(first["attention"]["devices"], nlohmann::json::array({"gpu0"}));
  EXPECT_EQ(first["ffn"]["devices"], nlohmann::json::array({"gpu0"}));
  ASSERT_EQ(first["experts"].size(), 1u);
  EXPECT_EQ(first["experts"][0]["device"], nlohmann::json::array({"cpu"}));
  EXPECT_EQ(first["experts"][0]["experts"], "0-7");
  // 2 blocks x 8 experts x (gate + up + down: 3 x 64 x 64 f32).
  EXPECT_EQ(first["experts"][0]["bytes"].get<uint64_t>(), 2u * 8u * 3u * 64u * 64u * 4u);
  uint64_t cpu_experts = 0;
  for (const auto& d : j["memory"]["devices"])
    if (d["device"] == "cpu") cpu_experts = d["parts"]["experts_bytes"].get<uint64_t>();
  EXPECT_EQ(cpu_experts, 2u * 8u * 3u * 64u * 64u * 4u);
  // The text plan shows the parts table.
  const CliRun table = engine({"plan", "-m", model.string(), "--devices", "cpu,sim:gpu0:1GiB", "--override", "exps=CPU",
                               "--ctx", "256"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("layers  attention"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("cpu ("), std::string::npos) << table.out;
  // Same greedy text as the CPU alone.
  const std::vector<std::string> run = {"run", "-m", model.string(), "-p", "Once upon a time", "-n", "24", "--temp", "0",
                                        "--ctx", "256"};
  std::vector<std::string> cpu_args = run, parts_args = run;
  cpu_args.insert(cpu_args.end(), {"--devices", "cpu"});
  parts_args.insert(parts_args.end(), {"--devices", "cpu,sim:gpu0:1GiB", "--override", "exps=CPU"});
  const CliRun cpu = engine(cpu_args), parts = engine(parts_args);
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  ASSERT_EQ(parts.exit_code, 0) << parts.err;
  EXPECT_FALSE(cpu.out.empty());
  EXPECT_EQ(parts.out, cpu.out);
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
        BadPlacement{"does_not_fit", "", "sim:gpu0:100KiB", "short"},
        BadPlacement{"experts_on_dense_model", R"({"version": 1, "n_ctx": 256, )" + kOk +
                                                   R"(, "layers": [{"layers": "0-4", "device": "gpu0", "experts": "gpu0"}]})",
                     "sim:gpu0:1GiB", "dense FFN"},
        BadPlacement{"ffn_device_unknown", R"({"version": 1, "n_ctx": 256, )" + kOk +
                                               R"(, "layers": [{"layers": "0-4", "device": "gpu0", "ffn_device": "gpu3"}]})",
                     "sim:gpu0:1GiB", "gpu3"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace strata
