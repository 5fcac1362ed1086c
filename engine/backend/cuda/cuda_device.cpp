// engine/backend/cuda/cuda_device.cpp — CudaDevice: opening a GPU (context, measured overhead,
// capacity), its description for the planner, cudaMalloc'd memory, and the blocking copies through
// pinned staging and between peers. Every CUDA call is checked (cuda_check.h).
// Threads: any thread; each entry point makes the device current first.
#include "engine/backend/cuda/cuda_device.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_ops.h"
#include "kernels/cuda/cuda_kernels.h"

namespace strata::backend::cuda {

namespace {

// One chunk of a copy: `rows` rows of `width` bytes; width * rows <= the staging size.
struct Piece {
  const uint8_t* src;
  size_t src_pitch;
  uint8_t* dst;
  size_t dst_pitch;
  size_t width;
  size_t rows;
};

bool empty(const backend::Copy2D& c) { return c.width == 0 || c.height == 0; }

bool contiguous(const backend::Copy2D& c) {
  return c.height == 1 || (c.src_pitch == c.width && c.dst_pitch == c.width);
}

// Checks a copy's pointers and pitches; a one-row copy gets pitches equal to its width (CUDA's 2-D
// copies refuse a pitch below the width, and Copy2D leaves them 0 for plain copies).
Expected<backend::Copy2D> normalized(const backend::Copy2D& c, const char* what, const std::string& device) {
  backend::Copy2D n = c;
  if (empty(n)) return n;
  if (n.src == nullptr || n.dst == nullptr)
    return Error{Code::InvalidArgument, std::string(what) + " on device '" + device + "': null " +
                                            (n.src == nullptr ? "source" : "destination") + " of " +
                                            std::to_string(n.width * n.height) + " bytes"};
  if (n.height == 1) {
    n.src_pitch = n.width;
    n.dst_pitch = n.width;
  } else if (n.src_pitch < n.width || n.dst_pitch < n.width) {
    return Error{Code::InvalidArgument, std::string(what) + " on device '" + device + "': rows of " +
                                            std::to_string(n.width) + " bytes with pitches " +
                                            std::to_string(n.src_pitch) + " (source) and " +
                                            std::to_string(n.dst_pitch) + " (destination)"};
  }
  return n;
}

// Cuts a (normalized, non-empty) copy into pieces of at most `chunk` bytes: a contiguous copy into
// byte ranges, a strided one into groups of whole rows, rows wider than a chunk into row pieces.
std::vector<Piece> split(const backend::Copy2D& c, size_t chunk) {
  std::vector<Piece> pieces;
  const auto* src = static_cast<const uint8_t*>(c.src);
  auto* dst = static_cast<uint8_t*>(c.dst);
  if (contiguous(c)) {
    const size_t total = c.width * c.height;
    for (size_t off = 0; off < total; off += chunk) {
      const size_t n = std::min(chunk, total - off);
      pieces.push_back(Piece{src + off, n, dst + off, n, n, 1});
    }
  } else if (c.width <= chunk) {
    const size_t rows_per = chunk / c.width;
    for (size_t r = 0; r < c.height; r += rows_per) {
      const size_t rows = std::min(rows_per, c.height - r);
      pieces.push_back(Piece{src + r * c.src_pitch, c.src_pitch, dst + r * c.dst_pitch, c.dst_pitch, c.width, rows});
    }
  } else {
    for (size_t r = 0; r < c.height; ++r) {
      for (size_t off = 0; off < c.width; off += chunk) {
        const size_t n = std::min(chunk, c.width - off);
        pieces.push_back(Piece{src + r * c.src_pitch + off, n, dst + r * c.dst_pitch + off, n, n, 1});
      }
    }
  }
  return pieces;
}

// Host side of staging: rows of a piece into a packed buffer (pitch == width), and back out.
void gather_rows(const Piece& p, uint8_t* packed) {
  if (p.src_pitch == p.width || p.rows == 1) {
    std::memcpy(packed, p.src, p.width * p.rows);
    return;
  }
  for (size_t r = 0; r < p.rows; ++r) std::memcpy(packed + r * p.width, p.src + r * p.src_pitch, p.width);
}

void scatter_rows(const uint8_t* packed, const Piece& p) {
  if (p.dst_pitch == p.width || p.rows == 1) {
    std::memcpy(p.dst, packed, p.width * p.rows);
    return;
  }
  for (size_t r = 0; r < p.rows; ++r) std::memcpy(p.dst + r * p.dst_pitch, packed + r * p.width, p.width);
}

// Waits for a stream after a failed copy, so that no DMA still reads or writes staging memory when
// the next copy reuses it; the error being returned already says what went wrong. Not on a failed
// device: a hung one would hold the caller forever (its memory is given up with it).
void drain(const backend::Device& device, cudaStream_t stream) {
  if (stream != nullptr && !device.failed() && cudaStreamSynchronize(stream) != cudaSuccess) (void)cudaGetLastError();
}

// Dense f16 tensor-core FLOP per clock per SM with f32 accumulation (the gemm_f16 path), by compute
// capability. Data-centre parts: A100 (8.0) 2048, H100/H200 (9.0) 4096, B200 (10.x) 8192. GeForce
// and workstation parts run f32-accumulate at half their f16-accumulate rate: 512 (Turing 7.5,
// Ampere 8.6, Ada 8.9, Blackwell 12.x). An estimate for the cost model, not a measurement.
double tensor_flops_per_clock_per_sm(int major, int minor) {
  if (major == 8 && minor == 0) return 2048;
  if (major == 9) return 4096;
  if (major == 10) return 8192;
  return 512;
}

// Peak memory bandwidth (GB/s) of a typical part of each compute capability, for drivers that do not
// report the memory clock: T4 320, A100-40GB 1555, RTX 3090 936, Orin 204, RTX 4090 1008,
// H100 SXM 3350, B200 8000, RTX 5090 1792. Used only when the attributes are missing.
double typical_bandwidth_gbps(int major, int minor) {
  if (major == 7) return 320;
  if (major == 8 && minor == 0) return 1555;
  if (major == 8 && minor == 7) return 204;
  if (major == 8 && minor == 9) return 1008;
  if (major == 8) return 936;
  if (major == 9) return 3350;
  if (major == 10) return 8000;
  if (major >= 12) return 1792;
  return 300;
}

// Host link: the runtime does not say which PCIe generation the slot runs at, so this is the usual
// one for the generation of the GPU, at the rate DMA reaches in practice (not the signalling rate):
// Hopper, Blackwell: PCIe 5.0 x16, ~50 GB/s; Ampere, Ada: PCIe 4.0 x16, ~25 GB/s; older: PCIe 3.0,
// ~12 GB/s. An integrated GPU shares the host's memory: its link is its memory bandwidth.
double link_gbps_guess(int major, bool integrated, double bandwidth_gbps) {
  if (integrated) return bandwidth_gbps;
  if (major >= 9) return 50;
  if (major == 8) return 25;
  return 12;
}

int attribute(cudaDeviceAttr attr, int ordinal) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attr, ordinal) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return value;
}

}  // namespace

namespace {
// CUDA keeps f32 and f16 KV caches (the attention kernels read those), takes the weight types its
// matvec and dequantize kernels decode, attends over heads of up to 1024 (DeepSeek's latent rows
// of 576 included), and all-reduces between its GPUs over NCCL.
DeviceCaps cuda_caps() {
  DeviceCaps c;
  c.host_memory = false;
  c.kv_types = {kernels::DType::F32, kernels::DType::F16};
  for (uint32_t raw = 0; raw < 64; ++raw) {
    const kernels::DTypeTraits* t = kernels::dtype_traits(raw);
    if (t && t->weight_type && kernels::cuda::supports_weight_type(t->type)) c.weight_types.push_back(t->type);
  }
  c.peer_access = true;
  c.collective = "nccl";
  c.max_head_dim = kernels::cuda::kMaxAttentionHeadDim;  // kernels/cuda/cuda_kernels.h
  return c;
}
}  // namespace

CudaDevice::CudaDevice(int ordinal, std::string id, uint64_t capacity_bytes)
    : backend::Device(std::move(id), capacity_bytes, cuda_caps()), ordinal_(ordinal) {}

Expected<std::unique_ptr<CudaDevice>> CudaDevice::open(int ordinal, std::string id) {
  const std::string context = "opening CUDA device " + std::to_string(ordinal) + " as '" + id + "': ";
  auto fail = [&](Error e) {
    e.message = context + e.message;
    return e;
  };
  auto step = [](cudaError_t e, const char* call) -> Status {
    if (e != cudaSuccess) return cuda_error(e, call, __FILE__, __LINE__);
    return Status();
  };

  if (Status s = step(cudaSetDevice(ordinal), "cudaSetDevice"); !s.ok()) return fail(s.error());
  // cudaFree(nullptr) creates the primary context (and nothing else).
  if (Status s = step(cudaFree(nullptr), "cudaFree(nullptr)"); !s.ok()) return fail(s.error());
  cudaDeviceProp props{};
  if (Status s = step(cudaGetDeviceProperties(&props, ordinal), "cudaGetDeviceProperties"); !s.ok())
    return fail(s.error());
  size_t free_before = 0, total = 0;
  if (Status s = step(cudaMemGetInfo(&free_before, &total), "cudaMemGetInfo"); !s.ok()) return fail(s.error());

  std::unique_ptr<CudaDevice> device(new CudaDevice(ordinal, std::move(id), 0));
  CudaDevice& d = *device;
  d.name_ = props.name;
  d.cc_major_ = props.major;
  d.cc_minor_ = props.minor;
  d.compute_capability_ = std::to_string(props.major) + "." + std::to_string(props.minor);
  d.sm_count_ = props.multiProcessorCount;
  d.memory_total_bytes_ = total;

  // CUDA 13 dropped the clock rates from cudaDeviceProp; the attributes still report them (kHz).
  const int memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, ordinal);
  const int bus_width_bits = props.memoryBusWidth > 0 ? props.memoryBusWidth
                                                      : attribute(cudaDevAttrGlobalMemoryBusWidth, ordinal);
  if (memory_clock_khz > 0 && bus_width_bits > 0) {
    // Double data rate: two transfers per memory clock.
    d.bandwidth_gbps_ = 2.0 * memory_clock_khz * 1e3 * (bus_width_bits / 8.0) / 1e9;
  } else {
    d.bandwidth_gbps_ = typical_bandwidth_gbps(props.major, props.minor);
  }
  int sm_clock_khz = attribute(cudaDevAttrClockRate, ordinal);
  if (sm_clock_khz <= 0) sm_clock_khz = 1500000;  // a typical boost clock when the driver does not say
  d.tflops_ = d.sm_count_ * (sm_clock_khz * 1e3) * tensor_flops_per_clock_per_sm(props.major, props.minor) / 1e12;
  d.link_gbps_ = link_gbps_guess(props.major, props.integrated != 0, d.bandwidth_gbps_);

  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    count = ordinal + 1;
  }
  d.peer_access_enabled_.assign(static_cast<size_t>(std::max(count, ordinal + 1)), false);
  for (int other = 0; other < count; ++other) {
    if (other == ordinal) continue;
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, ordinal, other) != cudaSuccess) {
      (void)cudaGetLastError();
      can = 0;
    }
    if (can) d.peer_ordinals_.push_back(other);
  }

  // What the context-level resources take: streams, the cuBLAS handle (loads cuBLAS' per-context
  // state) and the pinned staging (page-locked host memory, plus its device-side mapping).
  if (Status s = d.init_resources(); !s.ok()) return fail(s.error());
  size_t free_after = 0;
  if (Status s = step(cudaMemGetInfo(&free_after, &total), "cudaMemGetInfo"); !s.ok()) return fail(s.error());

  // Everything not free once our resources exist: the context and whatever other processes hold on
  // this GPU (total - free_before: indistinguishable from here; on a dedicated GPU it is all the
  // context's), plus what our resources took (free_before - free_after).
  const uint64_t context_bytes = total - std::min<uint64_t>(free_before, total);
  const uint64_t resources_bytes = free_before - std::min<uint64_t>(free_after, free_before);
  d.runtime_overhead_bytes_ = context_bytes + resources_bytes;
  d.margin_bytes_ = kSafetyMarginFixedBytes + static_cast<uint64_t>(kSafetyMarginFraction * static_cast<double>(total));
  d.capacity_bytes_ = free_after > d.margin_bytes_ ? free_after - d.margin_bytes_ : 0;
  d.set_capacity(d.capacity_bytes_);
  return device;
}

Status CudaDevice::init_resources() {
  STRATA_CUDA_TRY(cudaSetDevice(ordinal_));
  STRATA_CUDA_TRY(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
  STRATA_CUDA_TRY(cudaStreamCreateWithFlags(&peer_stream_, cudaStreamNonBlocking));
  STRATA_CUBLAS_TRY(cublasCreate(&cublas_));
  for (int i = 0; i < 2; ++i) {
    // Portable: pinned for every context of the process, so a peer's stream may read it too.
    STRATA_CUDA_TRY(cudaHostAlloc(&staging_[i], kStagingBytes, cudaHostAllocPortable));
    STRATA_CUDA_TRY(cudaEventCreateWithFlags(&staging_done_[i], cudaEventDisableTiming));
  }
  return Status();
}

CudaDevice::~CudaDevice() {
  // Best effort: a failed device answers every call with its sticky error, which changes nothing here.
  (void)cudaSetDevice(ordinal_);
  drain(*this, copy_stream_);
  drain(*this, peer_stream_);
  for (int i = 0; i < 2; ++i) {
    if (staging_done_[i] != nullptr) (void)cudaEventDestroy(staging_done_[i]);
    if (staging_[i] != nullptr) (void)cudaFreeHost(staging_[i]);
  }
  if (cublas_ != nullptr) (void)cublasDestroy(cublas_);
  if (peer_stream_ != nullptr) (void)cudaStreamDestroy(peer_stream_);
  if (copy_stream_ != nullptr) (void)cudaStreamDestroy(copy_stream_);
  (void)cudaGetLastError();
}

Status CudaDevice::make_current() {
  if (failed()) return failed_device_error(*this);
  STRATA_CUDA_TRY_ON(this, cudaSetDevice(ordinal_));
  return Status();
}

DeviceInfo CudaDevice::info() const {
  DeviceInfo i;
  i.id = id();
  i.backend = "cuda";
  i.caps = caps();
  i.name = name_;
  i.simulated = false;
  i.bytes_total = capacity_bytes_;
  // The accounting's free bytes, or less when the GPU itself has less free (other processes, or
  // lazily loaded modules past the safety margin).
  i.bytes_free = bytes_free();
  size_t live_free = 0, live_total = 0;
  if (!failed() && cudaSetDevice(ordinal_) == cudaSuccess && cudaMemGetInfo(&live_free, &live_total) == cudaSuccess) {
    i.bytes_free = std::min<uint64_t>(i.bytes_free, live_free);
  } else {
    (void)cudaGetLastError();
  }
  i.bandwidth_gbps = bandwidth_gbps_;
  i.tflops = tflops_;
  i.link_gbps = link_gbps_;
  i.link_latency_us = 10;  // a PCIe DMA round trip plus the launch of the copy
  i.runtime_overhead_bytes = runtime_overhead_bytes_;
  i.threads = 1;  // the device's worker thread submits its work
  i.compute_capability = compute_capability_;
  i.ordinal = ordinal_;
  for (int p : peer_ordinals_) i.peers.push_back("cuda" + std::to_string(p));
  i.rank = rank();
  i.host = host();
  i.failed = failed();
  if (i.failed) i.failure = failure();
  return i;
}

Expected<std::unique_ptr<backend::Ops>> CudaDevice::create_ops(const backend::OpsWorkspace& workspace) {
  STRATA_RETURN_IF_ERROR(make_current());
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<CudaOps> ops, CudaOps::create(*this, workspace));
  return std::unique_ptr<backend::Ops>(std::move(ops));
}

void* CudaDevice::allocate_memory(size_t bytes) {
  if (failed()) return nullptr;
  if (cudaError_t e = cudaSetDevice(ordinal_); e != cudaSuccess) {
    (void)device_error(this, e, "cudaSetDevice", __FILE__, __LINE__);
    return nullptr;
  }
  void* memory = nullptr;
  // A zero-byte cudaMalloc succeeds with a null pointer, which would read as a refusal.
  if (cudaError_t e = cudaMalloc(&memory, bytes == 0 ? 1 : bytes); e != cudaSuccess) {
    // Out of memory is cleared and reported by the caller as OutOfMemory; a sticky error on the way
    // (the context died) also marks the device failed.
    (void)device_error(this, e, "cudaMalloc", __FILE__, __LINE__);
    return nullptr;
  }
  return memory;
}

void CudaDevice::free_memory(void* memory, size_t) {
  if (memory == nullptr) return;
  cudaError_t e = cudaSetDevice(ordinal_);
  if (e == cudaSuccess) e = cudaFree(memory);
  if (e != cudaSuccess && !failed()) (void)device_error(this, e, "cudaFree", __FILE__, __LINE__);
  (void)cudaGetLastError();
}

Status CudaDevice::copy_from_host(const backend::Copy2D& copy) {
  STRATA_ASSIGN_OR_RETURN(const backend::Copy2D c, normalized(copy, "copy_from_host", id()));
  if (empty(c)) return Status();
  STRATA_RETURN_IF_ERROR(make_current());
  const std::vector<Piece> pieces = split(c, kStagingBytes);
  std::lock_guard<std::mutex> lock(staging_mutex_);
  // Chunk i: wait until the DMA that last read its staging buffer (chunk i-2) is done, pack the
  // rows into it on the host, and queue its DMA; the host packs chunk i+1 while chunk i moves.
  Status status = [&]() -> Status {
    for (size_t i = 0; i < pieces.size(); ++i) {
      const Piece& p = pieces[i];
      const size_t slot = i % 2;
      STRATA_CUDA_TRY_ON(this, cudaEventSynchronize(staging_done_[slot]));
      auto* packed = static_cast<uint8_t*>(staging_[slot]);
      gather_rows(p, packed);
      STRATA_CUDA_TRY_ON(this, cudaMemcpy2DAsync(p.dst, p.dst_pitch, packed, p.width, p.width, p.rows,
                                                 cudaMemcpyHostToDevice, copy_stream_));
      STRATA_CUDA_TRY_ON(this, cudaEventRecord(staging_done_[slot], copy_stream_));
    }
    STRATA_CUDA_WAIT_ON(*this, copy_stream_);
    return Status();
  }();
  if (!status.ok()) drain(*this, copy_stream_);
  return status;
}

Status CudaDevice::copy_to_host(const backend::Copy2D& copy) {
  STRATA_ASSIGN_OR_RETURN(const backend::Copy2D c, normalized(copy, "copy_to_host", id()));
  if (empty(c)) return Status();
  STRATA_RETURN_IF_ERROR(make_current());
  const std::vector<Piece> pieces = split(c, kStagingBytes);
  std::lock_guard<std::mutex> lock(staging_mutex_);
  auto queue = [&](size_t i) -> Status {
    const Piece& p = pieces[i];
    const size_t slot = i % 2;
    STRATA_CUDA_TRY_ON(this, cudaMemcpy2DAsync(staging_[slot], p.width, p.src, p.src_pitch, p.width, p.rows,
                                               cudaMemcpyDeviceToHost, copy_stream_));
    STRATA_CUDA_TRY_ON(this, cudaEventRecord(staging_done_[slot], copy_stream_));
    return Status();
  };
  // The DMA of chunk i+1 is queued before the host unpacks chunk i; chunk i+1's buffer held chunk
  // i-1, which the host finished unpacking in the previous step.
  Status status = [&]() -> Status {
    STRATA_RETURN_IF_ERROR(queue(0));
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (i + 1 < pieces.size()) STRATA_RETURN_IF_ERROR(queue(i + 1));
      const size_t slot = i % 2;
      STRATA_CUDA_TRY_ON(this, cudaEventSynchronize(staging_done_[slot]));
      scatter_rows(static_cast<const uint8_t*>(staging_[slot]), pieces[i]);
    }
    return Status();
  }();
  if (!status.ok()) drain(*this, copy_stream_);
  return status;
}

Status CudaDevice::copy_within(const backend::Copy2D& copy) {
  STRATA_ASSIGN_OR_RETURN(const backend::Copy2D c, normalized(copy, "copy_within", id()));
  if (empty(c)) return Status();
  STRATA_RETURN_IF_ERROR(make_current());
  STRATA_CUDA_TRY_ON(this, cudaMemcpy2DAsync(c.dst, c.dst_pitch, c.src, c.src_pitch, c.width, c.height,
                                             cudaMemcpyDeviceToDevice, copy_stream_));
  STRATA_CUDA_WAIT_ON(*this, copy_stream_);
  return Status();
}

Status CudaDevice::fill_zero(void* dst, size_t bytes) {
  if (bytes == 0) return Status();
  if (dst == nullptr)
    return Error{Code::InvalidArgument, "fill_zero on device '" + id() + "': null destination of " +
                                            std::to_string(bytes) + " bytes"};
  STRATA_RETURN_IF_ERROR(make_current());
  STRATA_CUDA_TRY_ON(this, cudaMemsetAsync(dst, 0, bytes, copy_stream_));
  STRATA_CUDA_WAIT_ON(*this, copy_stream_);
  return Status();
}

Status CudaDevice::enable_peer_access(int peer_ordinal) {
  std::lock_guard<std::mutex> lock(peer_access_mutex_);
  const auto index = static_cast<size_t>(peer_ordinal);
  if (index >= peer_access_enabled_.size()) peer_access_enabled_.resize(index + 1, false);
  if (peer_access_enabled_[index]) return Status();
  // Maps the peer's memory into this (current) device's context, so its copy engine reaches it.
  const cudaError_t e = cudaDeviceEnablePeerAccess(peer_ordinal, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();
  } else if (e != cudaSuccess) {
    return device_error(this, e, "cudaDeviceEnablePeerAccess", __FILE__, __LINE__);
  }
  peer_access_enabled_[index] = true;
  return Status();
}

Status CudaDevice::copy_to_peer(const backend::Copy2D& copy, backend::Device& peer) {
  auto* cuda_peer = dynamic_cast<CudaDevice*>(&peer);
  if (cuda_peer == nullptr) return backend::Device::copy_to_peer(copy, peer);
  STRATA_ASSIGN_OR_RETURN(const backend::Copy2D c, normalized(copy, "copy_to_peer", id()));
  if (empty(c)) return Status();
  if (cuda_peer->failed()) return failed_device_error(*cuda_peer);
  if (cuda_peer->ordinal_ == ordinal_) return copy_within(c);
  STRATA_RETURN_IF_ERROR(make_current());
  const int peer_ordinal = cuda_peer->ordinal_;
  const bool direct =
      std::find(peer_ordinals_.begin(), peer_ordinals_.end(), peer_ordinal) != peer_ordinals_.end();
  if (!direct) return staged_copy_to_peer(c, *cuda_peer);

  STRATA_RETURN_IF_ERROR(enable_peer_access(peer_ordinal));
  if (contiguous(c)) {
    STRATA_CUDA_TRY_ON(this, cudaMemcpyPeerAsync(c.dst, peer_ordinal, c.src, ordinal_, c.width * c.height,
                                                 copy_stream_));
  } else {
    cudaMemcpy3DPeerParms p{};
    p.srcPtr = make_cudaPitchedPtr(const_cast<void*>(c.src), c.src_pitch, c.width, c.height);
    p.srcDevice = ordinal_;
    p.dstPtr = make_cudaPitchedPtr(c.dst, c.dst_pitch, c.width, c.height);
    p.dstDevice = peer_ordinal;
    p.extent = make_cudaExtent(c.width, c.height, 1);
    STRATA_CUDA_TRY_ON(this, cudaMemcpy3DPeerAsync(&p, copy_stream_));
  }
  STRATA_CUDA_WAIT_ON(*this, copy_stream_);
  return Status();
}

Status CudaDevice::staged_copy_to_peer(const backend::Copy2D& c, CudaDevice& peer) {
  const std::vector<Piece> pieces = split(c, kStagingBytes);
  std::lock_guard<std::mutex> lock(staging_mutex_);
  std::lock_guard<std::mutex> peer_lock(peer.peer_mutex_);  // leaf: see the header
  auto download = [&](size_t i) -> Status {
    const Piece& p = pieces[i];
    const size_t slot = i % 2;
    STRATA_CUDA_TRY_ON(this, cudaSetDevice(ordinal_));
    STRATA_CUDA_TRY_ON(this, cudaMemcpy2DAsync(staging_[slot], p.width, p.src, p.src_pitch, p.width, p.rows,
                                               cudaMemcpyDeviceToHost, copy_stream_));
    STRATA_CUDA_TRY_ON(this, cudaEventRecord(staging_done_[slot], copy_stream_));
    return Status();
  };
  // Chunk i: wait for its download, wait for the upload of chunk i-1 (whose buffer chunk i+1 will
  // use), queue its upload on the peer, then queue the download of chunk i+1 so both DMAs overlap.
  Status status = [&]() -> Status {
    STRATA_RETURN_IF_ERROR(download(0));
    for (size_t i = 0; i < pieces.size(); ++i) {
      const Piece& p = pieces[i];
      const size_t slot = i % 2;
      STRATA_CUDA_TRY_ON(this, cudaSetDevice(ordinal_));
      STRATA_CUDA_TRY_ON(this, cudaEventSynchronize(staging_done_[slot]));
      STRATA_CUDA_TRY_ON(&peer, cudaSetDevice(peer.ordinal_));
      STRATA_CUDA_WAIT_ON(peer, peer.peer_stream_);
      STRATA_CUDA_TRY_ON(&peer, cudaMemcpy2DAsync(p.dst, p.dst_pitch, staging_[slot], p.width, p.width, p.rows,
                                                  cudaMemcpyHostToDevice, peer.peer_stream_));
      if (i + 1 < pieces.size()) STRATA_RETURN_IF_ERROR(download(i + 1));
    }
    STRATA_CUDA_TRY_ON(&peer, cudaSetDevice(peer.ordinal_));
    STRATA_CUDA_WAIT_ON(peer, peer.peer_stream_);
    return Status();
  }();
  if (!status.ok()) {
    (void)cudaSetDevice(peer.ordinal_);
    drain(peer, peer.peer_stream_);
    (void)cudaSetDevice(ordinal_);
    drain(*this, copy_stream_);
  }
  (void)cudaSetDevice(ordinal_);
  return status;
}

}  // namespace strata::backend::cuda
