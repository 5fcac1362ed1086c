// engine/comm/communicator.cpp — the host all-reduce, and the choice of communicator per group.
#include "engine/comm/communicator.h"

#include <cstring>

#include "engine/backend/registry/registry.h"
#include "engine/comm/group_transport.h"

namespace strata::comm {

HostCommunicator::HostCommunicator(std::vector<backend::Device*> members) : members_(std::move(members)) {
  staging_.resize(members_.size());
}

Status HostCommunicator::all_reduce_sum(std::span<float* const> buffers, size_t n) {
  if (buffers.empty()) return Error{Code::InvalidArgument, "all-reduce over zero buffers"};
  if (!members_.empty() && buffers.size() != members_.size())
    return Error{Code::InvalidArgument, "all-reduce of " + std::to_string(buffers.size()) + " buffers in a group of " +
                                            std::to_string(members_.size())};
  const size_t bytes = n * sizeof(float);
  // Host views of every buffer: the buffer itself where the host can read it, else staging.
  std::vector<float*> host(buffers.size());
  for (size_t r = 0; r < buffers.size(); ++r) {
    backend::Device* d = members_.empty() ? nullptr : members_[r];
    if (!d || d->host_visible()) {
      host[r] = buffers[r];
      continue;
    }
    staging_[r].resize(n);
    host[r] = staging_[r].data();
    STRATA_RETURN_IF_ERROR(d->copy_to_host({buffers[r], bytes, host[r], bytes, bytes, 1}));
  }
  float* acc = host[0];
  for (size_t r = 1; r < host.size(); ++r) {
    const float* b = host[r];
    for (size_t i = 0; i < n; ++i) acc[i] += b[i];
  }
  for (size_t r = 1; r < host.size(); ++r) {
    if (host[r] != acc) std::memcpy(host[r], acc, bytes);
  }
  for (size_t r = 0; r < buffers.size(); ++r) {
    backend::Device* d = members_.empty() ? nullptr : members_[r];
    if (d && !d->host_visible()) STRATA_RETURN_IF_ERROR(d->copy_from_host({host[r], bytes, buffers[r], bytes, bytes, 1}));
  }
  return {};
}

Expected<std::unique_ptr<backend::Communicator>> make_communicator(const std::vector<backend::Device*>& members) {
  std::vector<GroupMember> group;
  for (const backend::Device* d : members) group.push_back({0, d->caps().collective});
  const GroupChoice choice = choose_group_transport(group, [&](const std::string&) {
    return backend::backend_of(*members.front()) != nullptr;
  });
  if (choice.transport == GroupTransport::Collective) {
    backend::Backend* b = backend::backend_of(*members.front());
    return b->make_communicator(members);
  }
  return std::unique_ptr<backend::Communicator>(std::make_unique<HostCommunicator>(members));
}

}  // namespace strata::comm
