// kernels/cuda/dequantize_f16.cu — W (any weight type) -> f16 [rows][cols], the first half of the
// prompt path (dequantize once, then gemm_f16 on tensor cores). Values are the CPU dequantizer's
// floats (quant_blocks.cuh, bit for bit) rounded to nearest-even f16.
//
// Variants: dequant_oct_kernel (quantized types: one oct of 8 elements per thread, one 16-byte
// store when out is 16-byte aligned); dequant_elem_kernel (F32 / BF16: one element per thread,
// any row length); F16 is a device-to-device copy.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/quant_blocks.cuh"

namespace strata::kernels::cuda {
namespace {

// Launch: grid-stride over the rows * cols / 8 octs of W, 256 threads per block. A thread
// decodes one oct (reads its block's scale bytes and 8 elements' bits; neighbouring threads read
// neighbouring bytes) and writes 8 halves.
template <class Dec>
__global__ void __launch_bounds__(256) dequant_oct_kernel(const uint8_t* w, int64_t row_bytes, int64_t cols,
                                                          int64_t n_octs, uint16_t* out, bool vec_out) {
  constexpr int kOcts = Dec::kElems / 8;
  const int64_t octs_per_row = cols / 8;
  for (int64_t q = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; q < n_octs;
       q += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = q / octs_per_row, oo = q % octs_per_row;
    float v[8];
    decode_oct<Dec>(w + row * row_bytes + (oo / kOcts) * Dec::kBytes, static_cast<int>(oo % kOcts), v);
    uint16_t* o = out + row * cols + oo * 8;
    if (vec_out) {
      uint4 pk;
      pk.x = f32_to_f16_rn(v[0]) | (static_cast<uint32_t>(f32_to_f16_rn(v[1])) << 16);
      pk.y = f32_to_f16_rn(v[2]) | (static_cast<uint32_t>(f32_to_f16_rn(v[3])) << 16);
      pk.z = f32_to_f16_rn(v[4]) | (static_cast<uint32_t>(f32_to_f16_rn(v[5])) << 16);
      pk.w = f32_to_f16_rn(v[6]) | (static_cast<uint32_t>(f32_to_f16_rn(v[7])) << 16);
      *reinterpret_cast<uint4*>(o) = pk;
    } else {
#pragma unroll
      for (int k = 0; k < 8; ++k) o[k] = f32_to_f16_rn(v[k]);
    }
  }
}

// Launch: grid-stride over the n = rows * cols elements (float types are contiguous), 256
// threads per block; a thread converts one element.
template <class Dec>
__global__ void __launch_bounds__(256) dequant_elem_kernel(const uint8_t* w, int64_t n, uint16_t* out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = f32_to_f16_rn(Dec::element(w, i));
}

}  // namespace

cudaError_t dequantize_f16(const MatView& w, void* out_f16, cudaStream_t stream) {
  const QbGeometry g = qb_geometry(w.type);
  if (g.block_elems == 0 || w.rows < 0 || w.cols < 0 || w.cols % g.block_elems != 0) return cudaErrorInvalidValue;
  const int64_t n = w.rows * w.cols;
  if (n == 0) return cudaSuccess;
  if (!aligned_to(w.data, qb_data_alignment(w.type)) || !aligned_to(out_f16, 2)) return cudaErrorInvalidValue;
  const auto* src = static_cast<const uint8_t*>(w.data);
  auto* out = static_cast<uint16_t*>(out_f16);
  if (w.type == DType::F16) return cudaMemcpyAsync(out, src, static_cast<size_t>(n) * 2, cudaMemcpyDeviceToDevice, stream);
  visit_decoder(w.type, [&](auto tag) {
    using Dec = typename decltype(tag)::type;
    if constexpr (Dec::kMode == MinMode::kRaw) {
      dequant_elem_kernel<Dec><<<grid_for(n, 256), 256, 0, stream>>>(src, n, out);
    } else {
      const int64_t n_octs = n / 8;
      dequant_oct_kernel<Dec><<<grid_for(n_octs, 256), 256, 0, stream>>>(src, qb_row_bytes(w.type, w.cols), w.cols,
                                                                         n_octs, out, aligned_to(out, 16));
    }
  });
  return cudaGetLastError();
}

}  // namespace strata::kernels::cuda
