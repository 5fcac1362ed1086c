// engine/comm/group_transport.h — which all-reduce a tensor-parallel group uses, decided from its
// members' collectives (DeviceCaps::collective) and ranks alone (a pure function: every rank of an
// mpirun job decides the same from the same placement, and the rule is tested without a GPU). No
// devices, no MPI, no backend here.
#pragma once

#include <functional>
#include <span>
#include <string>

namespace strata::comm {

// One member of a group, in the group's member order.
struct GroupMember {
  int rank = 0;            // the process holding it (0 in one process)
  std::string collective;  // its device's caps.collective: "nccl", or "" (none of its own)
};

enum class GroupTransport {
  Host,                    // one process: sums in host memory (HostCommunicator)
  Collective,              // one process, every member with the same collective of its backend
                           // (NCCL between CUDA GPUs): Backend::make_communicator
  HostAndMpi,              // several ranks: each sums its members on the host, the ranks MPI_Allreduce
                           // (dist::RankCommunicator)
  CollectiveAcrossRanks,   // several ranks, every member with the same collective: one communicator
                           // over all of them, its unique id from the lowest rank over MPI
                           // (Backend::make_rank_communicator)
};

struct GroupChoice {
  GroupTransport transport = GroupTransport::Host;
  std::string collective;  // the members' collective for Collective / CollectiveAcrossRanks, else ""
  // The name of what it builds, as Communicator::kind() says it: "host", "mpi", the collective
  // ("nccl"), or the collective + "-ranks" ("nccl-ranks").
  std::string name() const;
};

// A backend collective needs every member to have the same one and this process to run it
// (available: whether a backend here provides that collective); a group of fewer than two members
// has nothing to reduce and takes the host path.
GroupChoice choose_group_transport(std::span<const GroupMember> members,
                                   const std::function<bool(const std::string&)>& available);

}  // namespace strata::comm
