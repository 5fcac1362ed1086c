// engine/comm/group_transport.h — which all-reduce a tensor-parallel group uses, decided from its
// members' kinds and ranks alone (a pure function: every rank of an mpirun job decides the same
// from the same placement, and the rule is tested without a GPU). No devices, no MPI, no CUDA here.
#pragma once

#include <span>

#include "engine/core/device_info.h"

namespace strata::comm {

// One member of a group, in the group's member order.
struct GroupMember {
  int rank = 0;                        // the process holding it (0 in one process)
  DeviceKind kind = DeviceKind::Cpu;
};

enum class GroupTransport {
  Host,             // one process: sums in host memory (HostCommunicator)
  Nccl,             // one process, every member a CUDA GPU: ncclCommInitAll (make_nccl_communicator)
  HostAndMpi,       // several ranks: each sums its members on the host, the ranks MPI_Allreduce
                    // (RankCommunicator)
  NcclAcrossRanks,  // several ranks, every member a CUDA GPU: one NCCL communicator over all of
                    // them, its unique id from the lowest rank over MPI (make_nccl_rank_communicator)
};
const char* group_transport_name(GroupTransport t);  // "host", "nccl", "mpi", "nccl-ranks"

// NCCL needs every member to be a CUDA GPU and a build with CUDA (nccl_built); a group of fewer
// than two members has nothing to reduce and takes the host path.
GroupTransport choose_group_transport(std::span<const GroupMember> members, bool nccl_built);

}  // namespace strata::comm
