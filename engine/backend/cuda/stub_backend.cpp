// engine/backend/cuda/stub_backend.cpp — the CUDA backend's entry points (cuda_backend.h) in a build
// without CUDA: zero devices, and NotCompiled for anything that would need one, so callers never
// need #ifdefs. Must not include any CUDA header. Threads: any thread.
#include <string>

#include "engine/backend/cuda/cuda_backend.h"

namespace strata::backend::cuda {

bool compiled() { return false; }

std::string runtime_description() { return "built without CUDA"; }

int device_count() { return 0; }

Expected<std::unique_ptr<exec::Device>> open_device(int ordinal, const std::string&) {
  return Error{Code::NotCompiled, "built without CUDA: cannot open cuda device " + std::to_string(ordinal)};
}

bool can_access_peer(int, int) { return false; }

int ordinal_of(const exec::Device&) { return -1; }

Expected<std::unique_ptr<comm::Communicator>> make_nccl_communicator(const std::vector<exec::Device*>& members) {
  return Error{Code::NotCompiled, "built without CUDA: no NCCL communicator for a group of " +
                                      std::to_string(members.size()) + " devices"};
}

Expected<std::vector<uint8_t>> nccl_unique_id() {
  return Error{Code::NotCompiled, "built without CUDA: no NCCL unique id"};
}

Expected<std::unique_ptr<comm::Communicator>> make_nccl_rank_communicator(const std::vector<exec::Device*>& local,
                                                                          NcclRankPart part) {
  return Error{Code::NotCompiled, "built without CUDA: no NCCL communicator across ranks for " +
                                      std::to_string(local.size()) + " of " + std::to_string(part.n_members) +
                                      " devices"};
}

}  // namespace strata::backend::cuda
