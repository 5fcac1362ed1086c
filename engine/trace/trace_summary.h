// engine/trace/trace_summary.h — per-lane figures over a time window: busy %, bubble %, bytes
// moved, time per token. Depends on the recorder only; pure functions of a snapshot.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/trace/recorder.h"

namespace strata::trace {

struct LaneSummary {
  int32_t lane = 0;
  std::string label;            // "gpu0 (simulated)"
  bool simulated = false;
  int64_t window_start_ns = 0;  // [window_start_ns, window_end_ns]: shared by all lanes
  int64_t window_end_ns = 0;
  int64_t first_ns = 0;         // the lane's first event start, clipped to the window (0 when no events)
  int64_t last_ns = 0;          // the lane's last event end, clipped to the window (0 when no events)
  int64_t busy_ns = 0;          // length of the union of the lane's non-idle spans in the window
  double busy_pct = 0;          // 100 * busy_ns / window length
  int64_t bubble_ns = 0;        // (last_ns - first_ns) - busy_ns: gaps between the lane's first and last event
  double bubble_pct = 0;        // 100 * bubble_ns / window length
  uint64_t bytes_sent = 0;      // transfers from this lane
  uint64_t bytes_received = 0;  // transfers whose peer_lane is this lane
  uint64_t bytes_all_reduce = 0;// all-reduce spans on this lane
  uint64_t events = 0;          // events of this lane that overlap the window
  int64_t tokens = 0;           // distinct (seq, token) pairs, each weighted by its n_tokens
  double ns_per_token = 0;      // busy_ns / tokens, 0 when no tokens
};

// Window: from the earliest event start to the latest event end, over all lanes.
std::vector<LaneSummary> summarize(const Recorder& recorder);
// Window [t0_ns, t1_ns]; spans are clipped to it, events entirely outside are ignored.
std::vector<LaneSummary> summarize(const Recorder& recorder, int64_t t0_ns, int64_t t1_ns);

// The same over given events: one row per registered lane plus any other lane id seen, by id.
// has_window false: window from the events.
std::vector<LaneSummary> summarize_events(const std::vector<Event>& events, const std::vector<LaneInfo>& lanes,
                                          bool has_window = false, int64_t t0_ns = 0, int64_t t1_ns = 0);

// A fixed-width text table, one line per lane plus a header and the window length.
std::string format_summary(const std::vector<LaneSummary>& summary);

}  // namespace strata::trace
