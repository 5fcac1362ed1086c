// kernels/cuda/embed.cu — token embedding: rows of a table of any weight type, dequantized to f32
// (the CPU dequantizer's floats, bit for bit, via quant_blocks.cuh).
//
// Variants: embed_oct_kernel (quantized types: one oct of 8 elements per thread, two 16-byte
// stores when out is 16-byte aligned); embed_elem_kernel (F32 / F16 / BF16, any row length).
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/quant_blocks.cuh"

namespace strata::kernels::cuda {
namespace {

// Launch: grid (min(ceil(cols / 8 / 256), 1024), n), 256 threads. blockIdx.y picks output row i
// (table row tokens[i]); threads stride over that row's octs.
template <class Dec>
__global__ void __launch_bounds__(256) embed_oct_kernel(const uint8_t* table, int64_t row_bytes, int64_t cols,
                                                        const int32_t* tokens, float* out, bool vec_out) {
  constexpr int kOcts = Dec::kElems / 8;
  const int64_t i = blockIdx.y;
  const uint8_t* row = table + static_cast<int64_t>(tokens[i]) * row_bytes;
  float* o = out + i * cols;
  for (int64_t q = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; q < cols / 8;
       q += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v[8];
    decode_oct<Dec>(row + (q / kOcts) * Dec::kBytes, static_cast<int>(q % kOcts), v);
    if (vec_out) {
      reinterpret_cast<float4*>(o + q * 8)[0] = make_float4(v[0], v[1], v[2], v[3]);
      reinterpret_cast<float4*>(o + q * 8)[1] = make_float4(v[4], v[5], v[6], v[7]);
    } else {
#pragma unroll
      for (int k = 0; k < 8; ++k) o[q * 8 + k] = v[k];
    }
  }
}

// Launch: grid (min(ceil(cols / 256), 1024), n), 256 threads; threads stride over row i's elements.
template <class Dec>
__global__ void __launch_bounds__(256) embed_elem_kernel(const uint8_t* table, int64_t row_bytes, int64_t cols,
                                                         const int32_t* tokens, float* out) {
  const int64_t i = blockIdx.y;
  const uint8_t* row = table + static_cast<int64_t>(tokens[i]) * row_bytes;
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < cols;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i * cols + c] = Dec::element(row, c);
}

}  // namespace

cudaError_t embed_rows(const MatView& table, const int32_t* tokens, int64_t n, float* out, cudaStream_t stream) {
  const QbGeometry g = qb_geometry(table.type);
  if (g.block_elems == 0 || n < 0 || table.cols < 0 || table.cols % g.block_elems != 0) return cudaErrorInvalidValue;
  if (n == 0 || table.cols == 0) return cudaSuccess;
  if (n > 65535) {  // grid.y limit: split the batch
    for (int64_t i0 = 0; i0 < n; i0 += 65535) {
      STRATA_CUDA_TRY(embed_rows(table, tokens + i0, n - i0 < 65535 ? n - i0 : 65535, out + i0 * table.cols, stream));
    }
    return cudaSuccess;
  }
  if (!aligned_to(table.data, qb_data_alignment(table.type))) return cudaErrorInvalidValue;
  const auto* src = static_cast<const uint8_t*>(table.data);
  const int64_t row_bytes = qb_row_bytes(table.type, table.cols);
  visit_decoder(table.type, [&](auto tag) {
    using Dec = typename decltype(tag)::type;
    if constexpr (Dec::kMode == MinMode::kRaw) {
      const dim3 grid(grid_for(table.cols, 256, 1024), static_cast<unsigned>(n));
      embed_elem_kernel<Dec><<<grid, 256, 0, stream>>>(src, row_bytes, table.cols, tokens, out);
    } else {
      const dim3 grid(grid_for(table.cols / 8, 256, 1024), static_cast<unsigned>(n));
      embed_oct_kernel<Dec><<<grid, 256, 0, stream>>>(src, row_bytes, table.cols, tokens, out, aligned_to(out, 16));
    }
  });
  return cudaGetLastError();
}

}  // namespace strata::kernels::cuda
