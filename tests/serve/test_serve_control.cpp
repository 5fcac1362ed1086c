// tests/serve/test_serve_control.cpp — the control API and the trace stream of the real
// `strata-engine serve`: trace events per device lane while generating, placement changes that
// keep the text, memory estimates, load/unload, and the refusal of an open address without a key.
#include "engine/core/version.h"
#include "serve/serve_test_util.h"

namespace strata::test {
namespace {

TEST(ServeControl, TraceStreamHasEventsOnEveryDeviceWhileGenerating) {
  ServerProcess server({"-m", slow_model(), "--ctx", "2048", "--devices", "sim:gpu0:1GiB,sim:gpu1:1GiB"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();
  const Json status = get(port, "/strata/v1/status").json();
  ASSERT_EQ(status["placement"]["layers"].size(), 2u) << status.dump();  // one range per device
  EXPECT_EQ(status["version"], strata::version());  // CMake's project version, as --version says

  struct Batch {
    std::chrono::steady_clock::time_point at;
    Json data;
  };
  std::vector<Batch> batches;
  std::mutex mutex;
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    httplib::Client cli("127.0.0.1", port);
    cli.set_read_timeout(30, 0);
    SseParser parser([&](const std::string& data) {
      std::lock_guard<std::mutex> lock(mutex);
      batches.push_back({std::chrono::steady_clock::now(), Json::parse(data, nullptr, false)});
      return !stop.load();
    });
    cli.Get("/strata/v1/trace/stream", [&](const char* d, size_t n) { return parser.feed(d, n); });
  });
  // Waits (polling, up to 60 s: only a broken stream takes that long) until `done` holds over the
  // batches received so far.
  auto wait_for_batches = [&](const std::function<bool(const std::vector<Batch>&)>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (done(batches)) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  // The stream's first batch is sent as soon as it is connected: from then on it sees every event.
  ASSERT_TRUE(wait_for_batches([](const std::vector<Batch>& b) { return !b.empty(); })) << "no trace batch";
  constexpr int kTokens = 1500;  // a second or more of generation
  const auto t0 = std::chrono::steady_clock::now();
  Reply r = post(port, "/v1/completions",
                 {{"prompt", "Once upon a time"}, {"max_tokens", kTokens}, {"ignore_eos", true}, {"temperature", 0}});
  const auto t1 = std::chrono::steady_clock::now();
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["usage"]["completion_tokens"], kTokens);
  // The last events reach the stream a batch or more after the reply: wait for the last token's
  // sample event on the host lane, however loaded the machine is.
  wait_for_batches([&](const std::vector<Batch>& got) {
    int host_lane = -1, samples = 0;
    for (const Json& l : got.front().data["lanes"])
      if (l["name"] == "host") host_lane = l["id"].get<int>();
    for (const Batch& b : got)
      for (const Json& e : b.data["events"]) samples += e["lane"] == host_lane && e["kind"] == "sample";
    return samples >= kTokens;
  });
  stop = true;
  reader.join();

  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_FALSE(batches.empty());
  std::map<std::string, int> lane_id;
  for (const Json& l : batches.front().data["lanes"]) lane_id[l["name"].get<std::string>()] = l["id"].get<int>();
  ASSERT_TRUE(lane_id.count("gpu0") && lane_id.count("gpu1") && lane_id.count("host"));
  std::map<int, std::map<std::string, int>> kinds;  // lane -> kind -> count
  int memory_snapshots = 0, during = 0;
  for (const Batch& b : batches) {
    ASSERT_TRUE(b.data.is_object());
    for (const Json& e : b.data["events"]) ++kinds[e["lane"].get<int>()][e["kind"].get<std::string>()];
    memory_snapshots += static_cast<int>(b.data["memory"].size());
    if (b.at >= t0 && b.at <= t1) ++during;
  }
  const int gpu0 = lane_id["gpu0"], gpu1 = lane_id["gpu1"], host = lane_id["host"];
  // gpu0 has the embedding and the first blocks, gpu1 the last blocks and the head.
  EXPECT_GE(kinds[gpu0]["compute"], kTokens) << "gpu0 computed too little";
  EXPECT_GE(kinds[gpu1]["compute"], kTokens) << "gpu1 computed too little";
  EXPECT_GE(kinds[gpu0]["embed"], kTokens);
  EXPECT_GE(kinds[gpu1]["head"], kTokens);
  EXPECT_GE(kinds[gpu0]["transfer"], kTokens) << "hidden states cross from gpu0 to gpu1";
  EXPECT_GE(kinds[host]["sample"], kTokens);
  EXPECT_GT(memory_snapshots, 2);
  // The stream sends while the generation runs, not only once it has ended. Its rate (a batch per
  // 50 ms when the machine keeps up) depends on the load, so it is printed, not bounded.
  const double seconds = std::chrono::duration<double>(t1 - t0).count();
  std::printf("trace stream: %d batches in %.2f s of generation (%.1f per s)\n", during, seconds, during / seconds);
  EXPECT_GE(during, 2) << "the trace stream sent nothing while the " << kTokens << " tokens were generated";
}

Json layers_on(const std::vector<std::pair<Json, std::string>>& ranges) {
  Json layers = Json::array();
  for (const auto& [range, device] : ranges) layers.push_back({{"layers", range}, {"device", device}});
  return layers;
}

TEST(ServeControl, PutPlacementMovesLayersAndKeepsTheText) {
  ServerProcess server({"-m", stories_model(), "--devices", "cpu,sim:gpu0:1GiB,sim:gpu1:1GiB", "--parallel", "2"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();
  Reply before = post(port, "/v1/chat/completions", chat_body("Once upon a time", 40));
  ASSERT_EQ(before.status, 200);
  const std::string text = before.json()["choices"][0]["message"]["content"].get<std::string>();

  Json placement = get(port, "/strata/v1/placement").json();
  ASSERT_TRUE(placement.contains("layers")) << placement.dump();
  const Json original = placement;
  placement["layers"] = layers_on({{"0-1", "gpu1"}, {"2-3", "cpu"}, {4, "gpu0"}});
  placement["embedding"] = {{"device", "gpu1"}};
  Reply put = request(port, "PUT", "/strata/v1/placement", placement.dump());
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_GT(put.json()["moved_layers"].get<int>(), 0);
  EXPECT_EQ(put.json()["placement"]["layers"], placement["layers"]);
  const Json now = get(port, "/strata/v1/placement").json();
  EXPECT_EQ(now["layers"], placement["layers"]);
  EXPECT_EQ(now["embedding"]["device"], "gpu1");
  bool cpu_has_kv = false;
  const Json put_reply = put.json();
  for (const Json& m : put_reply["memory"]) cpu_has_kv = cpu_has_kv || (m["device"] == "cpu" && m["kv"].get<uint64_t>() > 0);
  EXPECT_TRUE(cpu_has_kv) << put.json()["memory"].dump();

  Reply after = post(port, "/v1/chat/completions", chat_body("Once upon a time", 40));
  ASSERT_EQ(after.status, 200);
  EXPECT_EQ(after.json()["choices"][0]["message"]["content"], text);
  Streamed s = stream_completion(port, "/v1/chat/completions", chat_body("Once upon a time", 40));
  EXPECT_EQ(s.text, text);

  // Putting the same placement again moves nothing; a bad one is a 400 and changes nothing.
  Reply same = request(port, "PUT", "/strata/v1/placement", placement.dump());
  ASSERT_EQ(same.status, 200) << same.body;
  EXPECT_EQ(same.json()["moved_layers"], 0);
  Json bad = placement;
  bad["layers"] = layers_on({{"0-4", "gpu7"}});
  Reply rejected = request(port, "PUT", "/strata/v1/placement", bad.dump());
  EXPECT_EQ(rejected.status, 400) << rejected.body;
  EXPECT_TRUE(rejected.json().contains("error"));
  EXPECT_EQ(get(port, "/strata/v1/placement").json()["layers"], placement["layers"]);
}

TEST(ServeControl, EstimateSaysWhetherAPlacementFitsWithoutApplyingIt) {
  ServerProcess server({"-m", stories_model(), "--devices", "cpu,sim:gpu0:1GiB,sim:gpu1:1GiB"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();
  const Json current = get(port, "/strata/v1/placement").json();

  Reply ok = post(port, "/strata/v1/placement/estimate", current);
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ok.json()["fits"], true);
  EXPECT_TRUE(ok.json()["error"].is_null());
  EXPECT_TRUE(ok.json()["cost"].is_object());
  // What the GUI's placement editor shows besides tokens/s: stage boundaries and bytes per token
  // (n_embd 64 x 4 per boundary; the default split has no tensor group and no KV elsewhere).
  const Json cost = ok.json()["cost"];
  ASSERT_TRUE(cost["boundaries"].is_number_integer());
  EXPECT_EQ(cost["transfer_bytes_per_token"].get<uint64_t>(), cost["boundaries"].get<uint64_t>() * 64 * 4);

  // Every block and its KV cache for 4 x 8M positions on gpu0: far more than 1 GiB.
  Json huge = current;
  huge["n_ctx"] = 1 << 23;
  huge["embedding"] = {{"device", "gpu0"}};
  huge["head"] = {{"device", "gpu0"}};
  huge["layers"] = layers_on({{"0-4", "gpu0"}});
  Reply no = post(port, "/strata/v1/placement/estimate", huge);
  ASSERT_EQ(no.status, 200) << no.body;
  const Json j = no.json();
  EXPECT_EQ(j["fits"], false);
  EXPECT_GT(j["shortfall_bytes"]["gpu0"].get<uint64_t>(), uint64_t{1} << 30);
  EXPECT_NE(j["error"].get<std::string>().find("gpu0"), std::string::npos) << j["error"];
  EXPECT_EQ(get(port, "/strata/v1/placement").json(), current) << "the estimate must not apply anything";

  Reply plan = post(port, "/strata/v1/plan", {{"goal", "fit"}});
  ASSERT_EQ(plan.status, 200) << plan.body;
  EXPECT_TRUE(plan.json()["placement"].contains("layers"));
  EXPECT_FALSE(plan.json()["explanation"].empty());
  Reply devices = get(port, "/strata/v1/devices");
  ASSERT_EQ(devices.status, 200);
  ASSERT_EQ(devices.json()["devices"].size(), 3u);
  EXPECT_EQ(devices.json()["devices"][1]["id"], "gpu0");
  EXPECT_EQ(devices.json()["devices"][1]["simulated"], true);
  EXPECT_EQ(devices.json()["devices"][1]["bytes_total"], uint64_t{1} << 30);
  // The fields of real GPUs, empty for the CPU and simulated devices; the CUDA runtime's summary.
  const Json device_list = devices.json();
  for (const Json& d : device_list["devices"]) {
    SCOPED_TRACE(d.dump());
    EXPECT_EQ(d["compute_capability"], "");
    EXPECT_EQ(d["ordinal"], -1);
    EXPECT_EQ(d["peers"], Json::array());
    EXPECT_EQ(d["failed"], false);
    EXPECT_EQ(d["failure"], "");
  }
  const Json& cuda = device_list["cuda"];
#ifdef STRATA_BUILDS_CUDA_MODULE
  EXPECT_EQ(cuda["compiled"], true);
#else
  EXPECT_EQ(cuda["compiled"], false);
  EXPECT_EQ(cuda["device_count"], 0);
#endif
  EXPECT_FALSE(cuda["description"].get<std::string>().empty());
  EXPECT_GE(cuda["device_count"].get<int>(), 0);
  Reply trace = get(port, "/strata/v1/trace.json?seconds=60");
  ASSERT_EQ(trace.status, 200);
  EXPECT_TRUE(trace.json().contains("traceEvents"));
}

TEST(ServeControl, UnloadAndLoad) {
  ServerProcess server({"-m", stories_model()});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const int port = server.port();
  const std::string text =
      post(port, "/v1/chat/completions", chat_body("Once upon a time", 20)).json()["choices"][0]["message"]["content"];
  Reply unloaded = post(port, "/strata/v1/model/unload", Json::object());
  ASSERT_EQ(unloaded.status, 200) << unloaded.body;
  EXPECT_EQ(unloaded.json()["state"], "empty");
  EXPECT_EQ(post(port, "/v1/chat/completions", chat_body("Once upon a time", 20)).status, 503);
  EXPECT_EQ(get(port, "/v1/models").json()["data"].size(), 0u);
  Reply missing = post(port, "/strata/v1/model/load", {{"path", "/nonexistent/model.gguf"}});
  EXPECT_EQ(missing.status, 400) << missing.body;  // a bad path is the request's fault (issue 15)
  EXPECT_EQ(missing.json()["error"]["param"], "path");
  Reply loaded = post(port, "/strata/v1/model/load", {{"path", stories_model()}, {"placement", nullptr}, {"n_seq", 2}});
  ASSERT_EQ(loaded.status, 200) << loaded.body;
  EXPECT_EQ(loaded.json()["state"], "ready");
  EXPECT_EQ(loaded.json()["queue"]["slots"], 2);
  EXPECT_EQ(post(port, "/v1/chat/completions", chat_body("Once upon a time", 20)).json()["choices"][0]["message"]["content"],
            text);
}

TEST(ServeControl, RefusesAnOpenAddressWithoutAKey) {
  CliRun r = engine({"serve", "-m", stories_model(), "--host", "0.0.0.0", "--port", "0"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--api-key"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("listening"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace strata::test

namespace strata::test {
namespace {

TEST(ServeInspect, SummarizesAFileAndStatusCarriesLayerSizes) {
  ServerProcess server({"-m", stories_model()});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  Reply r = post(server.port(), "/strata/v1/models/inspect", {{"path", stories_model()}, {"n_ctx", 256}});
  ASSERT_EQ(r.status, 200) << r.body;
  const Json j = r.json();
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_TRUE(j["runnable"].get<bool>());
  EXPECT_EQ(j["n_layers"], 5);
  EXPECT_EQ(j["types"]["f32"]["tensors"], 48);
  EXPECT_EQ(j["n_ctx"], 256);
  // KV: 5 blocks x 256 positions x (2 x 32 elements) x 2 bytes (the default f16 cache).
  EXPECT_EQ(j["memory"]["kv"].get<uint64_t>(), 5u * 256u * 2u * 32u * 2u);
  EXPECT_EQ(post(server.port(), "/strata/v1/models/inspect", {{"path", "/nonexistent.gguf"}}).status, 400);

  const Json status = get(server.port(), "/strata/v1/status").json();
  const Json& m = status["model"];
  ASSERT_EQ(m["layer_bytes"].size(), 5u);
  uint64_t sum = m["embedding_bytes"].get<uint64_t>() + m["head_bytes"].get<uint64_t>();
  for (const auto& b : m["layer_bytes"]) sum += b.get<uint64_t>();
  EXPECT_EQ(sum, m["weight_bytes"].get<uint64_t>());  // rope_freqs: none in this model
  EXPECT_EQ(m["kv_bytes_per_token"], 2 * 32 * 2);  // K and V, 32 f16 elements each
  EXPECT_EQ(m["kv_type"], "f16");
  EXPECT_EQ(m["n_embd"], 64);
  // A dense model: no experts; each block's parts sum to its bytes, the FFN part being the dense FFN.
  EXPECT_EQ(m["n_expert"], 0);
  EXPECT_EQ(m["n_expert_used"], 0);
  ASSERT_EQ(m["layer_parts"].size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    const Json& p = m["layer_parts"][i];
    EXPECT_EQ(p["experts_bytes"], 0u);
    // stories260K (F32, dim 64, 8 heads of 8, 4 KV heads, ffn 172): norms 64, q/o 64x64, k/v 32x64;
    // FFN 3 x 172 x 64 and its norm, in bytes.
    EXPECT_EQ(p["attention_bytes"], 4u * (64 + 2 * 64 * 64 + 2 * 32 * 64));
    EXPECT_EQ(p["ffn_bytes"], 4u * (64 + 3 * 172 * 64));
    EXPECT_EQ(p["attention_bytes"].get<uint64_t>() + p["ffn_bytes"].get<uint64_t>(), m["layer_bytes"][i].get<uint64_t>());
  }
}

// A mixture-of-experts model: its expert counts and the routed experts' bytes per block, which the
// placement editor shows as a part of its own (and splits by index ranges).
TEST(ServeInspect, StatusCarriesExpertCountsAndPartSizes) {
  const auto path = temp_dir("serve_moe") / "moe.gguf";
  if (!std::filesystem::exists(path)) {
    CliRun r = engine({"make-model", "--arch", "qwen3moe", "--vocab-from", stories_model(), "--dim", "64", "--layers", "3",
                       "--heads", "4", "--kv-heads", "2", "--ffn", "128", "--experts", "8", "--experts-used", "2",
                       "--expert-ff", "32", "--ctx", "256", "--type", "f32", "--seed", "3", "-o", path.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  ServerProcess server({"-m", path.string(), "--ctx", "64"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const Json m = get(server.port(), "/strata/v1/status").json()["model"];
  EXPECT_EQ(m["architecture"], "qwen3moe");
  EXPECT_EQ(m["n_expert"], 8);
  EXPECT_EQ(m["n_expert_used"], 2);
  ASSERT_EQ(m["layer_parts"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const Json& p = m["layer_parts"][i];
    // 8 experts x (gate, up: 32 x 64; down: 64 x 32) f32.
    EXPECT_EQ(p["experts_bytes"], 8u * 3u * 32u * 64u * 4u);
    // FFN norm and router (8 x 64), f32; qwen3moe has no shared expert.
    EXPECT_EQ(p["ffn_bytes"], 4u * (64 + 8 * 64));
    EXPECT_EQ(p["attention_bytes"].get<uint64_t>() + p["ffn_bytes"].get<uint64_t>() + p["experts_bytes"].get<uint64_t>(),
              m["layer_bytes"][i].get<uint64_t>());
  }
}

}  // namespace
}  // namespace strata::test
