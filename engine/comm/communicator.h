// engine/comm/communicator.h — moves activations between devices: point-to-point copies at stage
// boundaries and the all-reduce / all-gather of tensor-parallel groups. The host implementation
// copies through process memory (CPU and simulated devices); an NCCL one implements the same
// calls between GPUs. Calls are made from the pipeline's stage threads; each call blocks until
// the data is in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/core/status.h"

namespace strata::comm {

class Communicator {
 public:
  virtual ~Communicator() = default;
  // dst[0, n) <- src[0, n) floats.
  virtual Status send_recv(const float* src, float* dst, size_t n) = 0;
  // Every buffer ends up holding the element-wise sum of all of them; each has n floats.
  virtual Status all_reduce_sum(std::span<float* const> buffers, size_t n) = 0;
  // out: [parts][n] <- concatenation of parts[i][0, n).
  virtual Status all_gather(std::span<const float* const> parts, size_t n, float* out) = 0;
  // Bytes a rank sends for an all-reduce of n floats over k ranks (ring algorithm: 2 (k-1)/k n).
  static uint64_t all_reduce_bytes_per_rank(size_t n, size_t k) {
    return k < 2 ? 0 : static_cast<uint64_t>(2.0 * static_cast<double>(k - 1) / static_cast<double>(k) *
                                             static_cast<double>(n) * sizeof(float));
  }
};

// In-process copies; sums in a fixed order (rank 0 + rank 1 + ...) so results are reproducible.
class HostCommunicator final : public Communicator {
 public:
  Status send_recv(const float* src, float* dst, size_t n) override;
  Status all_reduce_sum(std::span<float* const> buffers, size_t n) override;
  Status all_gather(std::span<const float* const> parts, size_t n, float* out) override;
};

}  // namespace strata::comm
