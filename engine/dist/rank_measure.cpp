// engine/dist/rank_measure.cpp — ping-pong between two ranks: latency, bandwidth and clock offset,
// over RankLink only (no MPI here), for the cost model and the trace merge.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

#include "engine/dist/rank_link.h"

namespace strata::dist {

namespace {
int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
std::span<const uint8_t> as_bytes(const int64_t& v) { return {reinterpret_cast<const uint8_t*>(&v), sizeof v}; }
int64_t read_i64(const RankMessage& m) {
  int64_t v = 0;
  if (m.bytes.size() >= sizeof v) std::memcpy(&v, m.bytes.data(), sizeof v);
  return v;
}
constexpr int kRounds = 16;          // small round trips: latency and clock offset
constexpr int kLargeRounds = 4;      // large one-way messages: bandwidth
constexpr size_t kLargeBytes = size_t{8} << 20;
constexpr int64_t kTimeoutMs = 30000;
}  // namespace

Expected<LinkMeasure> measure_link(RankLink& link, int peer, int tag) {
  const bool lead = link.rank() < peer;
  LinkMeasure m;
  int64_t best_rtt = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < kRounds; ++i) {
    if (lead) {
      const int64_t t0 = steady_ns();
      STRATA_RETURN_IF_ERROR(link.send(peer, tag, as_bytes(t0)));
      STRATA_ASSIGN_OR_RETURN(RankMessage reply, link.receive(peer, tag, kTimeoutMs));
      const int64_t t2 = steady_ns();
      const int64_t t1 = read_i64(reply);
      if (t2 - t0 < best_rtt) {
        best_rtt = t2 - t0;
        m.clock_offset_ns = t1 - (t0 + t2) / 2;
      }
    } else {
      STRATA_RETURN_IF_ERROR(link.receive(peer, tag, kTimeoutMs));
      const int64_t t1 = steady_ns();
      STRATA_RETURN_IF_ERROR(link.send(peer, tag, as_bytes(t1)));
    }
  }
  std::vector<uint8_t> large(lead ? kLargeBytes : 0, 0x5a);
  int64_t best_large = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < kLargeRounds; ++i) {
    if (lead) {
      const int64_t t0 = steady_ns();
      STRATA_RETURN_IF_ERROR(link.send(peer, tag, large));
      STRATA_RETURN_IF_ERROR(link.receive(peer, tag, kTimeoutMs));
      best_large = std::min(best_large, steady_ns() - t0);
    } else {
      STRATA_RETURN_IF_ERROR(link.receive(peer, tag, kTimeoutMs));
      const int64_t zero = 0;
      STRATA_RETURN_IF_ERROR(link.send(peer, tag, as_bytes(zero)));
    }
  }
  // The leader shares what it measured; the follower's offset is the leader's, negated.
  if (lead) {
    m.latency_us = static_cast<double>(best_rtt) / 2e3;
    // One way: the large round trip less the small reply's half round trip.
    const double one_way_ns = std::max<double>(1.0, static_cast<double>(best_large) - static_cast<double>(best_rtt) / 2);
    m.bandwidth_gbps = static_cast<double>(kLargeBytes) / one_way_ns;
    double words[3] = {m.latency_us, m.bandwidth_gbps, static_cast<double>(-m.clock_offset_ns)};
    STRATA_RETURN_IF_ERROR(link.send(peer, tag, {reinterpret_cast<const uint8_t*>(words), sizeof words}));
  } else {
    STRATA_ASSIGN_OR_RETURN(RankMessage r, link.receive(peer, tag, kTimeoutMs));
    double words[3] = {};
    if (r.bytes.size() != sizeof words) return Error{Code::Corrupt, "link measure: reply of " + std::to_string(r.bytes.size()) + " bytes"};
    std::memcpy(words, r.bytes.data(), sizeof words);
    m.latency_us = words[0];
    m.bandwidth_gbps = words[1];
    m.clock_offset_ns = static_cast<int64_t>(words[2]);
  }
  return m;
}

}  // namespace strata::dist
