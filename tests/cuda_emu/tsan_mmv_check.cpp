// tests/cuda_emu/tsan_mmv_check.cpp — the ThreadSanitizer check of the emulated matrix-vector
// kernels (tests only): mmv on shapes where the four warps of a block take different numbers of
// tiles, against the CPU reference. Exit 0: every result within tolerance; 1: a wrong result
// ("MISMATCH" on stderr). ThreadSanitizer adds its own reports and exit code (66). Built twice:
// from the real kernels and from the mutant with a __syncwarp removed (CMakeLists.txt).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "kernels/cpu/quant.h"
#include "kernels/cuda/cuda_kernels.h"

using strata::kernels::DType;

namespace {

bool check(DType type, int64_t rows, int64_t cols, int64_t n_tokens, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> wf(rows * cols), x(n_tokens * cols);
  for (auto& v : wf) v = u(rng);
  for (auto& v : x) v = u(rng);
  const int64_t rb = strata::kernels::row_bytes(type, cols);
  std::vector<uint8_t> wq(rows * rb);
  std::vector<float> deq(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    strata::kernels::quantize_row(type, &wf[r * cols], &wq[r * rb], cols);
    strata::kernels::dequantize_row(type, &wq[r * rb], &deq[r * cols], cols);
  }
  void *dw = nullptr, *dx = nullptr, *dy = nullptr;
  if (cudaMalloc(&dw, wq.size()) != cudaSuccess || cudaMalloc(&dx, x.size() * 4) != cudaSuccess ||
      cudaMalloc(&dy, rows * n_tokens * 4) != cudaSuccess) {
    std::fprintf(stderr, "cudaMalloc failed\n");
    return false;
  }
  cudaMemcpy(dw, wq.data(), wq.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice);
  strata::kernels::cuda::MatView w{dw, type, rows, cols};
  const cudaError_t launched = strata::kernels::cuda::mmv(w, static_cast<const float*>(dx), n_tokens,
                                                          static_cast<float*>(dy), nullptr);
  const cudaError_t synced = cudaDeviceSynchronize();
  if (launched != cudaSuccess || synced != cudaSuccess) {
    std::fprintf(stderr, "mmv failed: %s / %s\n", cudaGetErrorName(launched), cudaGetErrorName(synced));
    return false;
  }
  std::vector<float> y(rows * n_tokens);
  cudaMemcpy(y.data(), dy, y.size() * 4, cudaMemcpyDeviceToHost);
  cudaFree(dw);
  cudaFree(dx);
  cudaFree(dy);
  bool ok = true;
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      double ref = 0, mag = 0;
      for (int64_t c = 0; c < cols; ++c) {
        ref += static_cast<double>(deq[r * cols + c]) * x[t * cols + c];
        mag += std::fabs(static_cast<double>(deq[r * cols + c]) * x[t * cols + c]);
      }
      const double got = y[t * rows + r];
      if (!(std::fabs(got - ref) <= 1e-5 * mag)) {  // also catches NaN
        if (ok)
          std::fprintf(stderr, "MISMATCH %s rows %lld cols %lld tokens %lld: y[%lld][%lld] = %.9g, reference %.9g\n",
                       strata::kernels::dtype_name(type), static_cast<long long>(rows), static_cast<long long>(cols),
                       static_cast<long long>(n_tokens), static_cast<long long>(t), static_cast<long long>(r), got, ref);
        ok = false;
      }
    }
  return ok;
}

}  // namespace

int main() {
  bool ok = true;
  // Q8_0: 1024-element tiles; 5376 columns = 6 tiles (warps 0 and 1 take two, warps 2 and 3 one).
  ok &= check(DType::Q8_0, 6, 5376, 1, 1);
  ok &= check(DType::Q4_K, 5, 5376, 3, 2);
  ok &= check(DType::F32, 5, 1280, 8, 3);  // 256-element tiles: 5 tiles
  std::printf("%s\n", ok ? "mmv: all results within tolerance" : "mmv: WRONG RESULTS");
  return ok ? 0 : 1;
}
