// engine/comm/communicator.cpp — the host (in-process) communicator.
#include "engine/comm/communicator.h"

#include <cstring>

namespace strata::comm {

Status HostCommunicator::send_recv(const float* src, float* dst, size_t n) {
  if (src != dst && n > 0) std::memcpy(dst, src, n * sizeof(float));
  return {};
}

Status HostCommunicator::all_reduce_sum(std::span<float* const> buffers, size_t n) {
  if (buffers.empty()) return Error{Code::InvalidArgument, "all-reduce over zero buffers"};
  float* acc = buffers[0];
  for (size_t r = 1; r < buffers.size(); ++r) {
    const float* b = buffers[r];
    for (size_t i = 0; i < n; ++i) acc[i] += b[i];
  }
  for (size_t r = 1; r < buffers.size(); ++r) std::memcpy(buffers[r], acc, n * sizeof(float));
  return {};
}

Status HostCommunicator::all_gather(std::span<const float* const> parts, size_t n, float* out) {
  for (size_t r = 0; r < parts.size(); ++r) std::memcpy(out + r * n, parts[r], n * sizeof(float));
  return {};
}

}  // namespace strata::comm
