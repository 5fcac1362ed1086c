// engine/exec/rank_bridge.h — what a Pipeline needs from the other processes of an mpirun job: the
// other ranks place their part of a placement, run their part of a stage for one micro-batch, copy
// sequences in their KV caches, and join cross-rank all-reduce groups. dist::Cluster implements it
// over dist::RankLink; a one-process Pipeline has none. No MPI here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/core/status.h"
#include "engine/plan/placement.h"
#include "engine/trace/trace_event.h"

namespace strata::exec {



// One micro-batch of one stage, as it crosses ranks.
struct StageCall {
  struct Part {
    int32_t seq = 0;
    int64_t row0 = 0, n = 0, pos0 = 0;
    bool want_logits = false;
  };
  int32_t stage = 0;                // index in the stages of the placement (same on every rank)
  std::vector<Part> parts;
  std::vector<int32_t> tokens;      // [n]
  int64_t n = 0;                    // rows
  std::string holder;               // id of the device whose memory produced hidden ("" when none)
  std::vector<float> hidden;        // [n][n_embd]: in, then out
  // Direct crossings between worker ranks, so that a hidden state going from one worker to the next
  // does not pass through rank 0. In: when hidden_from >= 0 the input hidden state is not in
  // `hidden` but comes straight from rank hidden_from (a message on hidden_tag); when forward_to is
  // not empty the output goes straight to those ranks (on forward_tag, non-blocking) instead of
  // back in the answer, and forward_device names the device it goes to (for the trace).
  int32_t hidden_from = -1, hidden_tag = -1;
  std::vector<int32_t> forward_to;
  int32_t forward_tag = -1;
  std::string forward_device;
  std::string out_holder;           // out (worker): id of the device whose memory produced the output
  std::vector<std::vector<float>> logits;  // out: [n_vocab] per part with want_logits, in order
  // out: the remote rank's trace events of this call, on rank 0's clock, lanes by device id.
  struct LaneEvent {
    std::string lane;
    std::string peer;
    trace::Event event;
  };
  std::vector<LaneEvent> events;
  // The crossings: in (worker) the ns the hidden state took to arrive; out (driver) the answer's
  // bytes, the ns they took to arrive and when they were in (steady clock ns).
  int64_t receive_ns = 0;
  uint64_t reply_bytes = 0;
  int64_t reply_receive_ns = 0;
  int64_t reply_end_ns = 0;
};

class RankBridge {
 public:
  virtual ~RankBridge() = default;
  virtual int rank() const = 0;
  // Driver only (rank 0). Asks every other rank to place `placement` without waiting; then
  // end_place waits for all of them (an error names the rank). The driver places its own part in
  // between, so that cross-rank groups are made by all their members at once. On a failure (of a
  // rank, or of the driver's own part: local_failed) end_place asks the ranks that did place to go
  // back to `revert_to` (when given). fresh: a new pipeline (Pipeline::create: the ranks drop what
  // they had), else a re-placement.
  virtual Status begin_place(const plan::Placement& placement, bool fresh, bool discard_kv) = 0;
  virtual Status end_place(const plan::Placement* revert_to, bool local_failed) = 0;
  // Runs stage call.stage of one micro-batch on `rank` (blocking; any stage thread).
  virtual Status run_stage(int rank, StageCall& call) = 0;
  // A fresh tag for one direct crossing between two other ranks (StageCall::forward_tag).
  virtual int next_transfer_tag() = 0;
  // Copies the first n positions of sequence src to dst on every other rank.
  virtual Status copy_sequence(int32_t src, int32_t dst, int64_t n) = 0;
  // The communicator of a tensor group whose members span `ranks` (sorted; this rank among them).
  // members: all of the group's devices in member order, this rank's own and the stand-ins of the
  // others' (Device::remote_rank() >= 0); the communicator's buffers are this rank's members', in
  // that order. NCCL over all members when every one is a CUDA GPU (comm/group_transport.h), the
  // host sum and MPI otherwise. Every rank of the group calls it with the same members and tag.
  virtual Expected<std::unique_ptr<backend::Communicator>> group_communicator(const std::vector<backend::Device*>& members,
                                                                           const std::vector<int>& ranks, int tag) = 0;
  // Whether a rank has stopped answering.
  virtual bool rank_lost(int rank) const = 0;
};

}  // namespace strata::exec
