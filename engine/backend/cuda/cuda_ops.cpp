// engine/backend/cuda/cuda_ops.cpp — CudaOps: the op table of a CUDA device over the kernels of
// kernels/cuda/cuda_kernels.h (argument checks, scratch, the choice between mmv and GEMM), and
// CudaEvent. Every launch and CUDA/cuBLAS call is checked (cuda_check.h).
// Threads: one thread at a time per CudaOps; a CudaEvent may be waited on from any thread.
#include "engine/backend/cuda/cuda_ops.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/row_index.h"
#include "engine/backend/cuda/cuda_device.h"
#include "kernels/cuda/cuda_kernels.h"

// A kernel launch (or CUDA call) whose failure should also say which op and shapes it served:
// `context` (a std::string expression) is evaluated only on failure.
#define STRATA_CUDA_LAUNCH(context, expr)                                                                   \
  do {                                                                                                      \
    const cudaError_t strata_launch_e_ = (expr);                                                            \
    if (strata_launch_e_ != cudaSuccess) {                                                                  \
      ::strata::Error strata_launch_error_ =                                                                \
          ::strata::backend::cuda::device_error(&device_, strata_launch_e_, #expr, __FILE__, __LINE__);     \
      strata_launch_error_.message += " in " + std::string(context);                                        \
      return strata_launch_error_;                                                                          \
    }                                                                                                       \
  } while (0)

namespace strata::backend::cuda {

namespace {

using kernels::DType;

kernels::cuda::MatView to_view(const MatrixView& m) {
  kernels::cuda::MatView v;
  v.data = m.data;
  v.type = m.type;
  v.rows = m.rows;
  v.cols = m.cols;
  return v;
}

// "[4096 x 4096 q4_k]" (appended piecewise: GCC 12 warns falsely on "[" + std::to_string(...)).
std::string shape(const MatrixView& m) {
  std::string s(1, '[');
  s += std::to_string(m.rows);
  s += " x ";
  s += std::to_string(m.cols);
  s += ' ';
  s += kernels::dtype_name(m.type);
  s += ']';
  return s;
}

// InvalidArgument for a negative size or a null pointer, naming the op and the device; a null
// pointer reaching a kernel would be an illegal address, which fails the whole device.
Status check_args(const CudaDevice& device, const char* op, std::initializer_list<int64_t> sizes,
                  std::initializer_list<const void*> pointers) {
  for (int64_t n : sizes) {
    if (n < 0)
      return Error{Code::InvalidArgument, std::string(op) + " on device '" + device.id() + "': negative size " +
                                              std::to_string(n)};
  }
  for (const void* p : pointers) {
    if (p == nullptr)
      return Error{Code::InvalidArgument, std::string(op) + " on device '" + device.id() + "': a null pointer"};
  }
  return Status();
}

size_t round_up(size_t bytes, size_t granule) { return (bytes + granule - 1) / granule * granule; }

// A timing event on one CudaOps' stream.
class CudaEvent final : public Event {
 public:
  CudaEvent(CudaDevice& device, const CudaOps* owner, cudaEvent_t event)
      : device_(device), owner_(owner), event_(event) {}
  ~CudaEvent() override {
    if (cudaSetDevice(device_.ordinal()) == cudaSuccess) (void)cudaEventDestroy(event_);
    (void)cudaGetLastError();
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  Status synchronize() override {
    STRATA_RETURN_IF_ERROR(device_.make_current());
    STRATA_CUDA_TRY_ON(&device_, cudaEventSynchronize(event_));
    return Status();
  }

  // Waits for both events, then reads the GPU's timestamps (resolution ~0.5 us).
  Expected<int64_t> elapsed_ns_since(const Event& earlier) override {
    const auto* start = dynamic_cast<const CudaEvent*>(&earlier);
    if (start == nullptr || start->owner_ != owner_)
      return Error{Code::InvalidArgument, "device '" + device_.id() +
                                              "': elapsed time between events of different op streams"};
    STRATA_RETURN_IF_ERROR(device_.make_current());
    STRATA_CUDA_TRY_ON(&device_, cudaEventSynchronize(start->event_));
    STRATA_CUDA_TRY_ON(&device_, cudaEventSynchronize(event_));
    float ms = 0;
    STRATA_CUDA_TRY_ON(&device_, cudaEventElapsedTime(&ms, start->event_, event_));
    return static_cast<int64_t>(static_cast<double>(ms) * 1e6);
  }

 private:
  CudaDevice& device_;
  const CudaOps* owner_;
  cudaEvent_t event_;
};

}  // namespace

CudaOps::CudaOps(CudaDevice& device, const backend::OpsWorkspace& workspace) : device_(device), workspace_(workspace) {}

Expected<std::unique_ptr<CudaOps>> CudaOps::create(CudaDevice& device, const backend::OpsWorkspace& workspace) {
  std::unique_ptr<CudaOps> ops(new CudaOps(device, workspace));
  if (Status s = ops->init(); !s.ok()) {
    Error e = s.error();
    e.message = "creating the ops of device '" + device.id() + "': " + e.message;
    return e;
  }
  return ops;
}

Status CudaOps::init() {
  STRATA_RETURN_IF_ERROR(device_.make_current());
  STRATA_CUDA_TRY_ON(&device_, cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  const char* fast = std::getenv("STRATA_CUDA_FAST_GEMM");
  fast_gemm_ = fast != nullptr && std::string(fast) == "1";
  if (fast_gemm_) {  // cuBLAS only serves the fast prompt mode
    STRATA_CUBLAS_TRY_ON(&device_, cublasCreate(&cublas_));
    // cublasSetStream resets the workspace to cuBLAS' own pool: bind the stream first.
    STRATA_CUBLAS_TRY_ON(&device_, cublasSetStream(cublas_, stream_));
    const size_t cublas_bytes = device_.compute_capability_major() >= 9 ? (32ull << 20) : (4ull << 20);
    STRATA_RETURN_IF_ERROR(ensure(cublas_workspace_, cublas_bytes, "cublas workspace"));
    STRATA_CUBLAS_TRY_ON(&device_, cublasSetWorkspace(cublas_, cublas_workspace_->data(), cublas_workspace_->size()));
  }
  for (PinnedSlot& slot : pinned_)
    STRATA_CUDA_TRY_ON(&device_, cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming));
  return Status();
}

CudaOps::~CudaOps() {
  // Best effort: queued work may still read the scratch and the pinned slots.
  (void)cudaSetDevice(device_.ordinal());
  // (Not on a failed device: a hung kernel would hold this destructor forever.)
  if (stream_ != nullptr && !device_.failed() && cudaStreamSynchronize(stream_) != cudaSuccess) (void)cudaGetLastError();
  if (cublas_ != nullptr) (void)cublasDestroy(cublas_);
  cublas_workspace_.reset();
  w_f16_.reset();
  x_f16_.reset();
  x_scale_.reset();
  y_tile_.reset();
  attention_workspace_.reset();
  tokens_.reset();
  (void)cudaSetDevice(device_.ordinal());
  for (PinnedSlot& slot : pinned_) {
    if (slot.done != nullptr) (void)cudaEventDestroy(slot.done);
    if (slot.host != nullptr) (void)cudaFreeHost(slot.host);
  }
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  (void)cudaGetLastError();
}

Status CudaOps::begin() { return device_.make_current(); }

Status CudaOps::ensure(std::unique_ptr<backend::Buffer>& buffer, size_t bytes, const char* what) {
  if (buffer && buffer->size() >= bytes) return Status();
  // Small buffers in 64 KiB steps; large ones in cudaMalloc's own 2 MiB granule.
  const size_t rounded = round_up(std::max<size_t>(bytes, 1), bytes < (2u << 20) ? (64u << 10) : (2u << 20));
  if (buffer) {
    STRATA_CUDA_WAIT_ON(device_, stream_);
    buffer.reset();
  }
  Expected<std::unique_ptr<backend::Buffer>> allocated = device_.allocate(rounded, backend::BufferUse::Scratch);
  if (!allocated.ok()) {
    Error e = std::move(allocated).error();
    e.message = std::string("scratch for ") + what + ": " + e.message;
    return e;
  }
  buffer = std::move(allocated).value();
  return Status();
}

Status CudaOps::upload(const void* host_src, void* dst, size_t bytes) {
  const auto* src = static_cast<const uint8_t*>(host_src);
  auto* out = static_cast<uint8_t*>(dst);
  for (size_t off = 0; off < bytes; off += kOpsStagingBytes) {
    const size_t n = std::min(kOpsStagingBytes, bytes - off);
    PinnedSlot& slot = pinned_[next_slot_];
    next_slot_ ^= 1;
    // The copy that last read this slot must have run before the host overwrites it.
    STRATA_CUDA_TRY_ON(&device_, cudaEventSynchronize(slot.done));
    if (slot.bytes < n) {
      if (slot.host != nullptr) {
        STRATA_CUDA_TRY_ON(&device_, cudaFreeHost(slot.host));
        slot.host = nullptr;
        slot.bytes = 0;
      }
      const size_t grown = std::min(kOpsStagingBytes, round_up(std::max(n, size_t{64} << 10), size_t{64} << 10));
      STRATA_CUDA_TRY_ON(&device_, cudaHostAlloc(&slot.host, grown, cudaHostAllocPortable));
      slot.bytes = grown;
    }
    std::memcpy(slot.host, src + off, n);
    STRATA_CUDA_TRY_ON(&device_, cudaMemcpyAsync(out + off, slot.host, n, cudaMemcpyHostToDevice, stream_));
    STRATA_CUDA_TRY_ON(&device_, cudaEventRecord(slot.done, stream_));
  }
  return Status();
}

Status CudaOps::embed(const MatrixView& table, const int32_t* tokens, int64_t n, float* out) {
  STRATA_RETURN_IF_ERROR(begin());
  if (n == 0) return Status();
  if (n < 0 || tokens == nullptr || out == nullptr || table.data == nullptr)
    return Error{Code::InvalidArgument, "embed on device '" + device_.id() + "': " + std::to_string(n) +
                                            " tokens with a null table, token list or output"};
  if (!kernels::cuda::supports_weight_type(table.type))
    return Error{Code::Unsupported, "embed on device '" + device_.id() + "': table " + shape(table) +
                                        " of a type the CUDA kernels do not read"};
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= table.rows)
      return Error{Code::InvalidArgument, "embed on device '" + device_.id() + "': token " +
                                              std::to_string(tokens[i]) + " (index " + std::to_string(i) +
                                              ") is outside the table's " + std::to_string(table.rows) + " rows"};
  }
  const size_t bytes = static_cast<size_t>(n) * sizeof(int32_t);
  STRATA_RETURN_IF_ERROR(ensure(tokens_, bytes, "embed tokens"));
  STRATA_RETURN_IF_ERROR(upload(tokens, tokens_->data(), bytes));
  STRATA_CUDA_LAUNCH("embed of " + std::to_string(n) + " tokens from " + shape(table),
                     kernels::cuda::embed_rows(to_view(table), reinterpret_cast<const int32_t*>(tokens_->data()), n,
                                               out, stream_));
  return Status();
}

Status CudaOps::rms_norm(const float* x, const float* weight, float* out, int64_t n_rows, int64_t n, float eps) {
  STRATA_RETURN_IF_ERROR(begin());
  STRATA_RETURN_IF_ERROR(check_args(device_, "rms_norm", {n_rows, n}, {x, weight, out}));
  if (n_rows == 0 || n == 0) return Status();
  STRATA_CUDA_LAUNCH("rms_norm of [" + std::to_string(n_rows) + " x " + std::to_string(n) + "]",
                     kernels::cuda::rms_norm(x, weight, out, n_rows, n, eps, stream_));
  return Status();
}

Status CudaOps::layer_norm(const float* x, const float* weight, const float* bias, float* out, int64_t n_rows,
                           int64_t n, float eps) {
  STRATA_RETURN_IF_ERROR(begin());
  STRATA_RETURN_IF_ERROR(check_args(device_, "layer_norm", {n_rows, n}, {x, weight, out}));
  if (n_rows == 0 || n == 0) return Status();
  STRATA_CUDA_LAUNCH("layer_norm of [" + std::to_string(n_rows) + " x " + std::to_string(n) + "]",
                     kernels::cuda::layer_norm(x, weight, bias, out, n_rows, n, eps, stream_));
  return Status();
}

Status CudaOps::matmul(const MatrixView& w, const float* x, int64_t n_tokens, float* y) {
  STRATA_RETURN_IF_ERROR(begin());
  if (n_tokens == 0 || w.rows == 0) return Status();
  if (n_tokens < 0 || w.rows < 0 || w.cols <= 0 || w.data == nullptr || x == nullptr || y == nullptr)
    return Error{Code::InvalidArgument, "matmul on device '" + device_.id() + "': weights " + shape(w) + " x " +
                                            std::to_string(n_tokens) + " tokens with a null or empty operand"};
  if (!kernels::cuda::supports_weight_type(w.type))
    return Error{Code::Unsupported, "matmul on device '" + device_.id() + "': weights " + shape(w) +
                                        " of a type the CUDA kernels do not read"};
  if (w.cols % kernels::traits(w.type).block_elems != 0)
    return Error{Code::InvalidArgument, "matmul on device '" + device_.id() + "': weights " + shape(w) +
                                            ": columns are not a whole number of blocks"};
  if (!fast_gemm_ || n_tokens <= kernels::cuda::kMmvTokenGroup ||
      (w.type != DType::F32 && w.type != DType::F16 && n_tokens <= kMmvBatchedMaxTokens)) {
    STRATA_CUDA_LAUNCH("matmul " + shape(w) + " x " + std::to_string(n_tokens) + " tokens",
                       kernels::cuda::mmv(to_view(w), x, n_tokens, y, stream_));
    return Status();
  }
  if (w.type == DType::F32) return matmul_sgemm(w, x, n_tokens, y);
  return matmul_gemm_f16(w, x, n_tokens, y);
}

Status CudaOps::matmul_sgemm(const MatrixView& w, const float* x, int64_t n_tokens, float* y) {
  if (w.rows > INT_MAX || w.cols > INT_MAX || n_tokens > INT_MAX)
    return Error{Code::Unsupported, "matmul on device '" + device_.id() + "': " + shape(w) + " x " +
                                        std::to_string(n_tokens) + " tokens exceeds cuBLAS' 32-bit sizes"};
  // Column-major view: W is a (cols x rows) matrix with leading dimension cols, x is (cols x
  // n_tokens), y is (rows x n_tokens) with leading dimension rows: y = W^T x.
  const float alpha = 1.0f, beta = 0.0f;
  const int rows = static_cast<int>(w.rows), cols = static_cast<int>(w.cols), n = static_cast<int>(n_tokens);
  STRATA_CUBLAS_TRY_ON(&device_, cublasSgemm(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, rows, n, cols, &alpha,
                                             static_cast<const float*>(w.data), cols, x, cols, &beta, y, rows));
  return Status();
}

Status CudaOps::matmul_gemm_f16(const MatrixView& w, const float* x, int64_t n_tokens, float* y) {
  const std::string what = "matmul " + shape(w) + " x " + std::to_string(n_tokens) + " tokens";
  const auto rows = static_cast<size_t>(w.rows), cols = static_cast<size_t>(w.cols);
  const auto tokens = static_cast<size_t>(n_tokens);
  const size_t sized_tokens = std::max(tokens, static_cast<size_t>(std::max<int64_t>(workspace_.max_tokens, 0)));

  // Each token's activations go to f16 scaled by a power of two where they exceed f16's range
  // (values above 65504 would be inf); the product's rows are scaled back at the end.
  STRATA_RETURN_IF_ERROR(ensure(x_f16_, sized_tokens * cols * 2, "matmul activations (f16)"));
  STRATA_RETURN_IF_ERROR(ensure(x_scale_, sized_tokens * sizeof(float), "matmul activation scales"));
  STRATA_CUDA_LAUNCH(what, kernels::cuda::convert_rows_f32_to_f16(x, x_f16_->data(), x_scale_->floats(), n_tokens,
                                                                  w.cols, stream_));

  if (w.type == DType::F16) {
    STRATA_CUBLAS_TRY_ON(&device_, kernels::cuda::gemm_f16(cublas_, w.data, x_f16_->data(), y, w.rows, w.cols,
                                                           n_tokens));
    STRATA_CUDA_LAUNCH(what, kernels::cuda::scale_rows(y, x_scale_->floats(), n_tokens, w.rows, stream_));
    return Status();
  }

  // Row tiles of at most kMaxDequantBytes of f16 (multiples of 128 rows when that large).
  const size_t row_f16 = cols * 2;
  size_t tile_rows = rows;
  if (rows * row_f16 > kMaxDequantBytes) {
    tile_rows = std::max<size_t>(1, kMaxDequantBytes / row_f16);
    if (tile_rows >= 128) tile_rows = tile_rows / 128 * 128;
  }
  STRATA_RETURN_IF_ERROR(ensure(w_f16_, tile_rows * row_f16, "matmul weights (f16)"));
  if (tile_rows < rows) STRATA_RETURN_IF_ERROR(ensure(y_tile_, sized_tokens * tile_rows * sizeof(float), "matmul tile"));

  const size_t row_bytes = static_cast<size_t>(kernels::row_bytes(w.type, w.cols));
  for (size_t r0 = 0; r0 < rows; r0 += tile_rows) {
    const size_t rb = std::min(tile_rows, rows - r0);
    kernels::cuda::MatView tile = to_view(w);
    tile.data = static_cast<const uint8_t*>(w.data) + r0 * row_bytes;
    tile.rows = static_cast<int64_t>(rb);
    STRATA_CUDA_LAUNCH(what + ", rows [" + std::to_string(r0) + ", " + std::to_string(r0 + rb) + ")",
                       kernels::cuda::dequantize_f16(tile, w_f16_->data(), stream_));
    if (rb == rows) {
      STRATA_CUBLAS_TRY_ON(&device_, kernels::cuda::gemm_f16(cublas_, w_f16_->data(), x_f16_->data(), y, w.rows,
                                                             w.cols, n_tokens));
    } else {
      // The tile's output is [n_tokens][rb]; it lands in columns [r0, r0 + rb) of y: [n_tokens][rows].
      STRATA_CUBLAS_TRY_ON(&device_, kernels::cuda::gemm_f16(cublas_, w_f16_->data(), x_f16_->data(),
                                                             y_tile_->floats(), static_cast<int64_t>(rb), w.cols,
                                                             n_tokens));
      STRATA_CUDA_LAUNCH(what, cudaMemcpy2DAsync(y + r0, rows * sizeof(float), y_tile_->data(), rb * sizeof(float),
                                                 rb * sizeof(float), tokens, cudaMemcpyDeviceToDevice, stream_));
    }
  }
  STRATA_CUDA_LAUNCH(what, kernels::cuda::scale_rows(y, x_scale_->floats(), n_tokens, w.rows, stream_));
  return Status();
}

Status CudaOps::add(float* y, const float* x, int64_t n) {
  STRATA_RETURN_IF_ERROR(begin());
  STRATA_RETURN_IF_ERROR(check_args(device_, "add", {n}, {y, x}));
  if (n == 0) return Status();
  STRATA_CUDA_LAUNCH("add of " + std::to_string(n), kernels::cuda::add(y, x, n, stream_));
  return Status();
}

Status CudaOps::add_rows(float* y, const float* bias, int64_t n_rows, int64_t n) {
  STRATA_RETURN_IF_ERROR(begin());
  STRATA_RETURN_IF_ERROR(check_args(device_, "add_rows", {n_rows, n}, {y, bias}));
  if (n_rows == 0 || n == 0) return Status();
  STRATA_CUDA_LAUNCH("add_rows of [" + std::to_string(n_rows) + " x " + std::to_string(n) + "]",
                     kernels::cuda::add_rows(y, bias, n_rows, n, stream_));
  return Status();
}

Status CudaOps::mul(float* y, const float* x, int64_t n) {
  STRATA_RETURN_IF_ERROR(begin());
  STRATA_RETURN_IF_ERROR(check_args(device_, "mul", {n}, {y, x}));
  if (n == 0) return Status();
  STRATA_CUDA_LAUNCH("mul of " + std::to_string(n), kernels::cuda::mul(y, x, n, stream_));
  return Status();
}

Status CudaOps::rope(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, int64_t pos0,
                     const RopeParams& params) {
  STRATA_RETURN_IF_ERROR(begin());
  STRATA_RETURN_IF_ERROR(check_args(device_, "rope", {n_tokens, n_heads, head_dim}, {x}));
  if (n_tokens == 0 || n_heads == 0) return Status();
  if (params.rope_dims <= 0 || params.rope_dims > head_dim || params.rope_dims % 2 != 0 || pos0 < 0)
    return Error{Code::InvalidArgument, "rope on device '" + device_.id() + "': " + std::to_string(params.rope_dims) +
                                            " rotated dimensions of heads of " + std::to_string(head_dim) +
                                            " at position " + std::to_string(pos0)};
  kernels::cuda::RopeArgs a;
  a.n_tokens = n_tokens;
  a.n_heads = n_heads;
  a.head_dim = head_dim;
  a.pos0 = pos0;
  a.rope_dims = params.rope_dims;
  a.freq_base = params.freq_base;
  a.freq_scale = params.freq_scale;
  a.divisors = params.freq_divisors;
  a.interleaved = params.interleaved;
  a.attn_factor = params.attn_factor;
  a.yarn = params.yarn;
  STRATA_CUDA_LAUNCH("rope of " + std::to_string(n_tokens) + " tokens x " + std::to_string(n_heads) + " heads",
                     kernels::cuda::rope(x, a, stream_));
  return Status();
}

Status CudaOps::attention(const AttentionArgs& args) {
  STRATA_RETURN_IF_ERROR(begin());
  if (args.n_tokens == 0) return Status();
  const std::string what = "attention of " + std::to_string(args.n_tokens) + " tokens at position " +
                           std::to_string(args.pos0) + " (" + std::to_string(args.n_heads) + " heads, " +
                           std::to_string(args.n_kv_heads) + " kv heads, head_dim " + std::to_string(args.head_dim) +
                           ", n_ctx " + std::to_string(args.n_ctx) + ")";
  const std::string where = "device '" + device_.id() + "': ";
  if (args.q == nullptr || args.k == nullptr || args.v == nullptr || args.k_cache == nullptr ||
      args.v_cache == nullptr || args.out == nullptr)
    return Error{Code::InvalidArgument, where + what + ": a null operand"};
  if (args.n_tokens < 0 || args.pos0 < 0 || args.n_heads <= 0 || args.n_kv_heads <= 0 || args.head_dim <= 0 ||
      args.n_heads % args.n_kv_heads != 0 || args.kv_stride < args.n_kv_heads * args.head_dim)
    return Error{Code::InvalidArgument, where + what + ": inconsistent shapes (kv_stride " +
                                            std::to_string(args.kv_stride) + ")"};
  if (args.pos0 + args.n_tokens > args.n_ctx)
    return Error{Code::OutOfRange, where + what + ": positions past the cache's " + std::to_string(args.n_ctx)};
  if (args.head_dim > kernels::cuda::kMaxAttentionHeadDim)
    return Error{Code::Unsupported, where + what + ": the CUDA attention takes head_dim <= " +
                                        std::to_string(kernels::cuda::kMaxAttentionHeadDim)};
  if (args.window < 0) return Error{Code::InvalidArgument, where + what + ": window " + std::to_string(args.window)};
  if (Status ring = check_kv_ring(args); !ring.ok()) return Error{ring.error().code, where + ring.error().message};
  if (args.kv_type != DType::F32 && args.kv_type != DType::F16)
    return Error{Code::Unsupported, where + what + ": KV cache of type " + kernels::dtype_name(args.kv_type) +
                                        " (F32 or F16 here)"};

  // Sized once for the longest batch and context this Ops will see (OpsWorkspace), regrown only if a
  // call goes past them (or a layer has more heads).
  const int64_t max_tokens = std::max(args.n_tokens, workspace_.max_tokens);
  const int64_t max_ctx = std::max(args.n_ctx, workspace_.max_ctx);
  const size_t need = kernels::cuda::attention_workspace_bytes(max_tokens, max_ctx, args.n_heads, args.head_dim);
  STRATA_RETURN_IF_ERROR(ensure(attention_workspace_, need, "attention"));

  kernels::cuda::AttentionArgs a;
  a.q = args.q;
  a.k = args.k;
  a.v = args.v;
  a.k_cache = args.k_cache;
  a.v_cache = args.v_cache;
  a.kv_f16 = args.kv_type == DType::F16;
  a.kv_stride = args.kv_stride;
  a.kv_cells = args.kv_cells;
  a.n_tokens = args.n_tokens;
  a.pos0 = args.pos0;
  a.n_heads = args.n_heads;
  a.n_kv_heads = args.n_kv_heads;
  a.head_dim = args.head_dim;
  a.scale = args.scale;
  a.softcap = args.softcap;
  a.sinks = args.sinks;
  a.window = args.window;
  a.causal = args.causal;
  a.out = args.out;
  STRATA_CUDA_LAUNCH(what, kernels::cuda::attention(a, attention_workspace_->data(), attention_workspace_->size(),
                                                    stream_));
  return Status();
}

Status CudaOps::geglu(float* gate, const float* up, int64_t n) {
  STRATA_RETURN_IF_ERROR(begin());
  STRATA_RETURN_IF_ERROR(check_args(device_, "geglu", {n}, {gate, up}));
  if (n == 0) return Status();
  STRATA_CUDA_LAUNCH("geglu of " + std::to_string(n), kernels::cuda::geglu(gate, up, n, stream_));
  return Status();
}

Status CudaOps::gelu(float* x, int64_t n) {
  STRATA_RETURN_IF_ERROR(begin());
  STRATA_RETURN_IF_ERROR(check_args(device_, "gelu", {n}, {x}));
  if (n == 0) return Status();
  STRATA_CUDA_LAUNCH("gelu of " + std::to_string(n), kernels::cuda::gelu(x, n, stream_));
  return Status();
}

Status CudaOps::swiglu_oai(float* gate, const float* up, int64_t n) {
  STRATA_RETURN_IF_ERROR(begin());
  STRATA_RETURN_IF_ERROR(check_args(device_, "swiglu_oai", {n}, {gate, up}));
  if (n == 0) return Status();
  STRATA_CUDA_LAUNCH("swiglu_oai of " + std::to_string(n), kernels::cuda::swiglu_oai(gate, up, n, stream_));
  return Status();
}

Status CudaOps::scale(float* x, float s, int64_t n) {
  STRATA_RETURN_IF_ERROR(begin());
  STRATA_RETURN_IF_ERROR(check_args(device_, "scale", {n}, {x}));
  if (n == 0) return Status();
  STRATA_CUDA_LAUNCH("scale of " + std::to_string(n), kernels::cuda::scale(x, s, n, stream_));
  return Status();
}

Status CudaOps::softcap(float* x, float cap, int64_t n) {
  STRATA_RETURN_IF_ERROR(begin());
  STRATA_RETURN_IF_ERROR(check_args(device_, "softcap", {n}, {x}));
  if (!(cap > 0.0f)) return Error{Code::InvalidArgument, "softcap " + std::to_string(cap) + " (want > 0)"};
  if (n == 0) return Status();
  STRATA_CUDA_LAUNCH("softcap of " + std::to_string(n), kernels::cuda::softcap(x, cap, n, stream_));
  return Status();
}

Status CudaOps::swiglu(float* gate, const float* up, int64_t n) {
  STRATA_RETURN_IF_ERROR(begin());
  STRATA_RETURN_IF_ERROR(check_args(device_, "swiglu", {n}, {gate, up}));
  if (n == 0) return Status();
  STRATA_CUDA_LAUNCH("swiglu of " + std::to_string(n), kernels::cuda::swiglu(gate, up, n, stream_));
  return Status();
}

Status CudaOps::zero(float* x, int64_t n) {
  STRATA_RETURN_IF_ERROR(begin());
  STRATA_RETURN_IF_ERROR(check_args(device_, "zero", {n}, {x}));
  if (n == 0) return Status();
  STRATA_CUDA_TRY_ON(&device_, cudaMemsetAsync(x, 0, static_cast<size_t>(n) * sizeof(float), stream_));
  return Status();
}

Status CudaOps::softmax(float* x, int64_t n_rows, int64_t n) {
  STRATA_RETURN_IF_ERROR(begin());
  STRATA_RETURN_IF_ERROR(check_args(device_, "softmax", {n_rows, n}, {x}));
  if (n_rows == 0 || n == 0) return Status();
  STRATA_CUDA_LAUNCH("softmax of [" + std::to_string(n_rows) + " x " + std::to_string(n) + "]",
                     kernels::cuda::softmax_rows(x, n_rows, n, stream_));
  return Status();
}

Status CudaOps::gather_rows(const float* src, int64_t src_rows, int64_t n, const int32_t* rows, int64_t n_rows,
                            float* dst) {
  STRATA_RETURN_IF_ERROR(begin());
  STRATA_RETURN_IF_ERROR(check_args(device_, "gather_rows", {src_rows, n, n_rows}, {src, dst}));
  STRATA_RETURN_IF_ERROR(check_row_indices("gather_rows", rows, n_rows, src_rows, false));
  if (n_rows == 0 || n == 0) return Status();
  const size_t bytes = static_cast<size_t>(n_rows) * sizeof(int32_t);
  STRATA_RETURN_IF_ERROR(ensure(rows_, bytes, "row indices"));
  STRATA_RETURN_IF_ERROR(upload(rows, rows_->data(), bytes));
  STRATA_CUDA_LAUNCH("gather_rows of " + std::to_string(n_rows) + " rows of " + std::to_string(n),
                     kernels::cuda::gather_rows(src, n, reinterpret_cast<const int32_t*>(rows_->data()), n_rows, dst,
                                                stream_));
  return Status();
}

Status CudaOps::scale_add_rows(float* dst, int64_t dst_rows, int64_t n, const float* src, const int32_t* rows,
                               const float* scales, int64_t n_rows) {
  STRATA_RETURN_IF_ERROR(begin());
  STRATA_RETURN_IF_ERROR(check_args(device_, "scale_add_rows", {dst_rows, n, n_rows}, {dst, src}));
  STRATA_RETURN_IF_ERROR(check_row_indices("scale_add_rows", rows, n_rows, dst_rows, true));
  if (n_rows == 0 || n == 0) return Status();
  if (scales == nullptr)
    return Error{Code::InvalidArgument, "scale_add_rows on device '" + device_.id() + "': no scales"};
  const size_t bytes = static_cast<size_t>(n_rows) * sizeof(int32_t);
  STRATA_RETURN_IF_ERROR(ensure(rows_, bytes, "row indices"));
  STRATA_RETURN_IF_ERROR(ensure(row_scales_, static_cast<size_t>(n_rows) * sizeof(float), "row scales"));
  STRATA_RETURN_IF_ERROR(upload(rows, rows_->data(), bytes));
  STRATA_RETURN_IF_ERROR(upload(scales, row_scales_->data(), static_cast<size_t>(n_rows) * sizeof(float)));
  STRATA_CUDA_LAUNCH("scale_add_rows of " + std::to_string(n_rows) + " rows of " + std::to_string(n),
                     kernels::cuda::scale_add_rows(dst, n, src, reinterpret_cast<const int32_t*>(rows_->data()),
                                                   reinterpret_cast<const float*>(row_scales_->data()), n_rows,
                                                   stream_));
  return Status();
}

Status CudaOps::to_host(const void* src, void* host_dst, size_t bytes) {
  STRATA_RETURN_IF_ERROR(begin());
  if (bytes == 0) return Status();
  if (src == nullptr || host_dst == nullptr)
    return Error{Code::InvalidArgument, "to_host on device '" + device_.id() + "': null pointer for " +
                                            std::to_string(bytes) + " bytes"};
  STRATA_CUDA_TRY_ON(&device_, cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  STRATA_CUDA_WAIT_ON(device_, stream_);
  return Status();
}

Status CudaOps::from_host(const void* host_src, void* dst, size_t bytes) {
  STRATA_RETURN_IF_ERROR(begin());
  if (bytes == 0) return Status();
  if (host_src == nullptr || dst == nullptr)
    return Error{Code::InvalidArgument, "from_host on device '" + device_.id() + "': null pointer for " +
                                            std::to_string(bytes) + " bytes"};
  return upload(host_src, dst, bytes);
}

Status CudaOps::copy(const void* src, void* dst, size_t bytes) {
  STRATA_RETURN_IF_ERROR(begin());
  if (bytes == 0) return Status();
  if (src == nullptr || dst == nullptr)
    return Error{Code::InvalidArgument, "copy on device '" + device_.id() + "': null pointer for " +
                                            std::to_string(bytes) + " bytes"};
  STRATA_CUDA_TRY_ON(&device_, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  return Status();
}

Status CudaOps::synchronize() {
  STRATA_RETURN_IF_ERROR(begin());
  STRATA_CUDA_WAIT_ON(device_, stream_);
  return Status();
}

Expected<std::unique_ptr<Event>> CudaOps::record_event() {
  STRATA_RETURN_IF_ERROR(begin());
  cudaEvent_t event = nullptr;
  STRATA_CUDA_TRY_ON(&device_, cudaEventCreate(&event));
  if (cudaError_t e = cudaEventRecord(event, stream_); e != cudaSuccess) {
    (void)cudaEventDestroy(event);
    return device_error(&device_, e, "cudaEventRecord(event, stream_)", __FILE__, __LINE__);
  }
  return std::unique_ptr<Event>(std::make_unique<CudaEvent>(device_, this, event));
}

}  // namespace strata::backend::cuda
