// engine/dist/rank_communicator.cpp — cross-rank all-reduce (see rank_communicator.h).
#include "engine/dist/rank_communicator.h"

#include <algorithm>
#include <cstring>

#include "engine/backend/device.h"

namespace strata::dist {

RankCommunicator::RankCommunicator(RankLink& link, int group, std::vector<backend::Device*> local)
    : link_(link), group_(group), local_(std::move(local)) {}

Status RankCommunicator::all_reduce_sum(std::span<float* const> buffers, size_t n) {
  if (buffers.size() != local_.size())
    return Error{Code::InvalidArgument, "all-reduce of " + std::to_string(buffers.size()) + " buffers for " +
                                            std::to_string(local_.size()) + " local members"};
  const size_t bytes = n * sizeof(float);
  sum_.assign(n, 0.0f);
  // This rank's members in order (member 0 + member 1 + ...), as HostCommunicator sums.
  for (size_t r = 0; r < buffers.size(); ++r) {
    const float* src = buffers[r];
    if (!local_[r]->host_visible()) {
      staging_.resize(n);
      STRATA_RETURN_IF_ERROR(local_[r]->copy_to_host({buffers[r], bytes, staging_.data(), bytes, bytes, 1}));
      src = staging_.data();
    }
    for (size_t i = 0; i < n; ++i) sum_[i] += src[i];
  }
  STRATA_RETURN_IF_ERROR(link_.all_reduce_sum(group_, sum_.data(), n));
  for (size_t r = 0; r < buffers.size(); ++r) {
    if (local_[r]->host_visible()) {
      std::memcpy(buffers[r], sum_.data(), bytes);
    } else {
      STRATA_RETURN_IF_ERROR(local_[r]->copy_from_host({sum_.data(), bytes, buffers[r], bytes, bytes, 1}));
    }
  }
  return {};
}

}  // namespace strata::dist
