// engine/dist/rank_communicator.h — the all-reduce of a tensor group whose members span several
// ranks of an mpirun job: this rank's members are summed in host memory (staged through the host
// for members it cannot read), the partial sums of the ranks are added with MPI_Allreduce
// (RankLink::all_reduce_sum), and the total goes back into every local member's buffer (kind()
// says "mpi"). A group whose members are all CUDA GPUs uses NCCL across ranks instead
// (comm/group_transport.h, backend::Backend::make_rank_communicator).
#pragma once

#include <vector>

#include "engine/backend/communicator.h"
#include "engine/backend/device.h"
#include "engine/dist/rank_link.h"

namespace strata::dist {

class RankCommunicator final : public backend::Communicator {
 public:
  // group: from link.make_group over the ranks of the tensor group; local: this rank's members.
  RankCommunicator(RankLink& link, int group, std::vector<backend::Device*> local);
  const char* kind() const override { return "mpi"; }
  // buffers: one per local member, n floats each.
  Status all_reduce_sum(std::span<float* const> buffers, size_t n) override;

 private:
  RankLink& link_;
  int group_;
  std::vector<backend::Device*> local_;
  std::vector<float> sum_;      // [n] this rank's partial sum, then the total
  std::vector<float> staging_;  // [n] a member the host cannot read
};

}  // namespace strata::dist
