// engine/comm/communicator.h — the all-reduce a tensor-parallel group uses, chosen per group: the
// backend's own collective when every member has the same one (DeviceCaps::collective: NCCL between
// CUDA GPUs), the host reduction otherwise. The interface is backend::Communicator.
// Calls are made from the pipeline's stage threads, after the members' ops have synchronized;
// each call blocks until the data is in place.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "engine/backend/communicator.h"
#include "engine/backend/device.h"
#include "engine/core/status.h"

namespace strata::comm {

// Sums in a fixed order (member 0 + member 1 + ...) so results are reproducible; members whose
// memory the host cannot read are copied to host staging and back.
class HostCommunicator final : public backend::Communicator {
 public:
  explicit HostCommunicator(std::vector<backend::Device*> members);
  const char* kind() const override { return "host"; }
  Status all_reduce_sum(std::span<float* const> buffers, size_t n) override;

 private:
  std::vector<backend::Device*> members_;
  std::vector<std::vector<float>> staging_;  // per member not host-visible: [n]
};

// The members' backend collective when they share one (group_transport.h), the host reduction otherwise.
Expected<std::unique_ptr<backend::Communicator>> make_communicator(const std::vector<backend::Device*>& members);

}  // namespace strata::comm
