// tests/cuda_emu/emu_nccl.cpp — the emulated GPU (tests only): NCCL communicators among the emulated
// devices of this process. A collective is queued on each member's stream; when a member's stream
// reaches it, it deposits its buffer and waits there for the others (as a real NCCL kernel
// occupies the stream); the last to arrive sums in member order 0, 1, ... into a result that every
// member then copies out. Members that call in a different order than their peers deadlock, as on
// GPUs.
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "emu_internal.h"

namespace {

struct Collective {
  std::mutex m;
  std::condition_variable cv;
  int arrived = 0;
  bool done = false;
  std::vector<const float*> send;
  std::vector<float> result;
};

struct Clique {
  std::mutex m;
  int n_ranks = 0;
  std::map<uint64_t, std::shared_ptr<Collective>> ops;  // by sequence number
  std::atomic<bool> aborted{false};
};

std::mutex g_m;
std::map<std::string, std::shared_ptr<Clique>> g_cliques;

std::shared_ptr<Clique> clique_for(const std::string& key, int n_ranks) {
  std::lock_guard<std::mutex> lk(g_m);
  auto& c = g_cliques[key];
  if (!c) {
    c = std::make_shared<Clique>();
    c->n_ranks = n_ranks;
  }
  return c;
}

}  // namespace

namespace strata_emu {
struct NcclComm {
  std::shared_ptr<Clique> clique;
  int rank = 0;
  int device = 0;
  uint64_t next_seq = 0;  // collectives issued by this member
  ncclResult_t async_error = ncclSuccess;
  std::string last_error;
  void* buffers = nullptr;  // the member's own device memory (NCCL's channels and buffers)
  ~NcclComm() {
    if (buffers != nullptr) {
      int saved = 0;
      cudaGetDevice(&saved);
      cudaSetDevice(device);
      cudaFree(buffers);
      cudaSetDevice(saved);
    }
  }
};
}  // namespace strata_emu

namespace {
// Device memory a member's communicator takes at init, as NCCL allocates its buffers on the GPU
// (about 1.6-2.4 GB per GPU on NVLink systems): STRATA_CUDA_EMU_NCCL_MIB (default 64 MiB, small
// emulated devices). 0: none.
size_t nccl_member_bytes() {
  const char* env = std::getenv("STRATA_CUDA_EMU_NCCL_MIB");
  const long mib = env != nullptr ? std::strtol(env, nullptr, 10) : 64;
  return mib > 0 ? static_cast<size_t>(mib) << 20 : 0;
}
}  // namespace

const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
  }
  return "unknown result code";
}

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (id == nullptr) return ncclInvalidArgument;
  static std::mutex m;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard<std::mutex> lk(m);
  std::memset(id->internal, 0, sizeof id->internal);
  const std::string key = "emu-" + std::to_string(rng()) + "-" + std::to_string(rng());
  std::memcpy(id->internal, key.data(), key.size());
  return ncclSuccess;
}

const char* ncclGetLastError(ncclComm_t comm) { return comm != nullptr ? comm->last_error.c_str() : ""; }

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  (void)config;  // blocking or not: initialisation completes at once here
  if (comm == nullptr || nranks <= 0 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return ncclUnhandledCudaError;
  auto* c = new strata_emu::NcclComm;
  c->clique = clique_for(std::string(id.internal, strnlen(id.internal, sizeof id.internal)), nranks);
  if (c->clique->n_ranks != nranks) {
    delete c;
    return ncclInvalidArgument;
  }
  c->rank = rank;
  c->device = dev;
  if (const size_t bytes = nccl_member_bytes(); bytes > 0 && cudaMalloc(&c->buffers, bytes) != cudaSuccess) {
    c->buffers = nullptr;
    delete c;
    (void)cudaGetLastError();
    return ncclUnhandledCudaError;
  }
  *comm = c;
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return ncclCommInitRankConfig(comm, nranks, id, rank, nullptr);
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  if (comms == nullptr || ndev <= 0) return ncclInvalidArgument;
  int n_devices = 0;
  if (cudaGetDeviceCount(&n_devices) != cudaSuccess) return ncclUnhandledCudaError;
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  int saved = 0;
  cudaGetDevice(&saved);
  for (int i = 0; i < ndev; ++i) {
    const int d = devlist != nullptr ? devlist[i] : i;
    if (d < 0 || d >= n_devices) return ncclInvalidArgument;
    cudaSetDevice(d);
    if (ncclResult_t r = ncclCommInitRank(&comms[i], ndev, id, i); r != ncclSuccess) return r;
  }
  cudaSetDevice(saved);
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) { return comm == nullptr ? ncclInvalidArgument : ncclSuccess; }
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclInvalidArgument;
  delete comm;
  return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclInvalidArgument;
  {
    comm->clique->aborted.store(true);
    std::lock_guard<std::mutex> lk(comm->clique->m);
    for (auto& [seq, op] : comm->clique->ops) op->cv.notify_all();  // waiters also poll the flag
  }
  delete comm;
  return ncclSuccess;
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* state) {
  if (comm == nullptr || state == nullptr) return ncclInvalidArgument;
  *state = comm->async_error;
  return ncclSuccess;
}
ncclResult_t ncclCommCount(ncclComm_t comm, int* count) {
  if (comm == nullptr || count == nullptr) return ncclInvalidArgument;
  *count = comm->clique->n_ranks;
  return ncclSuccess;
}
ncclResult_t ncclCommUserRank(ncclComm_t comm, int* rank) {
  if (comm == nullptr || rank == nullptr) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

// Grouping only defers launches on real NCCL; here every call is queued at once, so a group
// changes nothing (the members of one collective still meet on their streams).
ncclResult_t ncclGroupStart() { return ncclSuccess; }
ncclResult_t ncclGroupEnd() { return ncclSuccess; }

ncclResult_t ncclAllReduce(const void* sendbuf, void* recvbuf, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  if (comm == nullptr) return ncclInvalidArgument;
  if (type != ncclFloat32 || op != ncclSum) {
    comm->last_error = "emulated ncclAllReduce supports ncclFloat32 with ncclSum";
    return ncclInvalidArgument;
  }
  if (strata_emu::stream_device(stream) != comm->device) {
    comm->last_error = "stream belongs to another device than the communicator";
    return ncclInvalidUsage;
  }
  const size_t bytes = count * sizeof(float);
  if (count > 0 && (!strata_emu::is_device_range(sendbuf, bytes, comm->device) ||
                    !strata_emu::is_device_range(recvbuf, bytes, comm->device))) {
    comm->last_error = "buffers must be device memory of the communicator's device";
    return ncclInvalidArgument;
  }
  std::shared_ptr<Clique> clique = comm->clique;
  const uint64_t seq = comm->next_seq++;
  const int rank = comm->rank;
  const cudaError_t e = strata_emu::enqueue_host_work(stream, [=] {
    std::shared_ptr<Collective> coll;
    {
      std::lock_guard<std::mutex> lk(clique->m);
      auto& slot = clique->ops[seq];
      if (!slot) {
        slot = std::make_shared<Collective>();
        slot->send.assign(clique->n_ranks, nullptr);
      }
      coll = slot;
    }
    std::unique_lock<std::mutex> lk(coll->m);
    coll->send[rank] = static_cast<const float*>(sendbuf);
    if (++coll->arrived == clique->n_ranks) {
      coll->result.assign(count, 0.f);
      for (int r = 0; r < clique->n_ranks; ++r)
        for (size_t i = 0; i < count; ++i) coll->result[i] += coll->send[r][i];
      coll->done = true;
      coll->cv.notify_all();
    } else {
      while (!coll->done && !clique->aborted.load()) coll->cv.wait_for(lk, std::chrono::milliseconds(50));
      if (!coll->done) return;  // aborted
    }
    std::memcpy(recvbuf, coll->result.data(), bytes);
    if (--coll->arrived == 0) {
      lk.unlock();
      std::lock_guard<std::mutex> clk(clique->m);
      clique->ops.erase(seq);
    }
  });
  if (e != cudaSuccess) {
    comm->last_error = std::string("cuda: ") + cudaGetErrorString(e);
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}
