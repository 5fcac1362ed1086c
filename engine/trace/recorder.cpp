// engine/trace/recorder.cpp — the event ring (per-slot seqlock over relaxed atomic words) and the
// memory snapshot ring. Depends only on the standard library.
#include "engine/trace/recorder.h"

#include <algorithm>
#include <cstring>
#include <thread>

namespace strata::trace {

const char* event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::Compute: return "compute";
    case EventKind::Transfer: return "transfer";
    case EventKind::AllReduce: return "all-reduce";
    case EventKind::Tokenize: return "tokenize";
    case EventKind::Sample: return "sample";
    case EventKind::Detokenize: return "detokenize";
    case EventKind::Embed: return "embed";
    case EventKind::Head: return "head";
    case EventKind::Idle: return "idle";
    case EventKind::Replan: return "replan";
    case EventKind::Draft: return "draft";
    case EventKind::DraftAccepted: return "draft-accepted";
    case EventKind::DraftRejected: return "draft-rejected";
  }
  return "unknown";
}

namespace {

// Sorts by start_ns, ties in recording order (the order of `events` on entry). Spans arrive in
// end order, so the input is nearly sorted: checked first, else 16-byte keys are sorted, not events.
void sort_by_start(std::vector<Event>& events) {
  const auto by_start = [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; };
  if (std::is_sorted(events.begin(), events.end(), by_start)) return;
  std::vector<std::pair<int64_t, uint32_t>> keys(events.size());
  for (size_t i = 0; i < events.size(); ++i) keys[i] = {events[i].start_ns, static_cast<uint32_t>(i)};
  std::sort(keys.begin(), keys.end());
  std::vector<Event> sorted(events.size());
  for (size_t i = 0; i < keys.size(); ++i) sorted[i] = events[keys[i].second];
  events.swap(sorted);
}

size_t round_up_pow2(size_t n) {
  size_t p = 2;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace

Span& Span::operator=(Span&& other) noexcept {
  if (this != &other) {
    end();
    recorder_ = other.recorder_;
    event_ = other.event_;
    other.recorder_ = nullptr;
  }
  return *this;
}

void Span::end() {
  if (recorder_ == nullptr) return;
  Recorder* r = recorder_;
  recorder_ = nullptr;
  event_.duration_ns = std::max<int64_t>(0, r->now_ns() - event_.start_ns);
  r->record(event_);
}

void Span::next(EventKind kind, int32_t layer) {
  if (recorder_ == nullptr) return;
  const int64_t now = recorder_->now_ns();
  event_.duration_ns = std::max<int64_t>(0, now - event_.start_ns);
  recorder_->record(event_);
  event_.kind = kind;
  event_.layer = layer;
  event_.start_ns = now;
  event_.duration_ns = 0;
  event_.bytes = 0;
  event_.peer_lane = -1;
}

Recorder::Recorder(size_t capacity_events, size_t capacity_memory)
    : epoch_(std::chrono::steady_clock::now()),
      capacity_(round_up_pow2(capacity_events)),
      mask_(capacity_ - 1),
      // Value-initialised: every page is touched here, not on the first record().
      slots_(new Slot[capacity_]()),
      memory_capacity_(std::max<size_t>(1, capacity_memory)),
      memory_(memory_capacity_) {}

int32_t Recorder::add_lane(std::string name, bool simulated) {
  LaneInfo info;
  info.id = static_cast<int32_t>(lanes_.size());
  info.name = std::move(name);
  info.simulated = simulated;
  lanes_.push_back(std::move(info));
  return lanes_.back().id;
}

std::string Recorder::lane_label(int32_t lane) const {
  if (lane < 0 || static_cast<size_t>(lane) >= lanes_.size()) return "lane " + std::to_string(lane);
  const LaneInfo& info = lanes_[static_cast<size_t>(lane)];
  return info.simulated ? info.name + " (simulated)" : info.name;
}

void Recorder::record_always(const Event& event) {
  const uint64_t n = head_.fetch_add(1, std::memory_order_relaxed);
  Slot& slot = slots_[n & mask_];
  const uint64_t mine = n + 1;
  // Claim the slot. A writer of an older lap still busy there is waited for (it is writing
  // seven words); a writer of a newer lap already there means this event is already older
  // than the ring holds: it counts as overwritten (dropped() sees head moved past it).
  uint64_t cur = slot.stamp.load(std::memory_order_relaxed);
  int spins = 0;
  for (;;) {
    if ((cur & ~kBusy) > mine) return;
    if (cur & kBusy) {
      if (++spins > 64) std::this_thread::yield();
      cur = slot.stamp.load(std::memory_order_relaxed);
      continue;
    }
    if (slot.stamp.compare_exchange_weak(cur, mine | kBusy, std::memory_order_relaxed, std::memory_order_relaxed)) break;
  }
  std::atomic_thread_fence(std::memory_order_release);
  uint64_t words[kWords];
  std::memcpy(words, &event, sizeof(Event));
  for (int i = 0; i < kWords; ++i) slot.words[i].store(words[i], std::memory_order_relaxed);
  slot.stamp.store(mine, std::memory_order_release);
}

Recorder::SlotRead Recorder::read_slot(uint64_t sequence, Event& out) const {
  const Slot& slot = slots_[sequence & mask_];
  const uint64_t want = sequence + 1;
  const uint64_t s1 = slot.stamp.load(std::memory_order_acquire);
  if (s1 != want) return (s1 & ~kBusy) > want ? SlotRead::Overwritten : SlotRead::NotReady;
  uint64_t words[kWords];
  for (int i = 0; i < kWords; ++i) words[i] = slot.words[i].load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  const uint64_t s2 = slot.stamp.load(std::memory_order_relaxed);
  if (s2 != s1) return SlotRead::Overwritten;  // only a newer lap can change a complete slot
  std::memcpy(&out, words, sizeof(Event));
  return SlotRead::Ok;
}

std::vector<Event> Recorder::events_since(int64_t since_ns) const {
  const uint64_t head = head_.load(std::memory_order_acquire);
  uint64_t lo = base_.load(std::memory_order_acquire);
  if (head > capacity_ && head - capacity_ > lo) lo = head - capacity_;
  std::vector<Event> out;
  out.reserve(static_cast<size_t>(head > lo ? head - lo : 0));
  Event e;
  for (uint64_t n = lo; n < head; ++n) {
    if (read_slot(n, e) == SlotRead::Ok && e.start_ns >= since_ns) out.push_back(e);
  }
  sort_by_start(out);
  return out;
}

std::vector<Event> Recorder::recent_events(int64_t since_ns, size_t max_events) const {
  const uint64_t head = head_.load(std::memory_order_acquire);
  uint64_t lo = base_.load(std::memory_order_acquire);
  if (head > capacity_ && head - capacity_ > lo) lo = head - capacity_;
  std::vector<Event> out;
  Event e;
  for (uint64_t n = head; n > lo && out.size() < max_events; --n) {
    if (read_slot(n - 1, e) != SlotRead::Ok) continue;
    if (e.end_ns() < since_ns) break;
    if (e.start_ns >= since_ns) out.push_back(e);
  }
  sort_by_start(out);
  return out;
}

EventBatch Recorder::events_after(uint64_t cursor) const {
  EventBatch batch;
  const uint64_t head = head_.load(std::memory_order_acquire);
  const uint64_t base = base_.load(std::memory_order_acquire);
  uint64_t n = std::min(std::max(cursor, base), head);  // cleared events are not "missed"
  if (head > capacity_ && head - capacity_ > n) {
    batch.missed = head - capacity_ - n;
    n = head - capacity_;
  }
  batch.events.reserve(static_cast<size_t>(head - n));
  Event e;
  for (; n < head; ++n) {
    const SlotRead r = read_slot(n, e);
    if (r == SlotRead::NotReady) break;  // still being written: the next call starts here
    if (r == SlotRead::Overwritten) {
      ++batch.missed;
      continue;
    }
    batch.events.push_back(e);
  }
  batch.next_sequence = n;
  sort_by_start(batch.events);
  return batch;
}

uint64_t Recorder::dropped() const {
  const uint64_t base = base_.load(std::memory_order_acquire);
  const uint64_t head = head_.load(std::memory_order_acquire);
  const uint64_t n = head > base ? head - base : 0;
  return n > capacity_ ? n - capacity_ : 0;
}

void Recorder::record_memory(const MemorySnapshot& snapshot) {
  if (!enabled_.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(memory_mutex_);
  memory_[static_cast<size_t>(memory_count_ % memory_capacity_)] = snapshot;
  ++memory_count_;
}

std::vector<MemorySnapshot> Recorder::memory_snapshot() const {
  std::lock_guard<std::mutex> lock(memory_mutex_);
  std::vector<MemorySnapshot> out;
  const uint64_t kept = std::min<uint64_t>(memory_count_, memory_capacity_);
  out.reserve(static_cast<size_t>(kept));
  for (uint64_t i = memory_count_ - kept; i < memory_count_; ++i)
    out.push_back(memory_[static_cast<size_t>(i % memory_capacity_)]);
  return out;
}

uint64_t Recorder::memory_dropped() const {
  std::lock_guard<std::mutex> lock(memory_mutex_);
  return memory_count_ > memory_capacity_ ? memory_count_ - memory_capacity_ : 0;
}

void Recorder::clear() {
  base_.store(head_.load(std::memory_order_acquire), std::memory_order_release);
  std::lock_guard<std::mutex> lock(memory_mutex_);
  memory_count_ = 0;
}

}  // namespace strata::trace
