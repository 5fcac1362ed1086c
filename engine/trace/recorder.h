// engine/trace/recorder.h — the lock-free ring of trace events and the memory snapshot ring.
// Depends only on trace_event.h and the standard library; no I/O, no formatting on the hot path.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/trace/trace_event.h"

namespace strata::trace {

class Recorder;

// RAII span: takes the start time on construction, records the event when destroyed (or at
// end()). Made by Recorder::span on the worker thread that does the work; used on that thread.
// When the recorder was disabled at construction the span is inert and reads no clock.
class Span {
 public:
  Span() = default;
  Span(Span&& other) noexcept : recorder_(other.recorder_), event_(other.event_) { other.recorder_ = nullptr; }
  Span& operator=(Span&& other) noexcept;
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  ~Span() { end(); }

  bool active() const { return recorder_ != nullptr; }
  void set_bytes(uint64_t bytes) { event_.bytes = bytes; }
  void set_peer(int32_t peer_lane) { event_.peer_lane = peer_lane; }
  void set_n_tokens(int32_t n_tokens) { event_.n_tokens = n_tokens; }
  void end();                                  // record now; later calls do nothing
  // Back-to-back spans with one clock read: ends this span now and starts the next one at the
  // same instant on the same lane, seq, token and n_tokens (bytes and peer reset). Inert spans stay inert.
  void next(EventKind kind, int32_t layer);
  void cancel() { recorder_ = nullptr; }       // record nothing
  const Event& event() const { return event_; }

 private:
  friend class Recorder;
  Span(Recorder* recorder, const Event& event) : recorder_(recorder), event_(event) {}
  Recorder* recorder_ = nullptr;
  Event event_;
};

// A batch for a streaming reader (the server's SSE trace stream).
struct EventBatch {
  std::vector<Event> events;   // in start order
  uint64_t next_sequence = 0;  // pass to the next events_after call: no duplicates, no gaps
  uint64_t missed = 0;         // events after the cursor that were overwritten before this read
};

// Records events from any thread into a preallocated ring of `capacity()` slots (the requested
// capacity rounded up to a power of two). When full, the oldest events are overwritten and
// counted by dropped(). Every event gets a sequence number (0, 1, 2, ... in the order record()
// claimed its slot); readers copy out slots whose writes are complete (a per-slot seqlock), so
// readers never block writers.
//
// Thread rules: add_lane before recording starts (lanes() is then read without a lock).
// record / record_memory / span / now_ns / set_enabled: any thread. Readers: any thread.
class Recorder {
 public:
  explicit Recorder(size_t capacity_events = size_t{1} << 20, size_t capacity_memory = size_t{1} << 16);
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Registers a timeline row; returns its id (0, 1, 2, ...). Call before recording starts.
  int32_t add_lane(std::string name, bool simulated);
  const std::vector<LaneInfo>& lanes() const { return lanes_; }
  std::string lane_label(int32_t lane) const;  // "gpu0 (simulated)", "cpu", "lane 7" if unknown

  // Disabled: record() and span() cost one relaxed atomic load. Starts enabled.
  void set_enabled(bool enabled) { enabled_.store(enabled, std::memory_order_relaxed); }
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

  // Steady-clock ns since this recorder was constructed (its epoch); clear() keeps the epoch.
  int64_t now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - epoch_).count();
  }

  // Any thread; no allocation, no locks: one atomic add, one slot claim, seven relaxed stores.
  void record(const Event& event) {
    if (!enabled_.load(std::memory_order_relaxed)) return;
    record_always(event);
  }
  void record_memory(const MemorySnapshot& snapshot);  // any thread; a short critical section

  // `auto span = recorder.span(lane, EventKind::Compute, layer, seq, token);`
  Span span(int32_t lane, EventKind kind, int32_t layer = -1, int32_t seq = -1, int64_t token = -1) {
    if (!enabled_.load(std::memory_order_relaxed)) return Span();
    Event e;
    e.lane = lane;
    e.kind = kind;
    e.layer = layer;
    e.seq = seq;
    e.token = token;
    e.start_ns = now_ns();
    return Span(this, e);
  }

  // Copies (consistent snapshots of the ring), sorted by start_ns (ties: recording order).
  std::vector<Event> snapshot() const { return events_since(INT64_MIN); }
  std::vector<Event> events_since(int64_t since_ns) const;  // events with start_ns >= since_ns
  // The newest events that started at or after since_ns, at most max_events of them, read from the
  // newest backwards (cheap on a full ring: it stops at the first event that ended before since_ns,
  // events being stored in the order they end). Oldest first.
  std::vector<Event> recent_events(int64_t since_ns, size_t max_events) const;
  std::vector<MemorySnapshot> memory_snapshot() const;       // in recording order

  // Streaming cursor: the events with sequence numbers in [cursor, next_sequence). Stops before
  // the first event still being written, so a later call returns it; start with cursor 0.
  EventBatch events_after(uint64_t cursor) const;
  uint64_t newest_sequence() const { return head_.load(std::memory_order_acquire); }  // events claimed so far

  uint64_t dropped() const;          // events overwritten since the last clear()
  uint64_t memory_dropped() const;   // memory snapshots overwritten since the last clear()
  size_t capacity() const { return capacity_; }
  size_t memory_capacity() const { return memory_capacity_; }

  // Forgets all events and snapshots (lanes stay). Safe while others record: events claimed
  // before the call are not returned afterwards.
  void clear();

 private:
  static constexpr uint64_t kBusy = uint64_t{1} << 63;
  static constexpr int kWords = sizeof(Event) / sizeof(uint64_t);

  // stamp: 0 never written; n+1 holds event n; (n+1)|kBusy while event n is being written.
  struct alignas(64) Slot {
    std::atomic<uint64_t> stamp{0};
    std::atomic<uint64_t> words[kWords];  // the Event's bytes
  };
  enum class SlotRead { Ok, NotReady, Overwritten };

  void record_always(const Event& event);
  SlotRead read_slot(uint64_t sequence, Event& out) const;

  std::chrono::steady_clock::time_point epoch_;
  size_t capacity_;
  uint64_t mask_;
  std::unique_ptr<Slot[]> slots_;
  alignas(64) std::atomic<uint64_t> head_{0};   // next sequence number to claim
  alignas(64) std::atomic<uint64_t> base_{0};   // first sequence number after the last clear()
  std::atomic<bool> enabled_{true};
  std::vector<LaneInfo> lanes_;

  mutable std::mutex memory_mutex_;
  size_t memory_capacity_;
  std::vector<MemorySnapshot> memory_;          // ring of memory_capacity_ entries
  uint64_t memory_count_ = 0;                   // snapshots recorded since the last clear()
};

}  // namespace strata::trace
