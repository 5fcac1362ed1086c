// tests/cuda_emu/test_cuda_emu_runtime.cpp — the emulated GPU itself: barrier, warp and shared
// memory semantics (kernels/emu_semantics.cu), devices and memory, copies, streams and events,
// cuBLAS and NCCL. CTest runs it with STRATA_CUDA_EMU_DEVICES=2x1GiB.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "kernels/emu_semantics.h"

namespace {

template <class T>
struct DeviceBuf {
  T* p = nullptr;
  size_t n = 0;
  explicit DeviceBuf(size_t count) : n(count) { EXPECT_EQ(cudaMalloc(&p, count * sizeof(T)), cudaSuccess); }
  ~DeviceBuf() { cudaFree(p); }
  std::vector<T> get() const {
    std::vector<T> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
  void put(const std::vector<T>& h) {
    ASSERT_EQ(h.size(), n);
    ASSERT_EQ(cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
};

TEST(CudaEmuSemantics, SharedMemoryIsPerBlockAcrossConcurrentStreams) {
  // Two streams run the same kernel at once: a __shared__ that were one process-wide variable
  // would mix the blocks' values.
  constexpr int kGrid = 6, kN = 96;
  cudaStream_t a, b;
  ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  DeviceBuf<int> oa(kGrid * kN), ob(kGrid * kN);
  for (int rep = 0; rep < 3; ++rep) {
    ASSERT_EQ(emu_test::shared_per_block(oa.p, kGrid, kN, a), cudaSuccess);
    ASSERT_EQ(emu_test::shared_per_block(ob.p, kGrid, kN, b), cudaSuccess);
  }
  ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(b), cudaSuccess);
  for (const auto& h : {oa.get(), ob.get()})
    for (int blk = 0; blk < kGrid; ++blk)
      for (int t = 0; t < kN; ++t) ASSERT_EQ(h[blk * kN + t], blk) << "block " << blk << " thread " << t;
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
}

TEST(CudaEmuSemantics, WarpShufflesBallotAndMasks) {
  DeviceBuf<int> out(32 * 8);
  ASSERT_EQ(emu_test::warp_ops(out.p, nullptr), cudaSuccess);
  const std::vector<int> h = out.get();
  for (int lane = 0; lane < 32; ++lane) {
    const int* r = &h[lane * 8];
    EXPECT_EQ(r[0], 31 * 32 / 2) << lane;
    EXPECT_EQ(r[1], lane < 31 ? (lane + 1) * 10 : lane * 10) << lane;  // past the end: own value
    EXPECT_EQ(r[2], lane >= 2 ? (lane - 2) * 10 : lane * 10) << lane;
    EXPECT_EQ(r[3], ((lane & ~15) + 5) * 10) << lane;                // width 16: lane 5 of each half
    EXPECT_EQ(static_cast<unsigned>(r[4]), 0xaaaaaaaau) << lane;
    EXPECT_EQ(r[5], 1) << lane;
    EXPECT_EQ(r[6], 1) << lane;
    EXPECT_EQ(r[7], lane < 16 ? 15 * 16 / 2 : -1) << lane;
  }
}

TEST(CudaEmuSemantics, ReturnedThreadsLeaveBarriers) {
  constexpr int kN = 100;  // a partial last warp too
  DeviceBuf<int> out(kN);
  ASSERT_EQ(emu_test::early_exit(out.p, kN, nullptr), cudaSuccess);
  const std::vector<int> h = out.get();
  const int live = kN - (kN + 2) / 3;
  for (int t = 0; t < kN; ++t) EXPECT_EQ(h[t], t % 3 == 0 ? 0 : 1 + live) << t;
}

TEST(CudaEmuSemantics, WarpsWithDifferentTripCounts) {
  DeviceBuf<int> out(128);
  ASSERT_EQ(emu_test::uneven_warps(out.p, nullptr), cudaSuccess);
  const std::vector<int> h = out.get();
  for (int t = 0; t < 128; ++t) {
    const int warp = t / 32;
    int want = 0;
    for (int it = 0; it <= warp; ++it) want += 31 * 32 / 2 + 32 * it;
    EXPECT_EQ(h[t], want) << t;
  }
}

TEST(CudaEmuSemantics, DynamicSharedMemory) {
  constexpr int kN = 200;
  DeviceBuf<int> out(kN);
  ASSERT_EQ(emu_test::dynamic_shared(out.p, kN, nullptr), cudaSuccess);
  const std::vector<int> h = out.get();
  for (int t = 0; t < kN; ++t) EXPECT_EQ(h[t], (kN - 1 - t) * 3) << t;
}

TEST(CudaEmuSemantics, AtomicsAreAtomic) {
  DeviceBuf<int> counter(1);
  DeviceBuf<float> fsum(1);
  ASSERT_EQ(cudaMemset(counter.p, 0, sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMemset(fsum.p, 0, sizeof(float)), cudaSuccess);
  ASSERT_EQ(emu_test::atomics(counter.p, fsum.p, 7, 192, nullptr), cudaSuccess);
  EXPECT_EQ(counter.get()[0], 7 * 192);
  EXPECT_EQ(fsum.get()[0], 7 * 192 * 0.5f);  // exact: every partial sum is a multiple of 0.5 below 2^24
}

TEST(CudaEmuSemantics, InvalidLaunchConfigurationIsReported) {
  EXPECT_EQ(emu_test::bad_launch(nullptr), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // read and cleared
}

TEST(CudaEmuSemantics, WarpMaskMisuseFailsTheDevice) {
  DeviceBuf<int> out(32);
  ASSERT_EQ(emu_test::bad_mask(out.p, nullptr), cudaSuccess);  // the launch itself is fine
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);   // the kernel failed: sticky
  EXPECT_EQ(emu_test::twice(nullptr, nullptr, 0, nullptr), cudaErrorLaunchFailure);
  EXPECT_EQ(cudaDeviceReset(), cudaSuccess);  // clears the sticky error, as on a GPU
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(CudaEmuSemantics, DeadlockIsReportedNotHung) {
  DeviceBuf<int> out(32);
  ASSERT_EQ(emu_test::divergent_barrier(out.p, nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchTimeout);
  EXPECT_EQ(cudaDeviceReset(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// ---- devices and memory ------------------------------------------------------------------------

TEST(CudaEmuRuntime, DevicesFromTheEnvironment) {
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  ASSERT_EQ(n, 2);  // STRATA_CUDA_EMU_DEVICES=2x1GiB (CTest)
  cudaDeviceProp p{};
  ASSERT_EQ(cudaGetDeviceProperties(&p, 1), cudaSuccess);
  EXPECT_EQ(p.major, 9);
  EXPECT_EQ(p.minor, 0);
  EXPECT_EQ(p.totalGlobalMem, size_t{1} << 30);
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  EXPECT_EQ(sms, 132);
  EXPECT_EQ(cudaSetDevice(2), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
}

TEST(CudaEmuRuntime, MemoryIsChargedAndLimited) {
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  size_t free0 = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  EXPECT_EQ(total, size_t{1} << 30);
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 100 << 20), cudaSuccess);
  size_t free1 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_EQ(free0 - free1, size_t{100} << 20);
  void* big = nullptr;
  EXPECT_EQ(cudaMalloc(&big, size_t{1} << 30), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  ASSERT_EQ(cudaFree(p), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_EQ(free1, free0);
  int host = 0;
  EXPECT_EQ(cudaFree(&host), cudaErrorInvalidValue);
  cudaSetDevice(0);
}

TEST(CudaEmuRuntime, CopiesCheckTheirKind) {
  DeviceBuf<float> d(16);
  std::vector<float> h(16, 1.f), h2(16, 0.f);
  EXPECT_EQ(cudaMemcpy(h2.data(), h.data(), 64, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(d.p, h.data(), 64, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(d.p, h.data(), 65, cudaMemcpyHostToDevice), cudaErrorInvalidValue);  // past the end
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);  // the last error, then cleared
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d.p, h.data(), 64, cudaMemcpyHostToDevice), cudaSuccess);
  // 2D: rows 0 and 2 of a 4-wide layout.
  std::vector<float> src = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  ASSERT_EQ(cudaMemcpy2DAsync(d.p, 8, src.data(), 32, 8, 2, cudaMemcpyHostToDevice, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> got = d.get();
  EXPECT_EQ(got[0], 1);
  EXPECT_EQ(got[1], 2);
  EXPECT_EQ(got[2], 9);
  EXPECT_EQ(got[3], 10);
  EXPECT_EQ(got[4], 1.f);
}

TEST(CudaEmuRuntime, FreshDeviceMemoryIsPoisoned) {
  DeviceBuf<float> d(8);
  for (float v : d.get()) EXPECT_TRUE(std::isnan(v));
}

// ---- streams and events ------------------------------------------------------------------------

TEST(CudaEmuRuntime, EventOrdersTwoStreams) {
  constexpr int kN = 4096;
  cudaStream_t producer, consumer;
  ASSERT_EQ(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t ready, t0;
  ASSERT_EQ(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&t0), cudaSuccess);
  DeviceBuf<float> x(kN), y(kN), z(kN);
  std::vector<float> h(kN);
  for (int i = 0; i < kN; ++i) h[i] = static_cast<float>(i);
  x.put(h);
  ASSERT_EQ(cudaEventRecord(t0, producer), cudaSuccess);
  ASSERT_EQ(emu_test::twice(x.p, y.p, kN, producer), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(ready, producer), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(consumer, ready, 0), cudaSuccess);
  ASSERT_EQ(emu_test::twice(y.p, z.p, kN, consumer), cudaSuccess);
  cudaEvent_t t1;
  ASSERT_EQ(cudaEventCreate(&t1), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(t1, consumer), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(t1), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(t1), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(consumer), cudaSuccess);
  float ms = -1.f;
  ASSERT_EQ(cudaEventElapsedTime(&ms, t0, t1), cudaSuccess);
  EXPECT_GE(ms, 0.f);
  EXPECT_EQ(cudaEventElapsedTime(&ms, t0, ready), cudaErrorInvalidResourceHandle);  // no timing
  const std::vector<float> got = z.get();
  for (int i = 0; i < kN; ++i) ASSERT_EQ(got[i], 4.f * i) << i;
  cudaEventDestroy(ready);
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  cudaStreamDestroy(producer);
  cudaStreamDestroy(consumer);
}

TEST(CudaEmuRuntime, PeerCopies) {
  int can = 0;
  ASSERT_EQ(cudaDeviceCanAccessPeer(&can, 0, 1), cudaSuccess);
  EXPECT_EQ(can, 1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaDeviceEnablePeerAccess(1, 0), cudaSuccess);
  EXPECT_EQ(cudaDeviceEnablePeerAccess(1, 0), cudaErrorPeerAccessAlreadyEnabled);
  cudaGetLastError();
  DeviceBuf<float> a(64);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  DeviceBuf<float> b(64);
  std::vector<float> h(64);
  for (int i = 0; i < 64; ++i) h[i] = 0.25f * i;
  a.put(h);
  ASSERT_EQ(cudaMemcpyPeerAsync(b.p, 1, a.p, 0, 64 * sizeof(float), nullptr), cudaSuccess);
  EXPECT_EQ(cudaMemcpyPeerAsync(b.p, 0, a.p, 0, 64 * sizeof(float), nullptr), cudaErrorInvalidValue);  // wrong device
  cudaGetLastError();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(b.get(), h);
  // A strided block (rows 1..2 of 4 x 16 floats, 8 floats each) through cudaMemcpy3DPeerAsync.
  cudaMemcpy3DPeerParms p{};
  p.srcPtr = make_cudaPitchedPtr(a.p + 16, 64, 32, 4);
  p.srcDevice = 0;
  p.dstPtr = make_cudaPitchedPtr(b.p, 32, 32, 2);
  p.dstDevice = 1;
  p.extent = make_cudaExtent(32, 2, 1);
  ASSERT_EQ(cudaMemcpy3DPeerAsync(&p, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> got = b.get();
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 8; ++c) EXPECT_EQ(got[r * 8 + c], h[16 + r * 16 + c]);
  cudaSetDevice(0);
}

// ---- cuBLAS ------------------------------------------------------------------------------------

TEST(CudaEmuCublas, GemmExF16MatchesReference) {
  // y = X W^T as kernels/cuda/gemm_cublas.cu sets it up: W [rows][cols], X [n][cols] f16.
  constexpr int kRows = 5, kCols = 37, kN = 3;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<uint16_t> w(kRows * kCols), x(kN * kCols);
  for (auto& v : w) v = __half_as_ushort(__float2half_rn(u(rng)));
  for (auto& v : x) v = __half_as_ushort(__float2half_rn(u(rng)));
  DeviceBuf<uint16_t> dw(w.size()), dx(x.size());
  DeviceBuf<float> dy(kRows * kN);
  dw.put(w);
  dx.put(x);
  cublasHandle_t h;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  const float alpha = 1.f, beta = 0.f;
  ASSERT_EQ(cublasGemmEx_64(h, CUBLAS_OP_T, CUBLAS_OP_N, kRows, kN, kCols, &alpha, dw.p, CUDA_R_16F, kCols, dx.p,
                            CUDA_R_16F, kCols, &beta, dy.p, CUDA_R_32F, kRows, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  const std::vector<float> y = dy.get();
  for (int t = 0; t < kN; ++t)
    for (int r = 0; r < kRows; ++r) {
      double ref = 0, mag = 0;
      for (int c = 0; c < kCols; ++c) {
        const double p = static_cast<double>(__half2float(__ushort_as_half(w[r * kCols + c]))) *
                         __half2float(__ushort_as_half(x[t * kCols + c]));
        ref += p;
        mag += std::fabs(p);
      }
      EXPECT_NEAR(y[t * kRows + r], ref, 1e-6 * mag + 1e-7) << t << "," << r;  // f32 accumulation
    }
  // Host pointers are refused, as the device could not read them.
  std::vector<float> host(kRows * kN);
  EXPECT_EQ(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &alpha, host.data(), 2, host.data(), 2, &beta,
                        host.data(), 2),
            CUBLAS_STATUS_INVALID_VALUE);
  cublasDestroy(h);
}

TEST(CudaEmuCublas, SgemmTransposes) {
  // Column-major A (2x3), B (3x2): C = A * B.
  const std::vector<float> a = {1, 4, 2, 5, 3, 6};     // [[1,2,3],[4,5,6]]
  const std::vector<float> b = {7, 9, 11, 8, 10, 12};  // [[7,8],[9,10],[11,12]]
  DeviceBuf<float> da(6), db(6), dc(4);
  da.put(a);
  db.put(b);
  cublasHandle_t h;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  const float alpha = 1.f, beta = 0.f;
  ASSERT_EQ(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &alpha, da.p, 2, db.p, 3, &beta, dc.p, 2),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(dc.get(), (std::vector<float>{58, 139, 64, 154}));
  // C^T = B^T A^T with both transposed.
  ASSERT_EQ(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_T, 2, 2, 3, &alpha, db.p, 3, da.p, 2, &beta, dc.p, 2),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(dc.get(), (std::vector<float>{58, 64, 139, 154}));
  cublasDestroy(h);
}

// ---- NCCL --------------------------------------------------------------------------------------

TEST(CudaEmuNccl, AllReduceSumsAcrossDevices) {
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, 22809);
  ncclComm_t comms[2];
  const int devs[2] = {0, 1};
  ASSERT_EQ(ncclCommInitAll(comms, 2, devs), ncclSuccess);
  constexpr int kN = 1000;
  std::vector<float> h0(kN), h1(kN);
  for (int i = 0; i < kN; ++i) {
    h0[i] = 0.5f * i;
    h1[i] = 1000.f - i;
  }
  float* buf[2];
  cudaStream_t s[2];
  for (int d = 0; d < 2; ++d) {
    ASSERT_EQ(cudaSetDevice(d), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&buf[d], kN * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(buf[d], d == 0 ? h0.data() : h1.data(), kN * sizeof(float), cudaMemcpyHostToDevice),
              cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&s[d], cudaStreamNonBlocking), cudaSuccess);
  }
  for (int rep = 0; rep < 2; ++rep) {  // twice: the second sums the first's results
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (int d = 0; d < 2; ++d) {
      ASSERT_EQ(cudaSetDevice(d), cudaSuccess);
      ASSERT_EQ(ncclAllReduce(buf[d], buf[d], kN, ncclFloat, ncclSum, comms[d], s[d]), ncclSuccess);
    }
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  }
  for (int d = 0; d < 2; ++d) {
    ASSERT_EQ(cudaStreamSynchronize(s[d]), cudaSuccess);
    std::vector<float> got(kN);
    ASSERT_EQ(cudaMemcpy(got.data(), buf[d], kN * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < kN; ++i) ASSERT_EQ(got[i], 2.f * (h0[i] + h1[i])) << d << "," << i;
  }
  ncclResult_t state = ncclInProgress;
  ASSERT_EQ(ncclCommGetAsyncError(comms[0], &state), ncclSuccess);
  EXPECT_EQ(state, ncclSuccess);
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(ncclCommDestroy(comms[d]), ncclSuccess);
    cudaSetDevice(d);
    cudaStreamDestroy(s[d]);
    cudaFree(buf[d]);
  }
}

TEST(CudaEmuNccl, InitRankConfigFromOneThreadInAGroup) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comms[2];
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int d = 0; d < 2; ++d) {
    ASSERT_EQ(cudaSetDevice(d), cudaSuccess);
    ASSERT_EQ(ncclCommInitRankConfig(&comms[d], 2, id, d, &config), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  float* buf[2];
  for (int d = 0; d < 2; ++d) {
    cudaSetDevice(d);
    ASSERT_EQ(cudaMalloc(&buf[d], 4 * sizeof(float)), cudaSuccess);
    const std::vector<float> h(4, static_cast<float>(d + 1));
    ASSERT_EQ(cudaMemcpy(buf[d], h.data(), sizeof(float) * 4, cudaMemcpyHostToDevice), cudaSuccess);
  }
  // Issued from two host threads, on the default streams.
  std::vector<std::thread> threads;
  ncclResult_t results[2] = {ncclInternalError, ncclInternalError};
  for (int d = 0; d < 2; ++d)
    threads.emplace_back([&, d] {
      cudaSetDevice(d);
      results[d] = ncclAllReduce(buf[d], buf[d], 4, ncclFloat, ncclSum, comms[d], nullptr);
      cudaDeviceSynchronize();
    });
  for (auto& t : threads) t.join();
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(results[d], ncclSuccess);
    cudaSetDevice(d);
    std::vector<float> got(4);
    ASSERT_EQ(cudaMemcpy(got.data(), buf[d], sizeof(float) * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got, std::vector<float>(4, 3.f));
    EXPECT_EQ(ncclCommFinalize(comms[d]), ncclSuccess);
    EXPECT_EQ(ncclCommDestroy(comms[d]), ncclSuccess);
    cudaFree(buf[d]);
  }
}

}  // namespace
