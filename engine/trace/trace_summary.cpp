// engine/trace/trace_summary.cpp — busy time as a union of intervals, bubbles, bytes, tokens.
// Depends on the recorder and chrome_trace.h (format_bytes) only.
#include "engine/trace/trace_summary.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>
#include <utility>

#include "engine/trace/chrome_trace.h"

namespace strata::trace {

namespace {

struct LaneAcc {
  std::vector<std::pair<int64_t, int64_t>> busy;     // clipped [start, end) of non-idle spans
  std::map<std::pair<int32_t, int64_t>, int32_t> tokens;  // (seq, token) -> n_tokens
  int64_t first = INT64_MAX;
  int64_t last = INT64_MIN;
  uint64_t sent = 0, received = 0, all_reduce = 0, events = 0;
};

int64_t union_length(std::vector<std::pair<int64_t, int64_t>>& spans) {
  std::sort(spans.begin(), spans.end());
  int64_t total = 0;
  int64_t cur_start = 0, cur_end = 0;
  bool open = false;
  for (const auto& [s, e] : spans) {
    if (open && s <= cur_end) {
      cur_end = std::max(cur_end, e);
      continue;
    }
    if (open) total += cur_end - cur_start;
    cur_start = s;
    cur_end = e;
    open = true;
  }
  if (open) total += cur_end - cur_start;
  return total;
}

}  // namespace

std::vector<LaneSummary> summarize_events(const std::vector<Event>& events, const std::vector<LaneInfo>& lanes,
                                          bool has_window, int64_t t0, int64_t t1) {
  if (!has_window) {
    t0 = 0;
    t1 = 0;
    if (!events.empty()) {
      t0 = INT64_MAX;
      t1 = INT64_MIN;
      for (const Event& e : events) {
        t0 = std::min(t0, e.start_ns);
        t1 = std::max(t1, e.end_ns());
      }
    }
  }
  if (t1 < t0) std::swap(t0, t1);

  std::map<int32_t, LaneAcc> acc;
  for (const LaneInfo& lane : lanes) acc[lane.id];
  for (const Event& e : events) {
    if (e.start_ns > t1 || e.end_ns() < t0) continue;
    const int64_t s = std::max(e.start_ns, t0);
    const int64_t end = std::min(e.end_ns(), t1);
    LaneAcc& a = acc[e.lane];
    ++a.events;
    a.first = std::min(a.first, s);
    a.last = std::max(a.last, end);
    if (e.kind != EventKind::Idle && end > s) a.busy.emplace_back(s, end);
    if (e.kind == EventKind::Transfer) {
      a.sent += e.bytes;
      if (e.peer_lane >= 0) acc[e.peer_lane].received += e.bytes;
    } else if (e.kind == EventKind::AllReduce) {
      a.all_reduce += e.bytes;
    }
    if (e.token >= 0) {
      int32_t& n = a.tokens[{e.seq, e.token}];
      n = std::max(n, std::max<int32_t>(1, e.n_tokens));
    }
  }

  const int64_t window = t1 - t0;
  std::vector<LaneSummary> out;
  out.reserve(acc.size());
  for (auto& [id, a] : acc) {
    LaneSummary s;
    s.lane = id;
    if (id >= 0 && static_cast<size_t>(id) < lanes.size() && lanes[static_cast<size_t>(id)].id == id) {
      s.label = lanes[static_cast<size_t>(id)].name;
      s.simulated = lanes[static_cast<size_t>(id)].simulated;
      if (s.simulated) s.label += " (simulated)";
    } else {
      s.label = "lane " + std::to_string(id);
    }
    s.window_start_ns = t0;
    s.window_end_ns = t1;
    s.busy_ns = union_length(a.busy);
    if (a.events > 0) {
      s.first_ns = a.first;
      s.last_ns = a.last;
      s.bubble_ns = std::max<int64_t>(0, (a.last - a.first) - s.busy_ns);
    }
    if (window > 0) {
      s.busy_pct = 100.0 * static_cast<double>(s.busy_ns) / static_cast<double>(window);
      s.bubble_pct = 100.0 * static_cast<double>(s.bubble_ns) / static_cast<double>(window);
    }
    s.bytes_sent = a.sent;
    s.bytes_received = a.received;
    s.bytes_all_reduce = a.all_reduce;
    s.events = a.events;
    for (const auto& [key, n] : a.tokens) s.tokens += n;
    if (s.tokens > 0) s.ns_per_token = static_cast<double>(s.busy_ns) / static_cast<double>(s.tokens);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<LaneSummary> summarize(const Recorder& recorder) {
  return summarize_events(recorder.snapshot(), recorder.lanes());
}

std::vector<LaneSummary> summarize(const Recorder& recorder, int64_t t0_ns, int64_t t1_ns) {
  return summarize_events(recorder.snapshot(), recorder.lanes(), true, t0_ns, t1_ns);
}

std::string format_summary(const std::vector<LaneSummary>& summary) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof(line), "%-24s %7s %8s %11s %11s %11s %11s %8s %7s %9s\n", "lane", "busy %", "bubble %",
                "busy ms", "sent", "received", "all-reduce", "events", "tokens", "ms/token");
  out += line;
  for (const LaneSummary& s : summary) {
    std::snprintf(line, sizeof(line), "%-24s %7.1f %8.1f %11.3f %11s %11s %11s %8llu %7lld %9.3f\n",
                  s.label.c_str(), s.busy_pct, s.bubble_pct, static_cast<double>(s.busy_ns) / 1e6,
                  format_bytes(s.bytes_sent).c_str(), format_bytes(s.bytes_received).c_str(),
                  format_bytes(s.bytes_all_reduce).c_str(), static_cast<unsigned long long>(s.events),
                  static_cast<long long>(s.tokens), s.ns_per_token / 1e6);
    out += line;
  }
  const int64_t window = summary.empty() ? 0 : summary.front().window_end_ns - summary.front().window_start_ns;
  std::snprintf(line, sizeof(line), "window %.3f ms\n", static_cast<double>(window) / 1e6);
  out += line;
  return out;
}

}  // namespace strata::trace
