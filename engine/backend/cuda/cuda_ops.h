// engine/backend/cuda/cuda_ops.h — the Ops table of one CUDA device: one non-blocking stream (and
// in the fast prompt mode a cuBLAS handle bound to it), the scratch its kernels need (charged to the device's accounting as
// BufferUse::Scratch, so memory numbers stay true), and pinned staging for host uploads. Calls only
// the host entry points of kernels/cuda/cuda_kernels.h. Included only by engine/backend/cuda/cuda_*.cpp.
// Threads: one thread at a time per CudaOps (the device's worker); ops return once queued on the
// stream. A device that failed (a sticky error, from any Ops or copy of it) makes every op return
// that failure at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "engine/backend/ops.h"
#include "engine/core/status.h"
#include "engine/backend/device.h"

namespace strata::backend::cuda {

class CudaDevice;

// The fast prompt mode (STRATA_CUDA_FAST_GEMM=1, not batch-invariant): prompt batches of up to
// this many tokens still take mmv rather than dequantizing the matrix: each token group re-reads
// the quantized weights (~0.56 byte per element for Q4_K), while the GEMM path reads them once,
// writes and reads an f16 copy (~4.6 bytes per element in all). Four groups stay below that.
inline constexpr int64_t kMmvBatchedMaxTokens = 32;
// The most bytes of f16 weights dequantized at once for a prompt GEMM; larger matrices (the output
// projection of a large vocabulary) are multiplied in row tiles of at most this size.
inline constexpr size_t kMaxDequantBytes = 256ull << 20;
// Each of the two pinned slots that from_host and embed copy host data through first: bytes at most
// (grown on demand up to this; larger uploads go through in chunks).
inline constexpr size_t kOpsStagingBytes = 8ull << 20;

class CudaOps final : public backend::Ops {
 public:
  // Creates the stream, the pinned slots' events and, in the fast prompt mode only, the cuBLAS
  // handle (cublasSetStream, and a workspace charged to the device: 32 MiB on Hopper and newer,
  // 4 MiB before, as cuBLAS recommends).
  // Other scratch is allocated at first use and grows to the largest shape seen (see the fields).
  static Expected<std::unique_ptr<CudaOps>> create(CudaDevice& device, const backend::OpsWorkspace& workspace);
  ~CudaOps() override;  // waits for the stream, then frees its scratch
  CudaOps(const CudaOps&) = delete;
  CudaOps& operator=(const CudaOps&) = delete;

  Status embed(const MatrixView& table, const int32_t* tokens, int64_t n, float* out) override;
  Status rms_norm(const float* x, const float* weight, float* out, int64_t n_rows, int64_t n, float eps) override;
  Status layer_norm(const float* x, const float* weight, const float* bias, float* out, int64_t n_rows, int64_t n,
                    float eps) override;
  // Default (batch-invariant): mmv for every token count, one launch: each token's output has the
  // bits of a one-token decode (kernels/cuda/mmv_kernel.cuh), so prompts, chunks and batches
  // agree with decode bit for bit.
  // Fast prompt mode (STRATA_CUDA_FAST_GEMM=1 when the device opens; NOT batch-invariant: a
  // prompt's rows differ from decode's in the last bits, so greedy text can change with --batch):
  // more than 8 tokens take cuBLAS. F32 weights: cublasSgemm in full f32 (no TF32). F16 weights:
  // gemm_f16 straight on the weights. Others: up to kMmvBatchedMaxTokens tokens mmv; more,
  // dequantize_f16 into a scratch (in row tiles of <= kMaxDequantBytes) + convert x to f16 +
  // gemm_f16 (f32 accumulate). The f16 activations of a token whose largest |value| is past 65504
  // are scaled by a power of two (convert_rows_f32_to_f16) and its output row scaled back: no inf
  // where decode has none. BF16 weights take the f16 path too: values past f16's range (65504)
  // would overflow; model weights stay far below it.
  Status matmul(const MatrixView& w, const float* x, int64_t n_tokens, float* y) override;
  Status add(float* y, const float* x, int64_t n) override;
  Status add_rows(float* y, const float* bias, int64_t n_rows, int64_t n) override;
  Status mul(float* y, const float* x, int64_t n) override;
  Status rope(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, int64_t pos0,
              const RopeParams& params) override;
  Status attention(const AttentionArgs& args) override;
  Status swiglu(float* gate, const float* up, int64_t n) override;
  Status geglu(float* gate, const float* up, int64_t n) override;
  Status swiglu_oai(float* gate, const float* up, int64_t n) override;
  Status gelu(float* x, int64_t n) override;
  Status scale(float* x, float s, int64_t n) override;
  Status softcap(float* x, float cap, int64_t n) override;
  Status zero(float* x, int64_t n) override;  // cudaMemsetAsync
  Status softmax(float* x, int64_t n_rows, int64_t n) override;
  // The index list (and scales) go up through a pinned slot into rows_ / row_scales_, then one
  // kernel: a block per row.
  Status gather_rows(const float* src, int64_t src_rows, int64_t n, const int32_t* rows, int64_t n_rows,
                     float* dst) override;
  Status scale_add_rows(float* dst, int64_t dst_rows, int64_t n, const float* src, const int32_t* rows,
                        const float* scales, int64_t n_rows) override;

  // Queued D2H copy, then waits for the stream (host_dst may be pageable).
  Status to_host(const void* src, void* host_dst, size_t bytes) override;
  // Copies host_src into a pinned slot and queues the upload: host_src may be reused at once.
  Status from_host(const void* host_src, void* dst, size_t bytes) override;
  Status copy(const void* src, void* dst, size_t bytes) override;
  Status synchronize() override;
  // A timing event (cudaEventCreate) recorded on the stream.
  Expected<std::unique_ptr<Event>> record_event() override;

  cudaStream_t stream() const { return stream_; }
  const CudaDevice* device() const { return &device_; }

 private:
  CudaOps(CudaDevice& device, const backend::OpsWorkspace& workspace);
  Status init();
  // The device is usable and current on the calling thread.
  Status begin();
  // `buffer` holds at least `bytes` (rounded up); a smaller one is freed after the stream has
  // drained (queued work may still use it) and replaced. Charged to the device as Scratch.
  Status ensure(std::unique_ptr<backend::Buffer>& buffer, size_t bytes, const char* what);
  // Host bytes -> pinned slot -> queued copy to device memory `dst`.
  Status upload(const void* host_src, void* dst, size_t bytes);
  Status matmul_sgemm(const MatrixView& w, const float* x, int64_t n_tokens, float* y);
  Status matmul_gemm_f16(const MatrixView& w, const float* x, int64_t n_tokens, float* y);

  CudaDevice& device_;
  backend::OpsWorkspace workspace_;  // max_tokens / max_ctx size the scratch below
  cudaStream_t stream_ = nullptr;     // non-blocking: no implicit sync with the legacy stream
  cublasHandle_t cublas_ = nullptr;   // bound to stream_
  bool fast_gemm_ = false;            // STRATA_CUDA_FAST_GEMM=1: prompts through cuBLAS (see matmul)

  // Device scratch, each charged to the device (BufferUse::Scratch) and grown to the largest need:
  std::unique_ptr<backend::Buffer> cublas_workspace_;  // cuBLAS' workspace (cublasSetWorkspace)
  std::unique_ptr<backend::Buffer> w_f16_;     // [tile rows][cols] f16: dequantized weights, <= kMaxDequantBytes
  std::unique_ptr<backend::Buffer> x_f16_;     // [max(n_tokens, max_tokens)][cols] f16: activations
  std::unique_ptr<backend::Buffer> x_scale_;   // [max(n_tokens, max_tokens)] f32: 2^-k of each token's f16 scaling
  std::unique_ptr<backend::Buffer> y_tile_;    // [max(n_tokens, max_tokens)][tile rows] f32: one row tile's output
  std::unique_ptr<backend::Buffer> attention_workspace_;  // attention_workspace_bytes(max_tokens, max_ctx, ...)
  std::unique_ptr<backend::Buffer> tokens_;    // [n] int32: embed's token ids
  std::unique_ptr<backend::Buffer> rows_;      // [n_rows] int32: gather_rows / scale_add_rows indices
  std::unique_ptr<backend::Buffer> row_scales_;  // [n_rows] f32: scale_add_rows' scales

  // Pinned host slots for upload(), used alternately; done: the copy that last read the slot ran.
  struct PinnedSlot {
    void* host = nullptr;
    size_t bytes = 0;
    cudaEvent_t done = nullptr;
  };
  PinnedSlot pinned_[2];
  int next_slot_ = 0;
};

}  // namespace strata::backend::cuda
