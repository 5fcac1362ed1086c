// tests/engine/trace/test_chrome_trace.cpp — the Chrome trace-event export: valid JSON, lane
// metadata, exact ts/dur in µs, args, transfer flows with bytes, memory counters, files.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <map>
#include <sstream>
#include <unistd.h>

#include "engine/trace/chrome_trace.h"
#include "engine/trace/json_text.h"

namespace strata::trace {
namespace {

using Json = nlohmann::json;

std::vector<Json> with_ph(const Json& doc, const std::string& ph) {
  std::vector<Json> out;
  for (const Json& e : doc.at("traceEvents"))
    if (e.at("ph") == ph) out.push_back(e);
  return out;
}

// gpu0 (sim), gpu1 (sim), host: a layer, a transfer gpu0 -> gpu1, a layer on gpu1, an
// all-reduce, a sample on the host, and two memory snapshots.
struct Fixture {
  Recorder r{256};
  int32_t gpu0 = r.add_lane("gpu0", true);
  int32_t gpu1 = r.add_lane("gpu1", true);
  int32_t host = r.add_lane("host", false);

  Fixture() {
    Event layer;
    layer.lane = gpu0;
    layer.kind = EventKind::Compute;
    layer.layer = 3;
    layer.seq = 2;
    layer.token = 41;
    layer.start_ns = 1'234'567;
    layer.duration_ns = 2'500;
    r.record(layer);

    Event transfer;
    transfer.lane = gpu0;
    transfer.kind = EventKind::Transfer;
    transfer.seq = 2;
    transfer.token = 41;
    transfer.start_ns = 1'237'067;
    transfer.duration_ns = 1'001;
    transfer.bytes = 16384;
    transfer.peer_lane = gpu1;
    r.record(transfer);

    Event layer2 = layer;
    layer2.lane = gpu1;
    layer2.layer = 4;
    layer2.start_ns = 1'238'100;
    layer2.duration_ns = 999;
    layer2.n_tokens = 32;
    r.record(layer2);

    Event reduce;
    reduce.lane = gpu1;
    reduce.kind = EventKind::AllReduce;
    reduce.layer = 4;
    reduce.start_ns = 1'239'099;
    reduce.duration_ns = 7;
    reduce.bytes = 8192;
    r.record(reduce);

    Event sample;
    sample.lane = host;
    sample.kind = EventKind::Sample;
    sample.seq = 2;
    sample.token = 42;
    sample.start_ns = 1'240'000;
    sample.duration_ns = 12'345;
    r.record(sample);

    MemorySnapshot m0{gpu0, 1'000'000, 100, 30, 50, 7, 3, 840, 1000};
    MemorySnapshot m1{gpu1, 1'500'000, 200, 10, 10, 5, 0, 775, 1000};
    r.record_memory(m0);
    r.record_memory(m1);
  }
};

TEST(ChromeTrace, ParsesWithLaneMetadata) {
  Fixture f;
  const Json doc = Json::parse(to_chrome_json(f.r));
  EXPECT_EQ(doc.at("displayTimeUnit"), "ns");
  EXPECT_EQ(doc.at("otherData").at("dropped_events"), 0);
  const auto meta = with_ph(doc, "M");
  std::map<int, std::string> names;
  std::map<int, int> sort_index;
  int process_names = 0;
  for (const Json& m : meta) {
    EXPECT_EQ(m.at("pid"), 1);
    if (m.at("name") == "thread_name") names[m.at("tid").get<int>()] = m.at("args").at("name");
    if (m.at("name") == "thread_sort_index") sort_index[m.at("tid").get<int>()] = m.at("args").at("sort_index");
    if (m.at("name") == "process_name") {
      ++process_names;
      EXPECT_EQ(m.at("args").at("name"), "strata");
    }
  }
  EXPECT_EQ(process_names, 1);
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[0], "gpu0 (simulated)");
  EXPECT_EQ(names[1], "gpu1 (simulated)");
  EXPECT_EQ(names[2], "host");
  ASSERT_EQ(sort_index.size(), 3u);
  for (int lane = 0; lane < 3; ++lane) EXPECT_EQ(sort_index[lane], lane);
}

TEST(ChromeTrace, CompleteEventPerSpanWithExactTimesAndArgs) {
  Fixture f;
  const Json doc = Json::parse(to_chrome_json(f.r));
  const auto spans = with_ph(doc, "X");
  ASSERT_EQ(spans.size(), 5u);  // in start order

  const Json& layer = spans[0];
  EXPECT_EQ(layer.at("name"), "layer 3");
  EXPECT_EQ(layer.at("cat"), "compute");
  EXPECT_EQ(layer.at("pid"), 1);
  EXPECT_EQ(layer.at("tid"), 0);
  EXPECT_EQ(layer.at("ts").get<double>(), 1234.567);
  EXPECT_EQ(layer.at("dur").get<double>(), 2.5);
  EXPECT_EQ(layer.at("args").at("layer"), 3);
  EXPECT_EQ(layer.at("args").at("seq"), 2);
  EXPECT_EQ(layer.at("args").at("token"), 41);
  EXPECT_FALSE(layer.at("args").contains("bytes"));
  EXPECT_FALSE(layer.at("args").contains("peer"));
  EXPECT_FALSE(layer.at("args").contains("n_tokens"));

  const Json& transfer = spans[1];
  EXPECT_EQ(transfer.at("name"), "transfer 16 KiB -> gpu1");
  EXPECT_EQ(transfer.at("cat"), "transfer");
  EXPECT_EQ(transfer.at("tid"), 0);
  EXPECT_EQ(transfer.at("ts").get<double>(), 1237.067);
  EXPECT_EQ(transfer.at("dur").get<double>(), 1.001);
  EXPECT_EQ(transfer.at("args").at("bytes"), 16384);
  EXPECT_EQ(transfer.at("args").at("peer"), "gpu1 (simulated)");
  EXPECT_EQ(transfer.at("args").at("peer_lane"), 1);
  EXPECT_FALSE(transfer.at("args").contains("layer"));

  const Json& layer2 = spans[2];
  EXPECT_EQ(layer2.at("name"), "layer 4");
  EXPECT_EQ(layer2.at("tid"), 1);
  EXPECT_EQ(layer2.at("ts").get<double>(), 1238.1);
  EXPECT_EQ(layer2.at("dur").get<double>(), 0.999);
  EXPECT_EQ(layer2.at("args").at("n_tokens"), 32);

  const Json& reduce = spans[3];
  EXPECT_EQ(reduce.at("name"), "all-reduce");
  EXPECT_EQ(reduce.at("cat"), "all-reduce");
  EXPECT_EQ(reduce.at("dur").get<double>(), 0.007);
  EXPECT_EQ(reduce.at("args").at("bytes"), 8192);
  EXPECT_EQ(reduce.at("args").at("layer"), 4);

  const Json& sample = spans[4];
  EXPECT_EQ(sample.at("name"), "sample");
  EXPECT_EQ(sample.at("cat"), "sample");
  EXPECT_EQ(sample.at("tid"), 2);
  EXPECT_EQ(sample.at("ts").get<double>(), 1240.0);
  EXPECT_EQ(sample.at("dur").get<double>(), 12.345);
  EXPECT_EQ(sample.at("args").at("token"), 42);
}

TEST(ChromeTrace, FlowEventsBindTransfersToTheDestinationLane) {
  Fixture f;
  const Json doc = Json::parse(to_chrome_json(f.r));
  const auto starts = with_ph(doc, "s");
  const auto finishes = with_ph(doc, "f");
  ASSERT_EQ(starts.size(), 1u);
  ASSERT_EQ(finishes.size(), 1u);
  EXPECT_EQ(starts[0].at("id"), finishes[0].at("id"));
  EXPECT_EQ(starts[0].at("cat"), "transfer");
  EXPECT_EQ(starts[0].at("tid"), 0);
  EXPECT_EQ(finishes[0].at("tid"), 1);
  EXPECT_EQ(starts[0].at("ts").get<double>(), 1237.067);
  EXPECT_EQ(finishes[0].at("ts").get<double>(), 1238.068);  // transfer end
  EXPECT_EQ(starts[0].at("args").at("bytes"), 16384);
  EXPECT_EQ(finishes[0].at("args").at("bytes"), 16384);
}

TEST(ChromeTrace, MemoryCountersPerLane) {
  Fixture f;
  const Json doc = Json::parse(to_chrome_json(f.r));
  const auto counters = with_ph(doc, "C");
  ASSERT_EQ(counters.size(), 2u);
  EXPECT_EQ(counters[0].at("name"), "memory gpu0 (simulated)");
  EXPECT_EQ(counters[0].at("tid"), 0);
  EXPECT_EQ(counters[0].at("ts").get<double>(), 1000.0);
  const Json& a = counters[0].at("args");
  EXPECT_EQ(a.at("weights"), 100);
  EXPECT_EQ(a.at("kv_used"), 30);
  EXPECT_EQ(a.at("kv_spare"), 20);
  EXPECT_EQ(a.at("scratch"), 7);
  EXPECT_EQ(a.at("other"), 3);
  EXPECT_EQ(a.at("free"), 840);
  // Stacked, the series add up to the device total.
  EXPECT_EQ(a.at("weights").get<int>() + a.at("kv_used").get<int>() + a.at("kv_spare").get<int>() +
                a.at("scratch").get<int>() + a.at("other").get<int>() + a.at("free").get<int>(),
            1000);
  EXPECT_EQ(counters[1].at("name"), "memory gpu1 (simulated)");
  EXPECT_EQ(counters[1].at("args").at("kv_spare"), 0);
}

TEST(ChromeTrace, SinceFiltersSpansFlowsAndCounters) {
  Fixture f;
  const Json doc = Json::parse(to_chrome_json(f.r, 1'238'000));
  EXPECT_EQ(with_ph(doc, "X").size(), 3u);  // layer 4, all-reduce, sample
  EXPECT_EQ(with_ph(doc, "s").size(), 0u);
  const auto counters = with_ph(doc, "C");  // gpu1's snapshot at 1.5 ms only
  ASSERT_EQ(counters.size(), 1u);
  EXPECT_EQ(counters[0].at("tid"), 1);
  EXPECT_EQ(with_ph(doc, "M").size(), 7u);  // process + 2 per lane
}

TEST(ChromeTrace, EmptyRecorderAndOddNamesStayValid) {
  Recorder r(16);
  r.add_lane("we\"ird\\ name\n\x01", false);
  const Json empty = Json::parse(to_chrome_json(r));
  EXPECT_EQ(with_ph(empty, "X").size(), 0u);
  std::string label;
  for (const Json& m : with_ph(empty, "M"))
    if (m.at("name") == "thread_name") label = m.at("args").at("name");
  EXPECT_EQ(label, "we\"ird\\ name\n\x01");

  // An event on an unregistered lane gets a named row too.
  Event e;
  e.lane = 5;
  e.start_ns = -1500;  // before the epoch: a negative ts is still exact
  e.duration_ns = 1;
  r.record(e);
  const Json doc = Json::parse(to_chrome_json(r, INT64_MIN));
  const auto spans = with_ph(doc, "X");
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].at("tid"), 5);
  EXPECT_EQ(spans[0].at("name"), "compute");
  EXPECT_EQ(spans[0].at("ts").get<double>(), -1.5);
  bool lane5 = false;
  for (const Json& m : with_ph(doc, "M"))
    if (m.at("name") == "thread_name" && m.at("tid") == 5) lane5 = m.at("args").at("name") == "lane 5";
  EXPECT_TRUE(lane5);
}

TEST(ChromeTrace, ManyRealSpansParse) {
  Recorder r(1 << 12);
  const int32_t cpu = r.add_lane("cpu", false);
  const int32_t gpu = r.add_lane("gpu0", true);
  for (int token = 0; token < 20; ++token) {
    for (int layer = 0; layer < 16; ++layer) {
      auto span = r.span(layer < 8 ? cpu : gpu, EventKind::Compute, layer, 0, token);
    }
    auto t = r.span(cpu, EventKind::Transfer, -1, 0, token);
    t.set_bytes(4096);
    t.set_peer(gpu);
  }
  const Json doc = Json::parse(to_chrome_json(r));
  EXPECT_EQ(with_ph(doc, "X").size(), 20u * 17u);
  EXPECT_EQ(with_ph(doc, "s").size(), 20u);
  EXPECT_EQ(with_ph(doc, "f").size(), 20u);
  for (const Json& x : with_ph(doc, "X")) EXPECT_GE(x.at("dur").get<double>(), 0.0);
}

TEST(ChromeTrace, WritesFileAndReportsBadPath) {
  Fixture f;
  const auto path = std::filesystem::temp_directory_path() / ("strata_trace_test_" + std::to_string(::getpid()) + ".json");
  ASSERT_TRUE(write_chrome_json(f.r, path.string()).ok());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), to_chrome_json(f.r));
  EXPECT_TRUE(Json::accept(text.str()));
  std::filesystem::remove(path);

  const std::string bad = "/nonexistent-dir-strata/trace.json";
  const Status st = write_chrome_json(f.r, bad);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Code::Io);
  EXPECT_NE(st.error().message.find(bad), std::string::npos);
}

TEST(ChromeTrace, FormatBytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1 KiB");
  EXPECT_EQ(format_bytes(16384), "16 KiB");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(3 * 1024 * 1024 / 2), "1.5 MiB");
  EXPECT_EQ(format_bytes(1024 * 1024 - 1), "1 MiB");
  EXPECT_EQ(format_bytes(uint64_t{24} << 30), "24 GiB");
}

TEST(ChromeTrace, JsonHelpers) {
  std::string s;
  json::append_us(s, 0);
  s += ' ';
  json::append_us(s, 1'234'567);
  s += ' ';
  json::append_us(s, -5);
  s += ' ';
  json::append_us(s, INT64_MIN);
  EXPECT_EQ(s, "0.000 1234.567 -0.005 -9223372036854775.808");
  std::string q;
  json::append_string(q, "a\"b\\c\td\x1f");
  EXPECT_EQ(q, "\"a\\\"b\\\\c\\td\\u001f\"");
}

}  // namespace
}  // namespace strata::trace
