// tests/mpi/test_mpi_serve.cpp — `strata-engine serve` over `mpirun -np 2` on this machine: rank 0
// serves HTTP with blocks on rank 1; the devices route lists both ranks with their hosts; when
// rank 1 dies mid-reply the engine re-plans onto rank 0's CPU and the reply finishes with the same
// text as one process gives (with three ranks too, the downstream one of a worker-to-worker crossing
// dying); rank 1's device memory in /devices and /status is what rank 1 holds
// after each placement (not the start-up figures). Registered only when the build has MPI and the
// HTTP server.
#include <gtest/gtest.h>

#include <fstream>

#include "app/cli_runner.h"
#include "serve/serve_test_util.h"

namespace strata::test {
namespace {

std::vector<std::string> mpirun() {
  return {STRATA_MPIEXEC, "--allow-run-as-root", "--oversubscribe", "-np", "2", "--mca", "btl", "self,tcp",
          "--mca", "btl_tcp_if_include", "lo", "--enable-recovery"};
}

std::vector<std::string> mpirun3() {
  std::vector<std::string> args = mpirun();
  args[4] = "3";  // -np 3
  return args;
}

std::string split_placement() {
  const fs::path p = temp_dir("mpi-serve") / "split.json";
  std::ofstream(p) << R"({"version": 1, "n_ctx": 256, "n_seq": 1,
    "embedding": {"device": "r0:cpu"},
    "layers": [{"layers": "0-2", "device": "r0:cpu"}, {"layers": "3-4", "device": "r1:cpu"}],
    "head": {"device": "r0:cpu"}})";
  return p.string();
}

TEST(MpiServe, LostRankIsReplannedAndTheReplyCarriesOnWithTheSameText) {
  ASSERT_TRUE(have(shared_model("stories260K.gguf"))) << "missing stories260K.gguf";
  const CliRun ref = engine({"run", "--model", stories_model(), "--devices", "cpu", "-t", "1", "--prompt",
                             "Once upon a time", "-n", "40", "--temperature", "0", "--no-echo"});
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  // Rank 1 dies instead of answering its 11th stage call: mid-reply.
  ServerProcess server({"--model", stories_model(), "--devices", "r0:cpu,r1:cpu", "--placement", split_placement(),
                        "-t", "1", "--parallel", "1", "--rank-fault", "1:crash_after=10"},
                       std::chrono::seconds(90), mpirun());
  ASSERT_NE(server.port(), 0) << server.stderr_text();

  Reply devices = get(server.port(), "/strata/v1/devices");
  ASSERT_EQ(devices.status, 200) << devices.body;
  const Json d = Json::parse(devices.body);
  ASSERT_EQ(d["devices"].size(), 2u) << devices.body;
  EXPECT_EQ(d["devices"][0]["id"], "r0:cpu");
  EXPECT_EQ(d["devices"][1]["id"], "r1:cpu");
  EXPECT_EQ(d["devices"][1]["rank"], 1);
  EXPECT_FALSE(d["devices"][0]["host"].get<std::string>().empty());
  EXPECT_FALSE(d["devices"][1]["host"].get<std::string>().empty());

  Reply r = post(server.port(), "/v1/completions",
                 Json{{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.body << "\n" << server.stderr_text();
  const Json j = Json::parse(r.body);
  const Json& choice = j["choices"][0];
  EXPECT_EQ(choice["text"].get<std::string>(), ref.out);
  ASSERT_TRUE(choice.contains("replans")) << r.body;
  ASSERT_EQ(choice["replans"].size(), 1u) << r.body;
  EXPECT_EQ(choice["replans"][0]["lost"], Json::array({"r1:cpu"})) << r.body;
  EXPECT_EQ(choice["replans"][0]["devices"], Json::array({"r0:cpu"})) << r.body;
  EXPECT_NE(choice["replans"][0]["cause"].get<std::string>().find("rank 1 is lost"), std::string::npos);
}

// Three ranks, the hidden state going from rank 1 straight to rank 2; rank 2 dies mid-reply: the
// engine re-plans onto the devices left and the reply carries on with one process's text.
TEST(MpiServe, ThreeRanksDownstreamWorkerLostIsReplannedWithTheSameText) {
  ASSERT_TRUE(have(shared_model("stories260K.gguf"))) << "missing stories260K.gguf";
  const CliRun ref = engine({"run", "--model", stories_model(), "--devices", "cpu", "-t", "1", "--prompt",
                             "Once upon a time", "-n", "40", "--temperature", "0", "--no-echo"});
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  const fs::path p = temp_dir("mpi-serve") / "three.json";
  std::ofstream(p) << R"({"version": 1, "n_ctx": 256, "n_seq": 1,
    "embedding": {"device": "r0:cpu"},
    "layers": [{"layers": "0-2", "device": "r1:cpu"}, {"layers": "3-4", "device": "r2:cpu"}],
    "head": {"device": "r0:cpu"}})";
  ServerProcess server({"--model", stories_model(), "--devices", "r0:cpu,r1:cpu,r2:cpu", "--placement", p.string(),
                        "-t", "1", "--parallel", "1", "--rank-fault", "2:crash_after=10"},
                       std::chrono::seconds(90), mpirun3());
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  Reply r = post(server.port(), "/v1/completions",
                 Json{{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.body << "\n" << server.stderr_text();
  const Json answer = Json::parse(r.body);
  const Json& choice = answer["choices"][0];
  EXPECT_EQ(choice["text"].get<std::string>(), ref.out);
  ASSERT_TRUE(choice.contains("replans")) << r.body;
  ASSERT_EQ(choice["replans"].size(), 1u) << r.body;
  EXPECT_EQ(choice["replans"][0]["lost"], Json::array({"r2:cpu"})) << r.body;
  EXPECT_NE(choice["replans"][0]["cause"].get<std::string>().find("rank 2 is lost"), std::string::npos);
}

// One device's entries: /strata/v1/devices' bytes_free / bytes_total and /status's memory.
struct DeviceMemory {
  uint64_t bytes_free = 0, bytes_total = 0, weights = 0, kv = 0, total = 0;
  bool in_status = false;
};

DeviceMemory device_memory(int port, const std::string& id) {
  DeviceMemory m;
  const Json devices = Json::parse(get(port, "/strata/v1/devices").body);
  for (const Json& d : devices["devices"]) {
    if (d["id"] != id) continue;
    m.bytes_free = d["bytes_free"].get<uint64_t>();
    m.bytes_total = d["bytes_total"].get<uint64_t>();
  }
  const Json status = Json::parse(get(port, "/strata/v1/status").body);
  for (const Json& e : status["memory"]) {
    if (e["device"] != id) continue;
    m.in_status = true;
    m.weights = e["weights"].get<uint64_t>();
    m.kv = e["kv"].get<uint64_t>();
    m.total = e["total"].get<uint64_t>();
  }
  return m;
}

TEST(MpiServe, RemoteDeviceMemoryFollowsRank1AfterLoadAndApply) {
  ASSERT_TRUE(have(shared_model("stories260K.gguf"))) << "missing stories260K.gguf";
  ServerProcess server({"--model", stories_model(), "--devices", "r0:cpu,r1:cpu", "--placement", split_placement(),
                        "-t", "1", "--parallel", "1"},
                       std::chrono::seconds(90), mpirun());
  ASSERT_NE(server.port(), 0) << server.stderr_text();

  // Blocks 3-4 on rank 1: its CPU holds their weights, KV and scratch, and /devices' free bytes
  // are its capacity less exactly those (a CPU device's free bytes are its accounting's).
  const DeviceMemory loaded = device_memory(server.port(), "r1:cpu");
  ASSERT_TRUE(loaded.in_status) << "/status has no memory entry for r1:cpu";
  EXPECT_GT(loaded.weights, 0u);
  EXPECT_GT(loaded.kv, 0u);
  ASSERT_GT(loaded.bytes_total, loaded.total);
  EXPECT_EQ(loaded.bytes_free, loaded.bytes_total - loaded.total);

  // Every block onto rank 1: its figures grow by the blocks it took, as rank 1 reports them.
  const std::string all_on_r1 = R"({"version": 1, "n_ctx": 256, "n_seq": 1,
    "embedding": {"device": "r0:cpu"},
    "layers": [{"layers": "0-4", "device": "r1:cpu"}],
    "head": {"device": "r0:cpu"}})";
  const Reply applied = request(server.port(), "PUT", "/strata/v1/placement", all_on_r1);
  ASSERT_EQ(applied.status, 200) << applied.body << "\n" << server.stderr_text();
  const DeviceMemory moved = device_memory(server.port(), "r1:cpu");
  ASSERT_TRUE(moved.in_status);
  // stories260K's five blocks have equal sizes: five blocks' weights and KV where there were two.
  EXPECT_EQ(moved.weights * 2, loaded.weights * 5);
  EXPECT_EQ(moved.kv * 2, loaded.kv * 5);
  EXPECT_EQ(moved.bytes_free, moved.bytes_total - moved.total);
  EXPECT_LT(moved.bytes_free, loaded.bytes_free);
}

}  // namespace
}  // namespace strata::test
