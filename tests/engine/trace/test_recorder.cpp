// tests/engine/trace/test_recorder.cpp — the event ring: lanes, overwrite and dropped counts,
// concurrent writers (no loss, no torn events), spans, cursors, memory snapshots, disabling.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "engine/trace/recorder.h"

namespace strata::trace {
namespace {

Event make_event(int32_t lane, int64_t token, int64_t start_ns, int64_t duration_ns = 10) {
  Event e;
  e.lane = lane;
  e.kind = EventKind::Compute;
  e.layer = static_cast<int32_t>(token % 1000);
  e.seq = lane;
  e.token = token;
  e.start_ns = start_ns;
  e.duration_ns = duration_ns;
  e.bytes = static_cast<uint64_t>(token) * 3;
  e.peer_lane = static_cast<int32_t>(token % 7);
  e.n_tokens = static_cast<int32_t>(token % 5) + 1;
  return e;
}

// Every field derives from (lane, token): a torn copy would break one of these.
void expect_consistent(const Event& e) {
  EXPECT_EQ(e.kind, EventKind::Compute);
  EXPECT_EQ(e.seq, e.lane);
  EXPECT_EQ(e.layer, e.token % 1000);
  EXPECT_EQ(e.bytes, static_cast<uint64_t>(e.token) * 3);
  EXPECT_EQ(e.peer_lane, e.token % 7);
  EXPECT_EQ(e.n_tokens, e.token % 5 + 1);
  EXPECT_EQ(e.duration_ns, 10);
}

TEST(TraceRecorder, LanesGetConsecutiveIdsAndLabels) {
  Recorder r(64);
  EXPECT_EQ(r.add_lane("cpu", false), 0);
  EXPECT_EQ(r.add_lane("gpu0", true), 1);
  EXPECT_EQ(r.add_lane("host", false), 2);
  ASSERT_EQ(r.lanes().size(), 3u);
  EXPECT_EQ(r.lanes()[1].id, 1);
  EXPECT_EQ(r.lanes()[1].name, "gpu0");
  EXPECT_TRUE(r.lanes()[1].simulated);
  EXPECT_FALSE(r.lanes()[0].simulated);
  EXPECT_EQ(r.lane_label(0), "cpu");
  EXPECT_EQ(r.lane_label(1), "gpu0 (simulated)");
  EXPECT_EQ(r.lane_label(9), "lane 9");
}

TEST(TraceRecorder, CapacityRoundsUpToPowerOfTwo) {
  EXPECT_EQ(Recorder(1000).capacity(), 1024u);
  EXPECT_EQ(Recorder(1024).capacity(), 1024u);
  EXPECT_EQ(Recorder(1).capacity(), 2u);
}

TEST(TraceRecorder, RecordsAllFieldsExactly) {
  Recorder r(16);
  const Event e = make_event(2, 123, 456789);
  r.record(e);
  const auto events = r.snapshot();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].lane, 2);
  EXPECT_EQ(events[0].token, 123);
  EXPECT_EQ(events[0].start_ns, 456789);
  EXPECT_EQ(events[0].layer, 123);
  EXPECT_EQ(events[0].bytes, 369u);
  EXPECT_EQ(events[0].peer_lane, 4);
  EXPECT_EQ(events[0].n_tokens, 4);
  EXPECT_EQ(r.dropped(), 0u);
  EXPECT_EQ(r.newest_sequence(), 1u);
}

TEST(TraceRecorder, RingKeepsNewestAndCountsDropped) {
  Recorder r(16);
  for (int i = 0; i < 40; ++i) r.record(make_event(0, i, 1000 + i));
  const auto events = r.snapshot();
  ASSERT_EQ(events.size(), 16u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(events[static_cast<size_t>(i)].token, 24 + i);
  EXPECT_EQ(r.dropped(), 24u);
  EXPECT_EQ(r.newest_sequence(), 40u);
}

TEST(TraceRecorder, SnapshotIsInStartOrderAndEventsSinceFilters) {
  Recorder r(64);
  // Recorded in end order (as spans do): the outer span, which started first, comes last.
  r.record(make_event(0, 1, 300));
  r.record(make_event(0, 2, 100));
  r.record(make_event(0, 3, 200));
  r.record(make_event(0, 4, 200));
  const auto all = r.snapshot();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].token, 2);
  EXPECT_EQ(all[1].token, 3);  // ties keep recording order
  EXPECT_EQ(all[2].token, 4);
  EXPECT_EQ(all[3].token, 1);
  const auto late = r.events_since(200);
  ASSERT_EQ(late.size(), 3u);
  EXPECT_EQ(late[0].token, 3);
  EXPECT_EQ(late[2].token, 1);
  EXPECT_TRUE(r.events_since(301).empty());
}

TEST(TraceRecorder, FourThreadsLoseNothingWhenCapacitySuffices) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 50000;
  Recorder r(kThreads * kPerThread);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&r, t] {
      for (int i = 0; i < kPerThread; ++i) r.record(make_event(t, i, i));
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(r.dropped(), 0u);
  const auto events = r.snapshot();
  ASSERT_EQ(events.size(), static_cast<size_t>(kThreads * kPerThread));
  std::vector<std::vector<int>> seen(kThreads, std::vector<int>(kPerThread, 0));
  for (const Event& e : events) {
    ASSERT_GE(e.lane, 0);
    ASSERT_LT(e.lane, kThreads);
    ASSERT_GE(e.token, 0);
    ASSERT_LT(e.token, kPerThread);
    ++seen[static_cast<size_t>(e.lane)][static_cast<size_t>(e.token)];
    expect_consistent(e);
  }
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kPerThread; ++i) ASSERT_EQ(seen[static_cast<size_t>(t)][static_cast<size_t>(i)], 1) << t << " " << i;
}

TEST(TraceRecorder, FourThreadsOverwritingKeepWholeEvents) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 100000;
  Recorder r(1024);
  std::atomic<bool> stop{false};
  std::atomic<size_t> read_torn{0};
  // A reader copies the ring while it is being overwritten: every copy must be a whole event.
  std::thread reader([&] {
    while (!stop.load()) {
      for (const Event& e : r.snapshot()) {
        if (e.bytes != static_cast<uint64_t>(e.token) * 3 || e.seq != e.lane || e.layer != e.token % 1000) ++read_torn;
      }
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&r, t] {
      for (int i = 0; i < kPerThread; ++i) r.record(make_event(t, i, i));
    });
  }
  for (auto& th : threads) th.join();
  stop = true;
  reader.join();
  EXPECT_EQ(read_torn.load(), 0u);
  const auto events = r.snapshot();
  EXPECT_EQ(events.size(), 1024u);
  EXPECT_EQ(r.dropped(), static_cast<uint64_t>(kThreads * kPerThread - 1024));
  for (const Event& e : events) expect_consistent(e);
}

TEST(TraceRecorder, SpanRecordsOnDestructionWithDuration) {
  Recorder r(64);
  const int32_t gpu = r.add_lane("gpu0", true);
  const int64_t before = r.now_ns();
  {
    auto span = r.span(gpu, EventKind::Compute, 3, 1, 17);
    EXPECT_TRUE(span.active());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_TRUE(r.snapshot().empty());  // nothing until the span ends
  }
  const int64_t after = r.now_ns();
  const auto events = r.snapshot();
  ASSERT_EQ(events.size(), 1u);
  const Event& e = events[0];
  EXPECT_EQ(e.lane, gpu);
  EXPECT_EQ(e.kind, EventKind::Compute);
  EXPECT_EQ(e.layer, 3);
  EXPECT_EQ(e.seq, 1);
  EXPECT_EQ(e.token, 17);
  EXPECT_GE(e.start_ns, before);
  EXPECT_GE(e.duration_ns, 2'000'000);
  EXPECT_LE(e.start_ns + e.duration_ns, after);
}

TEST(TraceRecorder, SpanSettersMoveEndAndCancel) {
  Recorder r(64);
  {
    auto span = r.span(0, EventKind::Transfer);
    span.set_bytes(16384);
    span.set_peer(1);
    span.set_n_tokens(8);
    Span moved = std::move(span);
    EXPECT_FALSE(span.active());  // NOLINT(bugprone-use-after-move): moved-from is inert
    moved.end();
    moved.end();  // second end records nothing
  }
  {
    auto cancelled = r.span(0, EventKind::Sample);
    cancelled.cancel();
  }
  const auto events = r.snapshot();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, EventKind::Transfer);
  EXPECT_EQ(events[0].bytes, 16384u);
  EXPECT_EQ(events[0].peer_lane, 1);
  EXPECT_EQ(events[0].n_tokens, 8);
  EXPECT_EQ(events[0].layer, -1);
}

TEST(TraceRecorder, SpanNextChainsLayersWithoutGaps) {
  Recorder r(64);
  {
    auto span = r.span(1, EventKind::Embed, -1, 3, 40);
    span.set_n_tokens(4);
    span.set_bytes(99);
    for (int layer = 0; layer < 3; ++layer) span.next(EventKind::Compute, layer);
    span.next(EventKind::Head, -1);
  }
  const auto events = r.snapshot();
  ASSERT_EQ(events.size(), 5u);
  const EventKind kinds[] = {EventKind::Embed, EventKind::Compute, EventKind::Compute, EventKind::Compute,
                             EventKind::Head};
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].kind, kinds[i]);
    EXPECT_EQ(events[i].layer, i == 0 || i == 4 ? -1 : static_cast<int32_t>(i - 1));
    EXPECT_EQ(events[i].lane, 1);
    EXPECT_EQ(events[i].seq, 3);
    EXPECT_EQ(events[i].token, 40);
    EXPECT_EQ(events[i].n_tokens, 4);
    EXPECT_EQ(events[i].bytes, i == 0 ? 99u : 0u);
    EXPECT_GE(events[i].duration_ns, 0);
    if (i > 0) {
      EXPECT_EQ(events[i].start_ns, events[i - 1].end_ns());  // the shared clock read
    }
  }
  Span inert;
  inert.next(EventKind::Compute, 0);
  EXPECT_FALSE(inert.active());
  EXPECT_EQ(r.snapshot().size(), 5u);
}

TEST(TraceRecorder, EventsAfterCursorHasNoDuplicatesOrGaps) {
  Recorder r(8);
  auto b0 = r.events_after(0);
  EXPECT_TRUE(b0.events.empty());
  EXPECT_EQ(b0.next_sequence, 0u);

  for (int i = 0; i < 5; ++i) r.record(make_event(0, i, i));
  auto b1 = r.events_after(0);
  ASSERT_EQ(b1.events.size(), 5u);
  EXPECT_EQ(b1.next_sequence, 5u);
  EXPECT_EQ(b1.missed, 0u);
  EXPECT_EQ(b1.events[4].token, 4);

  auto b2 = r.events_after(b1.next_sequence);
  EXPECT_TRUE(b2.events.empty());
  EXPECT_EQ(b2.next_sequence, 5u);

  for (int i = 5; i < 8; ++i) r.record(make_event(0, i, i));
  auto b3 = r.events_after(b2.next_sequence);
  ASSERT_EQ(b3.events.size(), 3u);
  EXPECT_EQ(b3.events[0].token, 5);
  EXPECT_EQ(b3.next_sequence, 8u);

  // The reader falls behind by more than the ring: the lost events are counted.
  for (int i = 8; i < 30; ++i) r.record(make_event(0, i, i));
  auto b4 = r.events_after(b3.next_sequence);
  EXPECT_EQ(b4.missed, 14u);  // sequences 8..21 overwritten
  ASSERT_EQ(b4.events.size(), 8u);
  EXPECT_EQ(b4.events.front().token, 22);
  EXPECT_EQ(b4.events.back().token, 29);
  EXPECT_EQ(b4.next_sequence, 30u);

  // A cursor from the future is clamped; a cursor from before clear() is not "missed".
  auto b5 = r.events_after(1000);
  EXPECT_TRUE(b5.events.empty());
  EXPECT_EQ(b5.next_sequence, 30u);
  r.clear();
  r.record(make_event(0, 30, 30));
  auto b6 = r.events_after(25);
  EXPECT_EQ(b6.missed, 0u);
  ASSERT_EQ(b6.events.size(), 1u);
  EXPECT_EQ(b6.events[0].token, 30);
  EXPECT_EQ(b6.next_sequence, 31u);
}

TEST(TraceRecorder, StreamingReaderSeesEveryEventOnceWhileWritersRun) {
  constexpr int kThreads = 2;
  constexpr int kPerThread = 100000;
  Recorder r(kThreads * kPerThread);
  std::atomic<int> done{0};
  std::vector<Event> streamed;
  uint64_t missed = 0;
  std::thread reader([&] {
    uint64_t cursor = 0;
    for (;;) {
      const bool last = done.load() == kThreads;
      auto batch = r.events_after(cursor);
      missed += batch.missed;
      streamed.insert(streamed.end(), batch.events.begin(), batch.events.end());
      cursor = batch.next_sequence;
      if (last) break;
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) r.record(make_event(t, i, i));
      ++done;
    });
  }
  for (auto& th : writers) th.join();
  reader.join();
  EXPECT_EQ(missed, 0u);
  ASSERT_EQ(streamed.size(), static_cast<size_t>(kThreads * kPerThread));
  std::set<std::pair<int32_t, int64_t>> unique;
  for (const Event& e : streamed) {
    expect_consistent(e);
    unique.insert({e.lane, e.token});
  }
  EXPECT_EQ(unique.size(), streamed.size());
}

TEST(TraceRecorder, DisabledRecorderRecordsNothing) {
  Recorder r(64);
  r.set_enabled(false);
  EXPECT_FALSE(r.enabled());
  r.record(make_event(0, 1, 1));
  {
    auto span = r.span(0, EventKind::Compute, 1);
    EXPECT_FALSE(span.active());
  }
  r.record_memory(MemorySnapshot{0, 5, 1, 2, 3, 4, 5, 6, 21});
  EXPECT_TRUE(r.snapshot().empty());
  EXPECT_TRUE(r.memory_snapshot().empty());
  EXPECT_EQ(r.newest_sequence(), 0u);
  EXPECT_EQ(r.dropped(), 0u);

  r.set_enabled(true);
  r.record(make_event(0, 2, 2));
  ASSERT_EQ(r.snapshot().size(), 1u);
  EXPECT_EQ(r.snapshot()[0].token, 2);
}

TEST(TraceRecorder, MemorySnapshotsAreARing) {
  Recorder r(64, 4);
  for (int i = 0; i < 6; ++i) {
    MemorySnapshot m;
    m.lane = i % 2;
    m.time_ns = 100 * i;
    m.weights = static_cast<uint64_t>(i);
    r.record_memory(m);
  }
  const auto mem = r.memory_snapshot();
  ASSERT_EQ(mem.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(mem[static_cast<size_t>(i)].weights, static_cast<uint64_t>(i + 2));
    EXPECT_EQ(mem[static_cast<size_t>(i)].time_ns, 100 * (i + 2));
  }
  EXPECT_EQ(r.memory_dropped(), 2u);
}

TEST(TraceRecorder, ClearForgetsEventsKeepsLanes) {
  Recorder r(8, 4);
  r.add_lane("cpu", false);
  for (int i = 0; i < 20; ++i) r.record(make_event(0, i, i));
  r.record_memory(MemorySnapshot{});
  EXPECT_EQ(r.dropped(), 12u);
  r.clear();
  EXPECT_TRUE(r.snapshot().empty());
  EXPECT_TRUE(r.memory_snapshot().empty());
  EXPECT_EQ(r.dropped(), 0u);
  EXPECT_EQ(r.lanes().size(), 1u);
  r.record(make_event(0, 99, 5));
  const auto events = r.snapshot();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].token, 99);
}

TEST(TraceRecorder, EventKindNames) {
  EXPECT_STREQ(event_kind_name(EventKind::Compute), "compute");
  EXPECT_STREQ(event_kind_name(EventKind::Transfer), "transfer");
  EXPECT_STREQ(event_kind_name(EventKind::AllReduce), "all-reduce");
  EXPECT_STREQ(event_kind_name(EventKind::Tokenize), "tokenize");
  EXPECT_STREQ(event_kind_name(EventKind::Sample), "sample");
  EXPECT_STREQ(event_kind_name(EventKind::Detokenize), "detokenize");
  EXPECT_STREQ(event_kind_name(EventKind::Embed), "embed");
  EXPECT_STREQ(event_kind_name(EventKind::Head), "head");
  EXPECT_STREQ(event_kind_name(EventKind::Idle), "idle");
}

}  // namespace
}  // namespace strata::trace
