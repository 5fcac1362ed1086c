// engine/backend/cuda/cuda_nccl.cpp — the NCCL all-reduce of a tensor-parallel group whose members
// are all CUDA devices of this process (one communicator per member, from ncclCommInitAll).
// Threads: all_reduce_sum may be called from any thread (one call at a time: a mutex serialises
// them); it blocks until every member's buffer holds the sum.
#include <mutex>
#include <string>
#include <vector>

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_device.h"

namespace strata::backend::cuda {

namespace {

class NcclCommunicator final : public backend::Communicator {
 public:
  explicit NcclCommunicator(std::vector<CudaDevice*> members) : members_(std::move(members)) {}

  // Creates one communicator and one non-blocking stream per member.
  Status init() {
    std::vector<int> ordinals;
    for (CudaDevice* d : members_) ordinals.push_back(d->ordinal());
    comms_.assign(members_.size(), nullptr);
    STRATA_NCCL_TRY(ncclCommInitAll(comms_.data(), static_cast<int>(members_.size()), ordinals.data()));
    streams_.assign(members_.size(), nullptr);
    for (size_t i = 0; i < members_.size(); ++i) {
      STRATA_RETURN_IF_ERROR(members_[i]->make_current());
      STRATA_CUDA_TRY_ON(members_[i], cudaStreamCreateWithFlags(&streams_[i], cudaStreamNonBlocking));
    }
    return Status();
  }

  ~NcclCommunicator() override {
    bool any_failed = false;
    for (CudaDevice* d : members_) any_failed = any_failed || d->failed();
    for (size_t i = 0; i < members_.size(); ++i) {
      (void)cudaSetDevice(members_[i]->ordinal());
      if (i < streams_.size() && streams_[i] != nullptr) {
        if (!any_failed && cudaStreamSynchronize(streams_[i]) != cudaSuccess) (void)cudaGetLastError();
        (void)cudaStreamDestroy(streams_[i]);
      }
      // A failed member may never finish its part of a collective: abort rather than wait.
      if (i < comms_.size() && comms_[i] != nullptr) (void)(any_failed ? ncclCommAbort(comms_[i]) : ncclCommDestroy(comms_[i]));
    }
    (void)cudaGetLastError();
  }

  const char* kind() const override { return "nccl"; }

  Status all_reduce_sum(std::span<float* const> buffers, size_t n) override {
    if (buffers.size() != members_.size())
      return Error{Code::InvalidArgument, "nccl all-reduce: " + std::to_string(buffers.size()) + " buffers for " +
                                              std::to_string(members_.size()) + " members"};
    if (n == 0) return Status();
    for (size_t i = 0; i < members_.size(); ++i) {
      if (members_[i]->failed()) return failed_device_error(*members_[i]);
      if (buffers[i] == nullptr)
        return Error{Code::InvalidArgument, "nccl all-reduce: null buffer of member '" + members_[i]->id() + "'"};
    }
    std::lock_guard<std::mutex> lock(mutex_);
    // One group: NCCL launches every member's part together (a single thread driving several
    // devices would otherwise deadlock on the first member's wait for the others).
    STRATA_NCCL_TRY(ncclGroupStart());
    Status queued = [&]() -> Status {
      for (size_t i = 0; i < members_.size(); ++i) {
        STRATA_CUDA_TRY_ON(members_[i], cudaSetDevice(members_[i]->ordinal()));
        const ncclResult_t r = ncclAllReduce(buffers[i], buffers[i], n, ncclFloat, ncclSum, comms_[i], streams_[i]);
        if (r != ncclSuccess)
          return nccl_error(r, "ncclAllReduce", __FILE__, __LINE__, ncclGetLastError(comms_[i]));
      }
      return Status();
    }();
    // The group is closed even after a failure inside it.
    const ncclResult_t ended = ncclGroupEnd();
    if (!queued.ok()) return with_member_state(queued.error());
    if (ended != ncclSuccess)
      return with_member_state(nccl_error(ended, "ncclGroupEnd", __FILE__, __LINE__, ncclGetLastError(comms_[0])));
    for (size_t i = 0; i < members_.size(); ++i) {
      STRATA_CUDA_TRY_ON(members_[i], cudaSetDevice(members_[i]->ordinal()));
      STRATA_CUDA_WAIT_ON(*members_[i], streams_[i]);
    }
    return Status();
  }

 private:
  // An NCCL error may hide a dead context (ncclUnhandledCudaError): query each member's stream, so
  // a sticky error marks its device failed, and name it in the message.
  Error with_member_state(Error error) {
    for (size_t i = 0; i < members_.size(); ++i) {
      if (cudaSetDevice(members_[i]->ordinal()) != cudaSuccess) continue;
      const cudaError_t e = cudaStreamQuery(streams_[i]);
      if (e != cudaSuccess && e != cudaErrorNotReady) {
        const Error member = device_error(members_[i], e, "cudaStreamQuery", __FILE__, __LINE__);
        error.message += "; " + member.message;
      } else if (e == cudaErrorNotReady) {
        (void)cudaGetLastError();
      }
    }
    return error;
  }

  std::vector<CudaDevice*> members_;
  std::vector<ncclComm_t> comms_;       // [members]: rank i on members_[i]
  std::vector<cudaStream_t> streams_;   // [members]: on members_[i]
  std::mutex mutex_;
};

}  // namespace

Expected<std::unique_ptr<backend::Communicator>> make_nccl_communicator(const std::vector<backend::Device*>& members) {
  if (members.empty()) return Error{Code::InvalidArgument, "nccl communicator: a group with no members"};
  std::vector<CudaDevice*> cuda_members;
  std::vector<bool> seen;
  for (backend::Device* d : members) {
    auto* cuda = dynamic_cast<CudaDevice*>(d);
    if (cuda == nullptr)
      return Error{Code::InvalidArgument, "nccl communicator: member '" + (d ? d->id() : std::string("(null)")) +
                                              "' is not a CUDA device"};
    const auto ordinal = static_cast<size_t>(cuda->ordinal());
    if (ordinal >= seen.size()) seen.resize(ordinal + 1, false);
    if (seen[ordinal])
      return Error{Code::InvalidArgument, "nccl communicator: CUDA device " + std::to_string(ordinal) +
                                              " appears twice in the group"};
    seen[ordinal] = true;
    if (cuda->failed()) return failed_device_error(*cuda);
    cuda_members.push_back(cuda);
  }
  auto communicator = std::make_unique<NcclCommunicator>(std::move(cuda_members));
  if (Status s = communicator->init(); !s.ok()) {
    Error e = s.error();
    e.message = "nccl communicator of " + std::to_string(members.size()) + " devices: " + e.message;
    return e;
  }
  return std::unique_ptr<backend::Communicator>(std::move(communicator));
}

}  // namespace strata::backend::cuda
