// engine/comm/communicator.h — the all-reduce / all-gather of a tensor-parallel group, made for
// one group of devices. The host implementation reduces through process memory (staging through
// the host for members whose memory it cannot read); the NCCL one (engine/backend/cuda/) runs
// between GPUs. make_communicator picks per group: NCCL when every member is a CUDA device and
// the build has it, the host reduction otherwise. Point-to-point copies are in transfer.h.
// Calls are made from the pipeline's stage threads, after the members' ops have synchronized;
// each call blocks until the data is in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace strata::exec {
class Device;
}

namespace strata::comm {

class Communicator {
 public:
  virtual ~Communicator() = default;
  // "host" or "nccl", for the trace and the devices view.
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

// Sums in a fixed order (member 0 + member 1 + ...) so results are reproducible; members whose
// memory the host cannot read are copied to host staging and back.
class HostCommunicator final : public Communicator {
 public:
  explicit HostCommunicator(std::vector<exec::Device*> members);
  const char* kind() const override { return "host"; }
  Status all_reduce_sum(std::span<float* const> buffers, size_t n) override;

 private:
  std::vector<exec::Device*> members_;
  std::vector<std::vector<float>> staging_;  // per member not host-visible: [n]
};

// NCCL when every member is a CUDA device and the build has NCCL; the host reduction otherwise.
Expected<std::unique_ptr<Communicator>> make_communicator(const std::vector<exec::Device*>& members);

}  // namespace strata::comm
