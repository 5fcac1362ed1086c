// engine/exec/recovery.h — going on after a device is lost: plan the model again over the devices
// that are left and re-place it, discarding the KV cache (the lost device's part of it cannot be
// read; the scheduler rebuilds every sequence's cache by evaluating its tokens again).
// Calling thread: the pipeline's driver (the scheduler thread), with no eval in flight.
#pragma once

#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/exec/pipeline.h"

namespace strata::exec {

struct ReplanReport {
  std::vector<std::string> lost;         // ids of the failed devices the old placement used, then any lost while re-placing
  std::string cause;                     // the error that revealed the loss
  std::vector<std::string> full;         // devices left out because they ran out of memory while running
  std::vector<std::string> excluded;     // devices also left out: they refused the new blocks (out of memory)
  plan::Placement placement;             // the placement now running
  int64_t moved_blocks = 0;              // blocks placed anew (weights loaded from the mapped file)
  double ms = 0;                         // planning and re-placing, wall milliseconds
  std::vector<std::string> explanation;  // the planner's lines for the new placement
};

// Plans over the pipeline's devices that have not failed (the auto planner, with the pipeline's
// n_ctx, n_seq, max_batch and KV type) and applies the plan with KvOnApply::Discard. A device
// that refuses its new blocks (out of memory, e.g. an injected oom fault) is left out and the
// plan made again; so is a device lost while re-placing (a second rank that dies then: the report
// lists it among `lost`). OutOfMemory when the model no longer fits what is left; the pipeline then
// keeps its old placement (and every eval on it fails with the lost device's error).
// full: devices to leave out although they are not lost (an op failed for lack of their memory:
// a lazily grown scratch that no longer fits); the report lists them as `full`.
Expected<ReplanReport> replan_without_failed(Pipeline& pipeline, const std::string& cause,
                                             const std::vector<std::string>& full = {});

// The devices of the current placement, not lost, that an OutOfMemory error names ("device 'ID'").
// Empty for other errors.
std::vector<std::string> devices_out_of_memory(const Pipeline& pipeline, const Error& error);

}  // namespace strata::exec
