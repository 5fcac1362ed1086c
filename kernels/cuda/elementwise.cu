// kernels/cuda/elementwise.cu — the f32 element-wise ops of a layer: y += x, y[r] += bias,
// y *= x, gate = silu(gate) * up, gate = gelu_tanh(gate) * up, x *= s. One kernel template over the op: 4 elements per thread
// (16-byte accesses) when the pointers allow it, else one; a grid-stride loop.
#include "kernels/common/scalar_math.h"
#include "kernels/cuda/common.cuh"

namespace strata::kernels::cuda {
namespace {

struct OpAdd {
  __device__ static float apply(float y, float x) { return y + x; }
};
struct OpMul {
  __device__ static float apply(float y, float x) { return y * x; }
};
struct OpSwiglu {  // y = gate, x = up; the activation as the CPU's (kernels/common/scalar_math.h)
  __device__ static float apply(float g, float u) { return silu(g) * u; }
};

struct OpGeglu {  // y = gate, x = up; GELU with the tanh approximation (kernels/common/scalar_math.h)
  __device__ static float apply(float g, float u) { return gelu_tanh(g) * u; }
};

struct OpSwigluOai {  // y = gate, x = up; gpt-oss's clamped SwiGLU (kernels/common/scalar_math.h)
  __device__ static float apply(float g, float u) { return strata::kernels::swiglu_oai(g, u); }
};

// Launch: grid-stride over n elements, 256 threads per block.
__global__ void __launch_bounds__(256) scale_kernel(float* x, float s, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    x[i] *= s;
}

// Launch: grid-stride over n / 4 groups of 4 (vec) or n elements, 256 threads per block.
template <class Op>
__global__ void __launch_bounds__(256) binary_kernel(float* y, const float* x, int64_t n, bool vec) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  int64_t done = 0;
  if (vec) {
    const int64_t n4 = n / 4;
    for (int64_t i = first; i < n4; i += stride) {
      float4 a = reinterpret_cast<float4*>(y)[i];
      const float4 b = reinterpret_cast<const float4*>(x)[i];
      a.x = Op::apply(a.x, b.x);
      a.y = Op::apply(a.y, b.y);
      a.z = Op::apply(a.z, b.z);
      a.w = Op::apply(a.w, b.w);
      reinterpret_cast<float4*>(y)[i] = a;
    }
    done = n4 * 4;
  }
  for (int64_t i = done + first; i < n; i += stride) y[i] = Op::apply(y[i], x[i]);
}

template <class Op>
cudaError_t launch_binary(float* y, const float* x, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const bool vec = aligned_to(y, 16) && aligned_to(x, 16);
  binary_kernel<Op><<<grid_for(vec ? ceil_div(n, 4) : n, 256), 256, 0, stream>>>(y, x, n, vec);
  return cudaGetLastError();
}

// Launch: grid (column blocks, row blocks), 256 threads; grid-stride over columns (x) and rows (y).
__global__ void __launch_bounds__(256) add_rows_kernel(float* y, const float* bias, int64_t n_rows, int64_t n) {
  for (int64_t r = blockIdx.y; r < n_rows; r += gridDim.y)
    for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)
      y[r * n + i] += bias[i];
}

}  // namespace

cudaError_t add(float* y, const float* x, int64_t n, cudaStream_t stream) { return launch_binary<OpAdd>(y, x, n, stream); }
cudaError_t mul(float* y, const float* x, int64_t n, cudaStream_t stream) { return launch_binary<OpMul>(y, x, n, stream); }
cudaError_t swiglu(float* gate, const float* up, int64_t n, cudaStream_t stream) {
  return launch_binary<OpSwiglu>(gate, up, n, stream);
}

cudaError_t geglu(float* gate, const float* up, int64_t n, cudaStream_t stream) {
  return launch_binary<OpGeglu>(gate, up, n, stream);
}

cudaError_t swiglu_oai(float* gate, const float* up, int64_t n, cudaStream_t stream) {
  return launch_binary<OpSwigluOai>(gate, up, n, stream);
}

// Launch: grid-stride over n elements, 256 threads per block.
__global__ void __launch_bounds__(256) gelu_kernel(float* x, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    x[i] = strata::kernels::gelu_tanh(x[i]);
}

cudaError_t gelu(float* x, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  gelu_kernel<<<grid_for(n, 256), 256, 0, stream>>>(x, n);
  return cudaGetLastError();
}

cudaError_t scale(float* x, float s, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  scale_kernel<<<grid_for(n, 256), 256, 0, stream>>>(x, s, n);
  return cudaGetLastError();
}

// Launch: grid-stride over n elements, 256 threads per block.
__global__ void __launch_bounds__(256) softcap_kernel(float* x, float cap, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    x[i] = strata::kernels::softcap(x[i], cap);
}

cudaError_t softcap(float* x, float cap, int64_t n, cudaStream_t stream) {
  if (n < 0 || !(cap > 0.0f)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  softcap_kernel<<<grid_for(n, 256), 256, 0, stream>>>(x, cap, n);
  return cudaGetLastError();
}

cudaError_t add_rows(float* y, const float* bias, int64_t n_rows, int64_t n, cudaStream_t stream) {
  if (n_rows < 0 || n < 0) return cudaErrorInvalidValue;
  if (n_rows == 0 || n == 0) return cudaSuccess;
  const dim3 grid(grid_for(n, 256, 1024), static_cast<unsigned>(n_rows < 65535 ? n_rows : 65535));
  add_rows_kernel<<<grid, 256, 0, stream>>>(y, bias, n_rows, n);
  return cudaGetLastError();
}

}  // namespace strata::kernels::cuda
