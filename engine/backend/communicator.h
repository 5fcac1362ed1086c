// engine/backend/communicator.h — the all-reduce of a tensor-parallel group, made for one group of
// devices: the interface a backend's own collective (NCCL between CUDA GPUs) and the host reduction
// (comm/communicator.h) both implement. Point-to-point copies are in comm/transfer.h.
// Calls are made from the pipeline's stage threads; each call blocks until the data is in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/backend/ops.h"
#include "engine/core/status.h"

namespace strata::backend {

class Communicator {
 public:
  virtual ~Communicator() = default;
  // "host", "nccl", "mpi", for the trace and the devices view.
  virtual const char* kind() const = 0;
  // buffers[i]: n floats in the memory of member i. Every buffer ends up holding the element-wise
  // sum of all of them.
  virtual Status all_reduce_sum(std::span<float* const> buffers, size_t n) = 0;
  // The same sum, ordered on the devices' own queues: after the work queued so far on ops[i] (the
  // ops of member i, which wrote buffers[i]) and before the work queued there later. It may
  // return before the sum has run; errors then surface from later ops or their synchronize().
  // Called while no other thread uses those ops. The default synchronizes every member's ops and
  // calls all_reduce_sum (blocking); a backend whose collective runs on device streams (NCCL)
  // orders it by events instead, with no wait on the host.
  // Whether all_reduce_sum_queued orders on the devices' queues (no host wait): then a caller
  // need not synchronize the members' ops before it.
  virtual bool queues_on_devices() const { return false; }
  virtual Status all_reduce_sum_queued(std::span<Ops* const> ops, std::span<float* const> buffers, size_t n) {
    for (Ops* o : ops) {
      Status s = o->synchronize();
      if (!s.ok()) return s;
    }
    return all_reduce_sum(buffers, n);
  }
  // Bytes a rank sends for an all-reduce of n floats over k ranks (ring algorithm: 2 (k-1)/k n).
  static uint64_t all_reduce_bytes_per_rank(size_t n, size_t k) {
    return k < 2 ? 0 : static_cast<uint64_t>(2.0 * static_cast<double>(k - 1) / static_cast<double>(k) *
                                             static_cast<double>(n) * sizeof(float));
  }
};

}  // namespace strata::backend
