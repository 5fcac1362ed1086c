// engine/backend/communicator.h — the all-reduce of a tensor-parallel group, made for one group of
// devices: the interface a backend's own collective (NCCL between CUDA GPUs) and the host reduction
// (comm/communicator.h) both implement. Point-to-point copies are in comm/transfer.h.
// Calls are made from the pipeline's stage threads; each call blocks until the data is in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

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
  // Bytes a rank sends for an all-reduce of n floats over k ranks (ring algorithm: 2 (k-1)/k n).
  static uint64_t all_reduce_bytes_per_rank(size_t n, size_t k) {
    return k < 2 ? 0 : static_cast<uint64_t>(2.0 * static_cast<double>(k - 1) / static_cast<double>(k) *
                                             static_cast<double>(n) * sizeof(float));
  }
};

}  // namespace strata::backend
