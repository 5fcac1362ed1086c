// tools/gpu_copy_bandwidth.cu — the ceilings tools/gpu-check.sh measures Strata against, on one
// GPU, in the same run: device memory bandwidth (cudaMemcpyAsync device-to-device, and a read-only
// kernel) and cuBLAS F16 GEMM throughput (tensor cores, f32 accumulation). Standalone: built by
// gpu-check.sh with `nvcc -O2 -arch=sm_90 tools/gpu_copy_bandwidth.cu -lcublas`; no Strata code.
//
// Output, one "key value" pair per line (GB/s = 1e9 bytes/s, TFLOP/s = 1e12 FLOP/s):
//   device        NVIDIA H200
//   copy_gbps     bytes read + bytes written per second by cudaMemcpyAsync (D2D)
//   read_gbps     bytes read per second by a kernel that sums a buffer (what decode does)
//   gemm_f16_tflops  2*M*N*K per second of cublasGemmEx F16 x F16 -> F32 (M=N=K=8192)
// Exit status 0 on success, 1 with a message on stderr when a CUDA or cuBLAS call fails.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK_CUDA(expr)                                                                                  \
  do {                                                                                                    \
    cudaError_t e_ = (expr);                                                                              \
    if (e_ != cudaSuccess) {                                                                              \
      std::fprintf(stderr, "gpu_copy_bandwidth: %s failed: %s (%s:%d)\n", #expr, cudaGetErrorString(e_), \
                   __FILE__, __LINE__);                                                                   \
      return 1;                                                                                           \
    }                                                                                                     \
  } while (0)

#define CHECK_CUBLAS(expr)                                                                                   \
  do {                                                                                                       \
    cublasStatus_t s_ = (expr);                                                                              \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                                       \
      std::fprintf(stderr, "gpu_copy_bandwidth: %s failed: cuBLAS status %d (%s:%d)\n", #expr, (int)s_,     \
                   __FILE__, __LINE__);                                                                      \
      return 1;                                                                                              \
    }                                                                                                        \
  } while (0)

// Launch: a grid-stride loop, 4 x 16-byte loads per thread per iteration; each block writes one
// partial sum (so the loads cannot be optimised away). One thread reads n/threads uint4s.
__global__ void read_kernel(const uint4* __restrict__ src, size_t n, unsigned* __restrict__ out) {
  unsigned acc = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint4 v = __ldcs(src + i);  // streaming: do not keep in L2
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  for (int o = 16; o > 0; o /= 2) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0) atomicXor(out + blockIdx.x, acc);
}

// Fills with a small pattern so that the GEMM inputs are finite halves.
__global__ void fill_half(__half* p, size_t n) {
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = __float2half(static_cast<float>((i * 2654435761u) % 17) / 64.0f - 0.125f);
}

int main(int argc, char** argv) {
  const int device = argc > 1 ? std::atoi(argv[1]) : 0;
  CHECK_CUDA(cudaSetDevice(device));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  std::printf("device %s\n", prop.name);

  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  float ms = 0;

  // --- copy and read bandwidth over 2 GiB (far beyond L2) ---
  const size_t bytes = size_t{2} << 30;
  void *a = nullptr, *b = nullptr;
  unsigned* partial = nullptr;
  CHECK_CUDA(cudaMalloc(&a, bytes));
  CHECK_CUDA(cudaMalloc(&b, bytes));
  CHECK_CUDA(cudaMemsetAsync(a, 1, bytes, stream));
  const int reps = 10;
  CHECK_CUDA(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream));  // warm-up
  CHECK_CUDA(cudaEventRecord(start, stream));
  for (int r = 0; r < reps; ++r) CHECK_CUDA(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream));
  CHECK_CUDA(cudaEventRecord(stop, stream));
  CHECK_CUDA(cudaEventSynchronize(stop));
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  std::printf("copy_gbps %.1f\n", 2.0 * bytes * reps / (ms * 1e-3) / 1e9);

  const int blocks = prop.multiProcessorCount * 8, threads = 256;
  CHECK_CUDA(cudaMalloc(&partial, blocks * sizeof(unsigned)));
  CHECK_CUDA(cudaMemsetAsync(partial, 0, blocks * sizeof(unsigned), stream));
  const size_t n16 = bytes / sizeof(uint4);
  read_kernel<<<blocks, threads, 0, stream>>>(static_cast<const uint4*>(a), n16, partial);  // warm-up
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaEventRecord(start, stream));
  for (int r = 0; r < reps; ++r) read_kernel<<<blocks, threads, 0, stream>>>(static_cast<const uint4*>(a), n16, partial);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaEventRecord(stop, stream));
  CHECK_CUDA(cudaEventSynchronize(stop));
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  std::printf("read_gbps %.1f\n", 1.0 * bytes * reps / (ms * 1e-3) / 1e9);
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(partial));

  // --- cuBLAS F16 GEMM (tensor cores), f32 accumulation, as the engine's prompt path uses ---
  const int m = 8192, n = 8192, k = 8192;
  __half *A = nullptr, *B = nullptr;
  float* C = nullptr;
  CHECK_CUDA(cudaMalloc(&A, sizeof(__half) * m * k));
  CHECK_CUDA(cudaMalloc(&B, sizeof(__half) * k * n));
  CHECK_CUDA(cudaMalloc(&C, sizeof(float) * m * n));
  fill_half<<<1024, 256, 0, stream>>>(A, size_t{1} * m * k);
  fill_half<<<1024, 256, 0, stream>>>(B, size_t{1} * k * n);
  CHECK_CUDA(cudaGetLastError());
  cublasHandle_t handle;
  CHECK_CUBLAS(cublasCreate(&handle));
  CHECK_CUBLAS(cublasSetStream(handle, stream));
  const float alpha = 1.0f, beta = 0.0f;
  auto gemm = [&] {
    return cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, A, CUDA_R_16F, k, B, CUDA_R_16F, k, &beta,
                        C, CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  CHECK_CUBLAS(gemm());  // warm-up (and heuristics)
  CHECK_CUDA(cudaEventRecord(start, stream));
  const int gemm_reps = 20;
  for (int r = 0; r < gemm_reps; ++r) CHECK_CUBLAS(gemm());
  CHECK_CUDA(cudaEventRecord(stop, stream));
  CHECK_CUDA(cudaEventSynchronize(stop));
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  std::printf("gemm_f16_tflops %.1f\n", 2.0 * m * n * k * gemm_reps / (ms * 1e-3) / 1e12);
  CHECK_CUBLAS(cublasDestroy(handle));
  CHECK_CUDA(cudaFree(A));
  CHECK_CUDA(cudaFree(B));
  CHECK_CUDA(cudaFree(C));
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  CHECK_CUDA(cudaStreamDestroy(stream));
  return 0;
}
