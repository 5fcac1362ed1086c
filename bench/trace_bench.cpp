// bench/trace_bench.cpp — cost of trace recording: record() single-threaded and from 2 threads,
// spans (two clock reads + record), the disabled path, and the Chrome JSON export. Not run by CTest.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "engine/trace/chrome_trace.h"
#include "engine/trace/recorder.h"

using strata::trace::Event;
using strata::trace::EventKind;
using strata::trace::Recorder;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Event sample_event(int32_t lane, int64_t i) {
  Event e;
  e.lane = lane;
  e.kind = EventKind::Compute;
  e.layer = static_cast<int32_t>(i & 31);
  e.seq = 0;
  e.token = i;
  e.start_ns = i * 100;
  e.duration_ns = 90;
  return e;
}

// ns per record() call, each of `threads` threads recording `per_thread` events at once.
double bench_record(Recorder& r, int threads, int64_t per_thread) {
  std::vector<std::thread> pool;
  std::vector<double> secs(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < per_thread; ++i) r.record(sample_event(t, i));
      secs[static_cast<size_t>(t)] = seconds_since(t0);
    });
  }
  for (auto& th : pool) th.join();
  double worst = 0;
  for (double s : secs) worst = std::max(worst, s);
  return worst * 1e9 / static_cast<double>(per_thread);
}

double bench_span(Recorder& r, int64_t n) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) {
    auto span = r.span(0, EventKind::Compute, static_cast<int32_t>(i & 31), 0, i);
  }
  return seconds_since(t0) * 1e9 / static_cast<double>(n);
}

// ns per span when a stage chains its layers with Span::next (one clock read per span).
double bench_chain(Recorder& r, int64_t n) {
  const auto t0 = std::chrono::steady_clock::now();
  auto span = r.span(0, EventKind::Compute, 0, 0, 0);
  for (int64_t i = 1; i < n; ++i) span.next(EventKind::Compute, static_cast<int32_t>(i & 31));
  span.end();
  return seconds_since(t0) * 1e9 / static_cast<double>(n);
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 20'000'000;
  Recorder r(size_t{1} << 20);
  r.add_lane("cpu", false);
  r.add_lane("gpu0", true);

  bench_record(r, 1, 1 << 20);  // warm: every slot written once
  const double one = bench_record(r, 1, n);
  const double two = bench_record(r, 2, n / 2);
  const double span = bench_span(r, n / 4);
  const double chain = bench_chain(r, n / 4);
  auto tc = std::chrono::steady_clock::now();
  int64_t clock_sum = 0;
  for (int64_t i = 0; i < n / 4; ++i) clock_sum += r.now_ns();
  const double clock_ns = seconds_since(tc) * 1e9 / static_cast<double>(n / 4);
  r.set_enabled(false);
  const double disabled = bench_record(r, 1, n);
  const double disabled_span = bench_span(r, n / 4);
  r.set_enabled(true);

  r.clear();
  bench_record(r, 1, 1 << 20);  // a full ring of 1,048,576 events
  auto t0 = std::chrono::steady_clock::now();
  const auto events = r.snapshot();
  const double snap_ms = seconds_since(t0) * 1e3;
  t0 = std::chrono::steady_clock::now();
  const std::string text = strata::trace::to_chrome_json(r);
  const double json_ms = seconds_since(t0) * 1e3;

  std::printf("trace_bench: %lld events per measurement, ring of %zu slots\n", static_cast<long long>(n),
              r.capacity());
  std::printf("record(), 1 thread:            %6.1f ns/event\n", one);
  std::printf("record(), 2 threads at once:   %6.1f ns/event per thread\n", two);
  std::printf("span (2 clock reads + record): %6.1f ns/span\n", span);
  std::printf("Span::next chain (1 clock read):%6.1f ns/span\n", chain);
  std::printf("now_ns() (steady_clock):        %6.1f ns/read (sum %lld)\n", clock_ns, static_cast<long long>(clock_sum % 10));
  std::printf("record(), disabled:            %6.2f ns/event\n", disabled);
  std::printf("span, disabled:                %6.2f ns/span\n", disabled_span);
  std::printf("snapshot of %zu events:      %6.1f ms\n", events.size(), snap_ms);
  std::printf("to_chrome_json of %zu events: %6.1f ms incl. snapshot (%.0f ns/event, %.1f MB)\n", events.size(), json_ms,
              json_ms * 1e6 / static_cast<double>(events.size()), static_cast<double>(text.size()) / 1e6);
  std::printf("200 spans per decode step:     %6.1f us per step (%.1f us chained)\n", 200 * span / 1e3,
              200 * chain / 1e3);
  return 0;
}
