// engine/comm/group_transport.cpp — the all-reduce choice per group (see group_transport.h).
#include "engine/comm/group_transport.h"

namespace strata::comm {

const char* group_transport_name(GroupTransport t) {
  switch (t) {
    case GroupTransport::Host: return "host";
    case GroupTransport::Nccl: return "nccl";
    case GroupTransport::HostAndMpi: return "mpi";
    case GroupTransport::NcclAcrossRanks: return "nccl-ranks";
  }
  return "host";
}

GroupTransport choose_group_transport(std::span<const GroupMember> members, bool nccl_built) {
  bool all_cuda = !members.empty(), one_rank = true;
  for (const GroupMember& m : members) {
    all_cuda = all_cuda && m.kind == DeviceKind::Cuda;
    one_rank = one_rank && m.rank == members.front().rank;
  }
  const bool nccl = all_cuda && members.size() > 1 && nccl_built;
  if (one_rank) return nccl ? GroupTransport::Nccl : GroupTransport::Host;
  return nccl ? GroupTransport::NcclAcrossRanks : GroupTransport::HostAndMpi;
}

}  // namespace strata::comm
