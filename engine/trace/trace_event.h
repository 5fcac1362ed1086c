// engine/trace/trace_event.h — the plain records of the trace: what a lane did, when, and memory.
// Depends on nothing but the standard library; no behaviour beyond naming the kinds.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

namespace strata::trace {

// What a span was doing. Idle marks an explicit wait (a stage waiting for its input); it is
// drawn but never counted as busy time.
enum class EventKind : int32_t {
  Compute, Transfer, AllReduce, Tokenize, Sample, Detokenize, Embed, Head, Idle, Replan,
  Draft, DraftAccepted, DraftRejected
};

// "compute", "transfer", "all-reduce", "tokenize", "sample", "detokenize", "embed", "head", "idle",
// "replan" (the engine re-placing the model after a lost device, on the host lane), "draft" (a
// speculative step's guessing, n_tokens guesses, on the draft lane), "draft-accepted" and
// "draft-rejected" (the target pass that verified the guesses, on the draft lane, cut in proportion
// to the n_tokens guesses it sampled too / dropped).
const char* event_kind_name(EventKind kind);

// One span on one lane. 56 bytes, trivially copyable: the recorder stores it as seven words.
struct Event {
  int32_t lane = 0;          // registered lane id (one per device, plus host lanes)
  EventKind kind = EventKind::Compute;
  int32_t layer = -1;        // block index, -1 when the span is not one layer
  int32_t seq = -1;          // sequence (micro-batch) id, -1 when none
  int64_t token = -1;        // position / token index of the first token in the pass, -1 when none
  int64_t start_ns = 0;      // steady-clock ns since the recorder's epoch
  int64_t duration_ns = 0;   // ns, >= 0
  uint64_t bytes = 0;        // bytes moved: transfers and all-reduces
  int32_t peer_lane = -1;    // transfer destination lane, -1 when none
  int32_t n_tokens = 1;      // tokens processed by the pass (prompt chunks > 1)

  int64_t end_ns() const { return start_ns + duration_ns; }
};
static_assert(sizeof(Event) == 56, "Event is stored as 7 words in the ring");
static_assert(std::is_trivially_copyable_v<Event>);

// Memory of one lane's device at one instant, bytes. kv_used <= kv_reserved.
struct MemorySnapshot {
  int32_t lane = 0;
  int64_t time_ns = 0;       // steady-clock ns since the recorder's epoch
  uint64_t weights = 0;
  uint64_t kv_used = 0;      // KV cache bytes holding live tokens
  uint64_t kv_reserved = 0;  // KV cache bytes allocated (used + spare)
  uint64_t scratch = 0;      // activations / work buffers
  uint64_t other = 0;        // runtime overhead, anything else allocated
  uint64_t free = 0;
  uint64_t total = 0;
};

// A timeline row: one per device, plus host lanes ("host: tokenizer", "host: sampler").
struct LaneInfo {
  int32_t id = 0;
  std::string name;          // "gpu0", "cpu", "host"
  bool simulated = false;    // simulated devices are labelled "(simulated)" everywhere
};

}  // namespace strata::trace
