// tests/engine/trace/test_trace_summary.cpp — per-lane summary math on hand-made events: busy as
// a union of spans, bubbles, bytes, tokens, windows; and the text table.
#include <gtest/gtest.h>

#include "engine/trace/trace_summary.h"

namespace strata::trace {
namespace {

Event span(int32_t lane, EventKind kind, int64_t start, int64_t end, int64_t token = -1, int32_t seq = 0,
           int32_t n_tokens = 1) {
  Event e;
  e.lane = lane;
  e.kind = kind;
  e.start_ns = start;
  e.duration_ns = end - start;
  e.token = token;
  e.seq = token >= 0 ? seq : -1;
  e.n_tokens = n_tokens;
  return e;
}

// lane 0 gpu0 (sim): compute [0,100) and [50,150) overlap, idle [150,200), a 4-token prompt
//   pass [200,300), a 1000-byte transfer to lane 1 [300,350).
// lane 1 gpu1 (sim): compute [400,500) and [500,600), an 4096-byte all-reduce [600,700).
// lane 2 host: nothing.
struct Fixture {
  Recorder r{64};
  Fixture() {
    r.add_lane("gpu0", true);
    r.add_lane("gpu1", true);
    r.add_lane("host", false);
    r.record(span(0, EventKind::Compute, 0, 100, 0));
    r.record(span(0, EventKind::Compute, 50, 150, 0));  // same (seq, token): one token
    r.record(span(0, EventKind::Idle, 150, 200));
    r.record(span(0, EventKind::Compute, 200, 300, 1, 0, 4));
    Event t = span(0, EventKind::Transfer, 300, 350);
    t.bytes = 1000;
    t.peer_lane = 1;
    r.record(t);
    r.record(span(1, EventKind::Compute, 400, 500, 0));
    r.record(span(1, EventKind::Compute, 500, 600, 1));
    Event ar = span(1, EventKind::AllReduce, 600, 700, 1);
    ar.bytes = 4096;
    r.record(ar);
  }
};

TEST(TraceSummary, DefaultWindowBusyUnionBubblesBytesTokens) {
  Fixture f;
  const auto s = summarize(f.r);
  ASSERT_EQ(s.size(), 3u);

  const LaneSummary& g0 = s[0];
  EXPECT_EQ(g0.lane, 0);
  EXPECT_EQ(g0.label, "gpu0 (simulated)");
  EXPECT_TRUE(g0.simulated);
  EXPECT_EQ(g0.window_start_ns, 0);
  EXPECT_EQ(g0.window_end_ns, 700);
  EXPECT_EQ(g0.first_ns, 0);
  EXPECT_EQ(g0.last_ns, 350);
  EXPECT_EQ(g0.busy_ns, 300);    // [0,150) + [200,350): the overlap counted once, idle not busy
  EXPECT_EQ(g0.bubble_ns, 50);   // the idle [150,200)
  EXPECT_DOUBLE_EQ(g0.busy_pct, 100.0 * 300 / 700);
  EXPECT_DOUBLE_EQ(g0.bubble_pct, 100.0 * 50 / 700);
  EXPECT_EQ(g0.bytes_sent, 1000u);
  EXPECT_EQ(g0.bytes_received, 0u);
  EXPECT_EQ(g0.events, 5u);
  EXPECT_EQ(g0.tokens, 5);       // token 0 once + a 4-token pass
  EXPECT_DOUBLE_EQ(g0.ns_per_token, 60.0);

  const LaneSummary& g1 = s[1];
  EXPECT_EQ(g1.label, "gpu1 (simulated)");
  EXPECT_EQ(g1.busy_ns, 300);
  EXPECT_EQ(g1.first_ns, 400);
  EXPECT_EQ(g1.last_ns, 700);
  EXPECT_EQ(g1.bubble_ns, 0);
  EXPECT_EQ(g1.bytes_received, 1000u);
  EXPECT_EQ(g1.bytes_sent, 0u);
  EXPECT_EQ(g1.bytes_all_reduce, 4096u);
  EXPECT_EQ(g1.tokens, 2);
  EXPECT_DOUBLE_EQ(g1.ns_per_token, 150.0);

  const LaneSummary& host = s[2];
  EXPECT_EQ(host.label, "host");
  EXPECT_FALSE(host.simulated);
  EXPECT_EQ(host.events, 0u);
  EXPECT_EQ(host.busy_ns, 0);
  EXPECT_EQ(host.bubble_ns, 0);
  EXPECT_EQ(host.tokens, 0);
  EXPECT_DOUBLE_EQ(host.busy_pct, 0.0);
  EXPECT_DOUBLE_EQ(host.ns_per_token, 0.0);
}

TEST(TraceSummary, ExplicitWindowClipsSpans) {
  Fixture f;
  const auto s = summarize(f.r, 100, 250);
  ASSERT_EQ(s.size(), 3u);
  const LaneSummary& g0 = s[0];
  EXPECT_EQ(g0.window_start_ns, 100);
  EXPECT_EQ(g0.window_end_ns, 250);
  EXPECT_EQ(g0.events, 4u);  // [0,100) touches the window; the transfer [300,350) does not
  EXPECT_EQ(g0.busy_ns, 100);  // [100,150) + [200,250)
  EXPECT_EQ(g0.first_ns, 100);
  EXPECT_EQ(g0.last_ns, 250);
  EXPECT_EQ(g0.bubble_ns, 50);
  EXPECT_DOUBLE_EQ(g0.busy_pct, 100.0 * 100 / 150);
  EXPECT_DOUBLE_EQ(g0.bubble_pct, 100.0 * 50 / 150);
  EXPECT_EQ(g0.bytes_sent, 0u);
  EXPECT_EQ(s[1].events, 0u);
  EXPECT_EQ(s[1].bytes_received, 0u);
}

TEST(TraceSummary, NestedSpansAreNotDoubleCounted) {
  // A stage span [0,1000) containing layer spans [100,200), [200,300), [900,1100).
  std::vector<Event> events = {span(0, EventKind::Compute, 0, 1000), span(0, EventKind::Compute, 100, 200),
                               span(0, EventKind::Compute, 200, 300), span(0, EventKind::Compute, 900, 1100),
                               span(0, EventKind::Compute, 1500, 1600)};
  const auto s = summarize_events(events, {LaneInfo{0, "cpu", false}});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].busy_ns, 1200);   // [0,1100) + [1500,1600)
  EXPECT_EQ(s[0].bubble_ns, 400);  // [1100,1500)
  EXPECT_EQ(s[0].window_end_ns, 1600);
  EXPECT_DOUBLE_EQ(s[0].busy_pct, 75.0);
  EXPECT_DOUBLE_EQ(s[0].bubble_pct, 25.0);
}

TEST(TraceSummary, EmptyAndUnregisteredLanes) {
  EXPECT_TRUE(summarize_events({}, {}).empty());
  const auto s = summarize_events({span(4, EventKind::Sample, 10, 20, 7)}, {});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].lane, 4);
  EXPECT_EQ(s[0].label, "lane 4");
  EXPECT_EQ(s[0].busy_ns, 10);
  EXPECT_DOUBLE_EQ(s[0].busy_pct, 100.0);
  EXPECT_EQ(s[0].tokens, 1);
}

TEST(TraceSummary, FormatsATable) {
  Fixture f;
  const std::string text = format_summary(summarize(f.r));
  EXPECT_NE(text.find("busy %"), std::string::npos);
  EXPECT_NE(text.find("gpu0 (simulated)"), std::string::npos);
  EXPECT_NE(text.find("host"), std::string::npos);
  EXPECT_NE(text.find("1000 B"), std::string::npos);
  EXPECT_NE(text.find("4 KiB"), std::string::npos);
  EXPECT_NE(text.find("42.9"), std::string::npos);  // gpu0 busy 300/700
  EXPECT_NE(text.find("window 0.001 ms"), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 5);  // header, 3 lanes, window
}

}  // namespace
}  // namespace strata::trace
