// engine/backend/cuda/cuda_nccl_ranks.cpp — the NCCL all-reduce of a tensor group whose members are
// CUDA GPUs of several processes (ranks of an mpirun job): one NCCL communicator over all of them,
// this process holding the NCCL ranks of its own GPUs. The unique id comes from the group's lowest
// rank (nccl_unique_id there, sent over MPI by dist::Cluster); no MPI here.
// Communicators are non-blocking (ncclConfig_t::blocking = 0) and every wait polls, asking
// RankCollectivePart::lost_peer between polls: a blocking NCCL call whose peer process died would never
// return. Threads: all_reduce_sum from any thread, one call at a time (a mutex serialises them).
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_device.h"

namespace strata::backend::cuda {

namespace {

// Between polls of a wait: yield for the first ~100 us (a decode step's all-reduce takes tens of
// microseconds), then sleep 50 us, as wait_stream does.
void pause_since(std::chrono::steady_clock::time_point start) {
  if (std::chrono::steady_clock::now() - start < std::chrono::microseconds(100)) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

class NcclRankCommunicator final : public backend::Communicator {
 public:
  NcclRankCommunicator(std::vector<CudaDevice*> local, RankCollectivePart part)
      : local_(std::move(local)), part_(std::move(part)) {}

  Status init() {
    if (part_.unique_id.size() != sizeof(ncclUniqueId))
      return Error{Code::InvalidArgument, "nccl unique id of " + std::to_string(part_.unique_id.size()) +
                                              " bytes (NCCL wants " + std::to_string(sizeof(ncclUniqueId)) + ")"};
    if (part_.member_index.size() != local_.size())
      return Error{Code::InvalidArgument, "nccl across ranks: " + std::to_string(part_.member_index.size()) +
                                              " member indices for " + std::to_string(local_.size()) + " local GPUs"};
    for (int index : part_.member_index) {
      if (index < 0 || index >= part_.n_members)
        return Error{Code::InvalidArgument, "nccl across ranks: member index " + std::to_string(index) +
                                                " outside a group of " + std::to_string(part_.n_members)};
    }
    ncclUniqueId id;
    std::memcpy(&id, part_.unique_id.data(), sizeof id);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    comms_.assign(local_.size(), nullptr);
    // Several local GPUs join inside one group: each init waits for all NCCL ranks, so one thread
    // initializing them one by one would wait on itself.
    STRATA_NCCL_TRY(ncclGroupStart());
    Status queued = [&]() -> Status {
      for (size_t i = 0; i < local_.size(); ++i) {
        STRATA_RETURN_IF_ERROR(local_[i]->make_current());
        const ncclResult_t r = ncclCommInitRankConfig(&comms_[i], part_.n_members, id, part_.member_index[i], &config);
        if (r != ncclSuccess && r != ncclInProgress) return nccl_error(r, "ncclCommInitRankConfig", __FILE__, __LINE__);
      }
      return Status();
    }();
    const ncclResult_t ended = ncclGroupEnd();
    if (!queued.ok()) return abort_with(queued.error());
    if (ended != ncclSuccess && ended != ncclInProgress)
      return abort_with(nccl_error(ended, "ncclGroupEnd (init)", __FILE__, __LINE__));
    STRATA_RETURN_IF_ERROR(wait_comms("ncclCommInitRankConfig"));
    streams_.assign(local_.size(), nullptr);
    for (size_t i = 0; i < local_.size(); ++i) {
      STRATA_RETURN_IF_ERROR(local_[i]->make_current());
      STRATA_CUDA_TRY_ON(local_[i], cudaStreamCreateWithFlags(&streams_[i], cudaStreamNonBlocking));
    }
    return Status();
  }

  ~NcclRankCommunicator() override {
    for (size_t i = 0; i < local_.size(); ++i) {
      if (i < streams_.size() && streams_[i] != nullptr) {
        (void)cudaSetDevice(local_[i]->ordinal());
        (void)cudaStreamDestroy(streams_[i]);
      }
    }
    if (aborted_) return;
    bool any_failed = false;
    for (CudaDevice* d : local_) any_failed = any_failed || d->failed();
    if (any_failed || !part_.lost_peer().empty()) {
      abort_all();
      return;
    }
    // Finalize flushes what is queued; with non-blocking communicators it may be in progress.
    for (ncclComm_t c : comms_) {
      if (c != nullptr) (void)ncclCommFinalize(c);
    }
    if (!wait_comms("ncclCommFinalize").ok()) return;  // aborted there
    for (ncclComm_t& c : comms_) {
      if (c != nullptr) (void)ncclCommDestroy(c);
      c = nullptr;
    }
    (void)cudaGetLastError();
  }

  const char* kind() const override { return "nccl"; }

  Status all_reduce_sum(std::span<float* const> buffers, size_t n) override {
    if (buffers.size() != local_.size())
      return Error{Code::InvalidArgument, "nccl all-reduce across ranks: " + std::to_string(buffers.size()) +
                                              " buffers for " + std::to_string(local_.size()) + " local members"};
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_) return Error{Code::Device, "nccl communicator across ranks was aborted: " + abort_reason_};
    if (n == 0) return Status();
    for (size_t i = 0; i < local_.size(); ++i) {
      if (local_[i]->failed()) return failed_device_error(*local_[i]);
      if (buffers[i] == nullptr)
        return Error{Code::InvalidArgument, "nccl all-reduce: null buffer of member '" + local_[i]->id() + "'"};
    }
    STRATA_NCCL_TRY(ncclGroupStart());
    Status queued = [&]() -> Status {
      for (size_t i = 0; i < local_.size(); ++i) {
        STRATA_CUDA_TRY_ON(local_[i], cudaSetDevice(local_[i]->ordinal()));
        const ncclResult_t r = ncclAllReduce(buffers[i], buffers[i], n, ncclFloat, ncclSum, comms_[i], streams_[i]);
        if (r != ncclSuccess && r != ncclInProgress)
          return nccl_error(r, "ncclAllReduce", __FILE__, __LINE__, ncclGetLastError(comms_[i]));
      }
      return Status();
    }();
    const ncclResult_t ended = ncclGroupEnd();
    if (!queued.ok()) return abort_with(queued.error());
    if (ended != ncclSuccess && ended != ncclInProgress)
      return abort_with(nccl_error(ended, "ncclGroupEnd", __FILE__, __LINE__, ncclGetLastError(comms_[0])));
    STRATA_RETURN_IF_ERROR(wait_comms("ncclAllReduce"));
    // The collective is enqueued; its kernels finish only once every peer's have run.
    for (size_t i = 0; i < local_.size(); ++i) {
      STRATA_CUDA_TRY_ON(local_[i], cudaSetDevice(local_[i]->ordinal()));
      const auto start = std::chrono::steady_clock::now();
      while (true) {
        const cudaError_t e = cudaStreamQuery(streams_[i]);
        if (e == cudaSuccess) break;
        if (e != cudaErrorNotReady)
          return abort_with(device_error(local_[i], e, "wait for the nccl all-reduce", __FILE__, __LINE__));
        if (local_[i]->failed()) return abort_with(failed_device_error(*local_[i]));
        if (std::string lost = part_.lost_peer(); !lost.empty())
          return abort_with(Error{Code::Device, "nccl all-reduce across ranks: " + lost});
        pause_since(start);
      }
    }
    return Status();
  }

 private:
  // Polls every communicator until none is in progress (ncclCommGetAsyncError); a lost peer or an
  // error aborts them all.
  Status wait_comms(const char* what) {
    const auto start = std::chrono::steady_clock::now();
    while (true) {
      bool pending = false;
      for (ncclComm_t c : comms_) {
        if (c == nullptr) continue;
        ncclResult_t state = ncclSuccess;
        const ncclResult_t r = ncclCommGetAsyncError(c, &state);
        if (r != ncclSuccess) return abort_with(nccl_error(r, "ncclCommGetAsyncError", __FILE__, __LINE__));
        if (state == ncclInProgress) {
          pending = true;
        } else if (state != ncclSuccess) {
          return abort_with(nccl_error(state, what, __FILE__, __LINE__, ncclGetLastError(c)));
        }
      }
      if (!pending) return Status();
      if (std::string lost = part_.lost_peer(); !lost.empty())
        return abort_with(Error{Code::Device, std::string(what) + " across ranks: " + lost});
      pause_since(start);
    }
  }

  void abort_all() {
    for (ncclComm_t& c : comms_) {
      if (c != nullptr) (void)ncclCommAbort(c);
      c = nullptr;
    }
    (void)cudaGetLastError();
  }

  // Aborts the communicators (a collective that failed on one rank never completes on the others)
  // and returns the error; later calls fail with it.
  Error abort_with(Error error) {
    aborted_ = true;
    abort_reason_ = error.message;
    abort_all();
    return error;
  }

  std::vector<CudaDevice*> local_;
  RankCollectivePart part_;
  std::vector<ncclComm_t> comms_;      // [local]: NCCL rank part_.member_index[i] on local_[i]
  std::vector<cudaStream_t> streams_;  // [local]: on local_[i]
  bool aborted_ = false;
  std::string abort_reason_;
  std::mutex mutex_;
};

}  // namespace

Expected<std::vector<uint8_t>> nccl_unique_id() {
  ncclUniqueId id;
  STRATA_NCCL_TRY(ncclGetUniqueId(&id));
  std::vector<uint8_t> bytes(sizeof id);
  std::memcpy(bytes.data(), &id, sizeof id);
  return bytes;
}

Expected<std::unique_ptr<backend::Communicator>> make_nccl_rank_communicator(const std::vector<backend::Device*>& local,
                                                                          RankCollectivePart part) {
  if (local.empty()) return Error{Code::InvalidArgument, "nccl communicator across ranks: no local member"};
  if (!part.lost_peer) part.lost_peer = [] { return std::string(); };
  std::vector<CudaDevice*> cuda_members;
  for (backend::Device* d : local) {
    auto* cuda = dynamic_cast<CudaDevice*>(d);
    if (cuda == nullptr)
      return Error{Code::InvalidArgument, "nccl communicator across ranks: member '" +
                                              (d ? d->id() : std::string("(null)")) + "' is not a CUDA device"};
    for (const CudaDevice* other : cuda_members) {
      if (other->ordinal() == cuda->ordinal())
        return Error{Code::InvalidArgument, "nccl communicator across ranks: CUDA device " +
                                                std::to_string(cuda->ordinal()) + " appears twice in the group"};
    }
    if (cuda->failed()) return failed_device_error(*cuda);
    cuda_members.push_back(cuda);
  }
  const int n_members = part.n_members;
  auto communicator = std::make_unique<NcclRankCommunicator>(std::move(cuda_members), std::move(part));
  if (Status s = communicator->init(); !s.ok()) {
    Error e = s.error();
    e.message = "nccl communicator across ranks (" + std::to_string(local.size()) + " of " +
                std::to_string(n_members) + " GPUs here): " + e.message;
    return e;
  }
  return std::unique_ptr<backend::Communicator>(std::move(communicator));
}

}  // namespace strata::backend::cuda
