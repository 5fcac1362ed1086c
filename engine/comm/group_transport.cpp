// engine/comm/group_transport.cpp — the all-reduce choice per group (see group_transport.h).
#include "engine/comm/group_transport.h"

namespace strata::comm {

std::string GroupChoice::name() const {
  switch (transport) {
    case GroupTransport::Host: return "host";
    case GroupTransport::Collective: return collective;
    case GroupTransport::HostAndMpi: return "mpi";
    case GroupTransport::CollectiveAcrossRanks: return collective + "-ranks";
  }
  return "host";
}

GroupChoice choose_group_transport(std::span<const GroupMember> members,
                                   const std::function<bool(const std::string&)>& available) {
  bool shared = !members.empty() && !members.front().collective.empty(), one_rank = true;
  for (const GroupMember& m : members) {
    shared = shared && m.collective == members.front().collective;
    one_rank = one_rank && m.rank == members.front().rank;
  }
  const bool collective = shared && members.size() > 1 && available(members.front().collective);
  GroupChoice c;
  if (collective) c.collective = members.front().collective;
  if (one_rank) c.transport = collective ? GroupTransport::Collective : GroupTransport::Host;
  else c.transport = collective ? GroupTransport::CollectiveAcrossRanks : GroupTransport::HostAndMpi;
  return c;
}

}  // namespace strata::comm
