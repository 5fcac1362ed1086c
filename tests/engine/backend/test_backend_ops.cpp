// tests/engine/backend/test_backend_ops.cpp — backend conformance, in the manner of ggml's
// test-backend-ops: every op of backend::Ops on every backend present (cpu, sim, cuda), over shapes
// and tensor types, against a plain reference written here (double accumulation, the scalar
// dequantizers of kernels/cpu for weights). Each backend x op x weight type is its own CTest case;
// the cuda cases skip, with the reason, where there is no CUDA device. Where a backend has a device,
// its capabilities (DeviceCaps: weight and KV cache types) decide which cases it gets: CUDA keeps
// no Q8_0 KV cache, so it has no attention_*_kv_q8_0 case (none skips for that). Data is made on the host
// with a fixed seed, put on the device with Device::copy_from_host, run through
// Device::create_ops and read back with Ops::to_host. Tolerances are stated next to each check.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/backend/registry/registry.h"
#include "engine/backend/ops.h"
#include "engine/backend/device.h"
#include "kernels/cpu/dtype.h"
#include "kernels/cpu/fp16.h"
#include "kernels/cpu/quant.h"
#include "engine/backend/sim/sim_device.h"
#include "engine/backend/cpu/cpu_device.h"

namespace strata {
namespace {

using backend::BufferUse;
using kernels::DType;

// The workspace every backend gets: attention up to kMaxCtx positions, kMaxTokens tokens per op.
constexpr int64_t kMaxCtx = 512;
constexpr int64_t kMaxTokens = 256;
constexpr int64_t kMaxCols = 5120;
// Token counts of the matmul cases, one per path of the backends: 1 (matrix-vector: decode), 3
// (a small batch), 17 (CPU: GEMM; CUDA: matrix-vector in groups of 8 for quantized weights,
// cublasSgemm for F32, F16 GEMM for F16) and 40 (CUDA: quantized weights dequantized to F16 and
// multiplied with cuBLAS on tensor cores, past engine/backend/cuda's kMmvBatchedMaxTokens = 32).
const int64_t kMatmulTokens[] = {1, 3, 17, 40};

// ---- failing a test from a helper -----------------------------------------------------------

// Thrown after a failure has been recorded, to end the case (caught in the test body).
struct CaseAborted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <typename T>
T must(Expected<T> e, const std::string& what) {
  if (!e.ok()) {
    ADD_FAILURE() << what << ": " << e.error().to_string();
    throw CaseAborted(what);
  }
  return std::move(e).value();
}

void must(const Status& s, const std::string& what) {
  if (!s.ok()) {
    ADD_FAILURE() << what << ": " << s.error().to_string();
    throw CaseAborted(what);
  }
}

// ---- data -------------------------------------------------------------------------------------

// splitmix64: the same numbers on every platform and standard library.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  float sym(double scale = 1.0) { return static_cast<float>((2.0 * uniform() - 1.0) * scale); }
  float normal() {  // Box-Muller
    const double u1 = std::max(uniform(), 1e-300), u2 = uniform();
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
  std::vector<float> sym_vec(size_t n, double scale = 1.0) {
    std::vector<float> v(n);
    for (auto& x : v) x = sym(scale);
    return v;
  }
  std::vector<float> normal_vec(size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = normal();
    return v;
  }

 private:
  uint64_t s_;
};

// A weight matrix of `type`: the bytes the device gets, and what they mean as floats (the scalar
// dequantizer's reading, the reference's ground truth).
struct Weights {
  std::vector<uint8_t> bytes;
  std::vector<float> values;  // [rows][cols]
};

Weights make_weights(DType type, int64_t rows, int64_t cols, uint64_t seed) {
  Rng rng(seed);
  const std::vector<float> src = rng.normal_vec(static_cast<size_t>(rows * cols));
  const int64_t row_bytes = kernels::row_bytes(type, cols);
  Weights w;
  w.bytes.resize(static_cast<size_t>(rows * row_bytes));
  w.values.resize(src.size());
  for (int64_t r = 0; r < rows; ++r) {
    kernels::quantize_row(type, src.data() + r * cols, w.bytes.data() + r * row_bytes, cols);
    kernels::dequantize_row(type, w.bytes.data() + r * row_bytes, w.values.data() + r * cols, cols);
  }
  return w;
}

// ---- comparison -------------------------------------------------------------------------------

// ||got - ref||_2 / ||ref||_2; infinity if got holds a NaN or an infinity.
double rel_l2(const float* got, const double* ref, int64_t n) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    diff += (got[i] - ref[i]) * (got[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

// Checks every row of `got` ([rows][row_len]) against `ref` by relative L2 error of the row, and
// reports the worst row with its first few elements.
void expect_rows_close(const std::vector<float>& got, const std::vector<double>& ref, int64_t row_len, double tol,
                       const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  ASSERT_GT(row_len, 0);
  const int64_t rows = static_cast<int64_t>(ref.size()) / row_len;
  double worst = -1;
  int64_t worst_row = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double e = rel_l2(got.data() + r * row_len, ref.data() + r * row_len, row_len);
    if (!(e <= worst)) {
      worst = e;
      worst_row = r;
    }
    if (std::isinf(e)) break;
  }
  std::string sample;
  for (int64_t i = 0; i < std::min<int64_t>(row_len, 4); ++i)
    sample += " [" + std::to_string(i) + "] got " + std::to_string(got[static_cast<size_t>(worst_row * row_len + i)]) +
              " want " + std::to_string(ref[static_cast<size_t>(worst_row * row_len + i)]) + ";";
  // STRATA_OPS_VERBOSE=1 prints every measured error beside its tolerance (to see the margins).
  if (std::getenv("STRATA_OPS_VERBOSE"))
    std::printf("  %-70s worst relative L2 error %.3g (tolerance %.0e)\n", what.c_str(), worst, tol);
  EXPECT_LE(worst, tol) << what << ": row " << worst_row << " of " << rows << " has relative L2 error " << worst
                        << " (tolerance " << tol << ");" << sample;
}

std::vector<double> to_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

// ---- one device under test ----------------------------------------------------------------------

class Env {
 public:
  Env(backend::Device& device, std::string backend) : device_(device), backend_(std::move(backend)) {
    const int threads = std::max(1, device.info().threads);
    scores_ = alloc(static_cast<size_t>(threads * kMaxCtx) * sizeof(float));
    backend::OpsWorkspace ws;
    ws.scores = reinterpret_cast<float*>(scores_->data());
    ws.scores_per_thread = kMaxCtx;
    ws.matmul_bytes = static_cast<size_t>(kMaxTokens * kMaxCols * 4);
    ws.max_ctx = kMaxCtx;
    ws.max_tokens = kMaxTokens;
    ops_ = must(device.create_ops(ws), device.id() + ": create_ops");
  }

  backend::Device& device() { return device_; }
  backend::Ops& ops() { return *ops_; }
  const std::string& backend() const { return backend_; }

  std::unique_ptr<backend::Buffer> alloc(size_t bytes, BufferUse use = BufferUse::Scratch) {
    return must(device_.allocate(std::max<size_t>(bytes, 1), use),
                device_.id() + ": allocate " + std::to_string(bytes) + " bytes");
  }
  // A device buffer holding `bytes` bytes copied from the host (Device::copy_from_host).
  std::unique_ptr<backend::Buffer> upload(const void* data, size_t bytes, BufferUse use = BufferUse::Scratch) {
    auto buf = alloc(bytes, use);
    backend::Copy2D c;
    c.src = data;
    c.src_pitch = bytes;
    c.dst = buf->data();
    c.dst_pitch = bytes;
    c.width = bytes;
    c.height = 1;
    must(device_.copy_from_host(c), device_.id() + ": copy_from_host " + std::to_string(bytes) + " bytes");
    return buf;
  }
  std::unique_ptr<backend::Buffer> upload(const std::vector<float>& v, BufferUse use = BufferUse::Scratch) {
    return upload(v.data(), v.size() * sizeof(float), use);
  }
  // n floats from device memory (Ops::to_host, which waits for the work before it).
  std::vector<float> download(const void* src, size_t n) {
    std::vector<float> out(n);
    must(ops_->to_host(src, out.data(), n * sizeof(float)), device_.id() + ": to_host");
    return out;
  }
  std::vector<uint8_t> download_bytes(const void* src, size_t n) {
    std::vector<uint8_t> out(n);
    must(ops_->to_host(src, out.data(), n), device_.id() + ": to_host");
    return out;
  }

 private:
  backend::Device& device_;
  std::string backend_;
  std::unique_ptr<backend::Buffer> scores_;
  std::unique_ptr<backend::Ops> ops_;
};

std::vector<std::unique_ptr<backend::Device>> open_devices(const std::string& backend) {
  std::vector<std::unique_ptr<backend::Device>> devices;
  if (backend == "cpu") {
    devices.push_back(std::make_unique<backend::CpuDevice>(2, 8ull << 30, 10.0));
  } else if (backend == "sim") {
    // Declared speeds so high that pacing never waits: this suite checks results, not time
    // (test_sim_pacing.cpp checks the pacing).
    backend::SimulatedSpec spec;
    spec.id = "sim0";
    spec.capacity_bytes = 8ull << 30;
    spec.bandwidth_gbps = 1e9;
    spec.tflops = 1e9;
    spec.link_gbps = 1e9;
    spec.link_latency_us = 0;
    spec.threads = 2;
    devices.push_back(std::make_unique<backend::SimulatedDevice>(spec));
  } else if (backend == "cuda") {
    // Every CUDA device, opened through the registry as --devices cuda opens them.
    if (backend::find_backend("cuda")->device_count() > 0)
      for (auto& d : must(backend::make_devices("cuda", 1, 0), "open cuda")) devices.push_back(std::move(d));
  }
  return devices;
}

// ---- cases --------------------------------------------------------------------------------------

struct OpCase {
  std::string name;  // letters, digits and '_' (a gtest name)
  std::function<void(Env&)> run;
  // What the case needs of a device (DeviceCaps): a weight type, a KV cache type. A backend whose
  // devices do not claim it does not get the case (params()), rather than getting it skipped.
  std::optional<DType> weights = std::nullopt, kv = std::nullopt;
};

const std::vector<DType>& weight_types() {
  static const std::vector<DType> types = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0, DType::Q4_1,
                                           DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                                           DType::Q4_K, DType::Q5_K, DType::Q6_K};
  return types;
}

// Skips the case (with the reason) where the device does not hold this weight type.
#define SKIP_UNSUPPORTED_TYPE(env, type)                                                                        \
  if (!(env).device().supports(type))                                                                          \
  GTEST_SKIP() << (env).device().id() << " does not support " << kernels::dtype_name(type)                     \
               << " weights (Device::supports is false)"

// -- embed --
void embed_case(Env& env, DType type) {
  SKIP_UNSUPPORTED_TYPE(env, type);
  const int64_t rows = 37, cols = 256;
  const Weights w = make_weights(type, rows, cols, 11 + static_cast<uint64_t>(type));
  auto table = env.upload(w.bytes.data(), w.bytes.size(), BufferUse::Weights);
  const std::vector<int32_t> tokens = {0, 36, 5, 5, 17};
  const int64_t n = static_cast<int64_t>(tokens.size());
  auto out = env.alloc(static_cast<size_t>(n * cols) * sizeof(float));
  must(env.ops().embed({table->data(), type, rows, cols}, tokens.data(), n, reinterpret_cast<float*>(out->data())),
       "embed");
  std::vector<double> ref;
  for (int32_t t : tokens)
    for (int64_t c = 0; c < cols; ++c) ref.push_back(w.values[static_cast<size_t>(t * cols + c)]);
  // Tolerance: 1e-6 relative (L2 per row). Embedding rows are dequantized, not computed: the only
  // freedom a backend has is the rounding of the scale multiply (and add) of each element.
  expect_rows_close(env.download(out->data(), static_cast<size_t>(n * cols)), ref, cols, 1e-6,
                    std::string("embed ") + kernels::dtype_name(type));
}

void embed_bad_token_case(Env& env) {
  const int64_t rows = 10, cols = 32;
  Rng rng(3);
  auto table = env.upload(rng.sym_vec(static_cast<size_t>(rows * cols)), BufferUse::Weights);
  auto out = env.alloc(static_cast<size_t>(4 * cols) * sizeof(float));
  const backend::MatrixView view{table->data(), DType::F32, rows, cols};
  for (const std::vector<int32_t>& tokens : {std::vector<int32_t>{3, 10}, std::vector<int32_t>{-1},
                                             std::vector<int32_t>{0, 9, 1000000}}) {
    Status s = env.ops().embed(view, tokens.data(), static_cast<int64_t>(tokens.size()),
                               reinterpret_cast<float*>(out->data()));
    const std::string bad = std::to_string(tokens.back());
    ASSERT_FALSE(s.ok()) << "token " << bad << " of a " << rows << "-row table was accepted";
    EXPECT_EQ(s.error().code, Code::InvalidArgument) << s.error().to_string();
    EXPECT_NE(s.error().message.find(bad), std::string::npos) << "the error should name token " << bad << ": "
                                                              << s.error().message;
  }
  // The device still works after the refusals.
  const std::vector<int32_t> good = {9};
  must(env.ops().embed(view, good.data(), 1, reinterpret_cast<float*>(out->data())), "embed after errors");
  must(env.ops().synchronize(), "synchronize");
}

// -- rms_norm --
void rms_norm_case(Env& env, int64_t n_rows, int64_t n, bool in_place) {
  Rng rng(static_cast<uint64_t>(n_rows * 1000 + n));
  std::vector<float> x = rng.sym_vec(static_cast<size_t>(n_rows * n), 3.0);
  std::vector<float> w(static_cast<size_t>(n));
  for (auto& v : w) v = 0.5f + static_cast<float>(rng.uniform());
  const float eps = 1e-5f;
  auto dx = env.upload(x);
  auto dw = env.upload(w);
  auto dout = in_place ? nullptr : env.alloc(x.size() * sizeof(float));
  float* out = in_place ? reinterpret_cast<float*>(dx->data()) : reinterpret_cast<float*>(dout->data());
  must(env.ops().rms_norm(reinterpret_cast<const float*>(dx->data()), reinterpret_cast<const float*>(dw->data()), out,
                          n_rows, n, eps),
       "rms_norm");
  std::vector<double> ref(x.size());
  for (int64_t r = 0; r < n_rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[r * n + i]) * x[r * n + i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
    for (int64_t i = 0; i < n; ++i) ref[r * n + i] = x[r * n + i] * inv * w[i];
  }
  // Tolerance: 1e-5 relative (L2 per row): f32 sum of squares over n <= 4096 and one rsqrt.
  expect_rows_close(env.download(out, x.size()), ref, n, 1e-5, "rms_norm");
}

// -- layer_norm (starcoder2) --
// Rows offset far from zero (mean 40, spread 3), so a missing mean subtraction or a variance not
// taken around the mean is far outside the tolerance; with and without a bias.
void layer_norm_case(Env& env, int64_t n_rows, int64_t n, bool in_place, bool with_bias) {
  Rng rng(static_cast<uint64_t>(n_rows * 1000 + n + (with_bias ? 7 : 0)));
  std::vector<float> x = rng.sym_vec(static_cast<size_t>(n_rows * n), 3.0);
  for (auto& v : x) v += 40.0f;
  std::vector<float> w(static_cast<size_t>(n)), b = rng.sym_vec(static_cast<size_t>(n), 1.0);
  for (auto& v : w) v = 0.5f + static_cast<float>(rng.uniform());
  const float eps = 1e-5f;
  auto dx = env.upload(x);
  auto dw = env.upload(w);
  auto db = env.upload(b);
  auto dout = in_place ? nullptr : env.alloc(x.size() * sizeof(float));
  float* out = in_place ? reinterpret_cast<float*>(dx->data()) : reinterpret_cast<float*>(dout->data());
  must(env.ops().layer_norm(reinterpret_cast<const float*>(dx->data()), reinterpret_cast<const float*>(dw->data()),
                            with_bias ? reinterpret_cast<const float*>(db->data()) : nullptr, out, n_rows, n, eps),
       "layer_norm");
  std::vector<double> ref(x.size());
  for (int64_t r = 0; r < n_rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += x[r * n + i];
    mean /= static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) var += (x[r * n + i] - mean) * (x[r * n + i] - mean);
    const double inv = 1.0 / std::sqrt(var / static_cast<double>(n) + eps);
    for (int64_t i = 0; i < n; ++i) ref[r * n + i] = (x[r * n + i] - mean) * inv * w[i] + (with_bias ? b[i] : 0.0);
  }
  // Tolerance: 1e-5 relative (L2 per row): f32 sums over n <= 4096 (the mean of values near 40 is
  // exact to ~1e-6 of them, which the subtraction turns into ~1e-6 of the spread) and one rsqrt.
  expect_rows_close(env.download(out, x.size()), ref, n, 1e-5, "layer_norm");
}

// -- matmul --
double matmul_tolerance(DType type) {
  switch (type) {
    case DType::F32:
      // f32 weights and activations, f32 accumulation (CUDA: its f32 kernels and cublasSgemm): 1e-5.
      return 1e-5;
    case DType::F16:
    case DType::BF16:
      // The weights are exact; GEMM paths may round the activations to F16 (2^-11 relative, ~3e-4
      // rms on the output): 1e-3.
      return 1e-3;
    default:
      // Quantized weights: the CPU (and CUDA's matrix-vector kernels) quantize the activations to 8
      // bits per block (Q8_0 / Q8_1 / Q8_K) before the integer dot product; with Gaussian data
      // that is ~0.5% relative error of the output vector (measured on the CPU: 0.3% to 0.8%).
      // 2e-2 relative (L2 per token row).
      return 2e-2;
  }
}

// x_scale: the activations' magnitude (sym_vec's scale); x_scale_token: where >= 0, only that
// token's activations get x_scale (the others 1).
// CUDA's matrix-vector kernels (n_tokens <= 8; quantized weights up to 32 tokens, in groups of 8)
// and cublasSgemm (F32 weights) multiply in f32 with f32 activations: only the summation order
// differs from the reference (measured 1e-7 to 3e-7 relative): 1e-5 there, not the 8-bit
// activation tolerance of the CPU's quantized paths.
double cuda_tolerance(DType type, int64_t n_tokens) {
  if (type == DType::F32 || n_tokens <= 8) return 1e-5;
  if (type != DType::F16 && type != DType::BF16 && n_tokens <= 32) return 1e-5;
  return matmul_tolerance(type);
}

// x_offset: x starts that many floats into its buffer (1: not 16-byte aligned; CUDA then takes its
// simple matrix-vector kernel).
void matmul_case(Env& env, DType type, int64_t rows, int64_t cols, int64_t n_tokens, double x_scale = 1.0,
                 int64_t x_scale_token = -1, int64_t x_offset = 0) {
  SKIP_UNSUPPORTED_TYPE(env, type);
  const Weights w = make_weights(type, rows, cols, 1000 + static_cast<uint64_t>(type) * 7 + static_cast<uint64_t>(rows));
  Rng rng(static_cast<uint64_t>(n_tokens * 31 + cols));
  std::vector<float> x = rng.sym_vec(static_cast<size_t>(n_tokens * cols));
  for (int64_t t = 0; t < n_tokens; ++t)
    if (x_scale_token < 0 || t == x_scale_token)
      for (int64_t c = 0; c < cols; ++c) x[static_cast<size_t>(t * cols + c)] *= static_cast<float>(x_scale);
  auto dw = env.upload(w.bytes.data(), w.bytes.size(), BufferUse::Weights);
  std::vector<float> x_buffer(static_cast<size_t>(x_offset), 0.0f);
  x_buffer.insert(x_buffer.end(), x.begin(), x.end());
  auto dx_buffer = env.upload(x_buffer);
  const float* dx = reinterpret_cast<const float*>(dx_buffer->data()) + x_offset;
  // The output with a guard band after it: an op must not write past y.
  const int64_t guard = 64;
  const std::vector<float> fill(static_cast<size_t>(n_tokens * rows + guard), 12345.0f);
  auto dy = env.upload(fill);
  must(env.ops().matmul({dw->data(), type, rows, cols}, dx, n_tokens, reinterpret_cast<float*>(dy->data())), "matmul");
  std::vector<float> got = env.download(dy->data(), fill.size());
  for (int64_t i = n_tokens * rows; i < n_tokens * rows + guard; ++i)
    ASSERT_EQ(got[static_cast<size_t>(i)], 12345.0f) << "matmul wrote past y: element " << i << " of the guard band";
  got.resize(static_cast<size_t>(n_tokens * rows));
  std::vector<double> ref(got.size());
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (int64_t c = 0; c < cols; ++c)
        s += static_cast<double>(w.values[static_cast<size_t>(r * cols + c)]) * x[static_cast<size_t>(t * cols + c)];
      ref[static_cast<size_t>(t * rows + r)] = s;
    }
  expect_rows_close(got, ref, rows, env.backend() == "cuda" ? cuda_tolerance(type, n_tokens) : matmul_tolerance(type),
                    std::string("matmul ") + kernels::dtype_name(type) + " " + std::to_string(rows) + "x" +
                        std::to_string(cols) + " by " + std::to_string(n_tokens) + " tokens (rows are tokens)" +
                        (x_offset ? ", x unaligned" : ""));
}

// matmul_many: several weights against one x, each output bit for bit what matmul() gives it on
// the same backend (the CPU runs runs of them in one parallel region; the default calls matmul()
// per weight), with a guard band after every output. Types the device does not hold are left out.
void matmul_many_case(Env& env, int64_t n_tokens) {
  const int64_t cols = 512;
  const std::pair<DType, int64_t> specs[] = {{DType::Q4_K, 67}, {DType::Q4_K, 16}, {DType::Q6_K, 35},
                                             {DType::Q8_0, 19}, {DType::Q4_0, 33}, {DType::F16, 21},
                                             {DType::Q6_K, 8}};
  Rng rng(static_cast<uint64_t>(n_tokens * 7 + 3));
  const std::vector<float> x = rng.sym_vec(static_cast<size_t>(n_tokens * cols));
  auto dx = env.upload(x);
  const int64_t guard = 64;
  std::vector<std::unique_ptr<backend::Buffer>> dws, dys_many, dys_alone;
  std::vector<backend::Ops::MatmulOut> outs;
  std::vector<int64_t> rows_of;
  for (const auto& [type, rows] : specs) {
    if (!env.device().supports(type)) continue;
    const Weights w = make_weights(type, rows, cols, 500 + static_cast<uint64_t>(type) * 3 + static_cast<uint64_t>(rows));
    dws.push_back(env.upload(w.bytes.data(), w.bytes.size(), BufferUse::Weights));
    const std::vector<float> fill(static_cast<size_t>(n_tokens * rows + guard), 12345.0f);
    dys_many.push_back(env.upload(fill));
    dys_alone.push_back(env.upload(fill));
    outs.push_back({{dws.back()->data(), type, rows, cols}, reinterpret_cast<float*>(dys_many.back()->data())});
    rows_of.push_back(rows);
  }
  ASSERT_GE(outs.size(), 2u) << "fewer than two weight types on " << env.device().id();
  const float* xd = reinterpret_cast<const float*>(dx->data());
  must(env.ops().matmul_many(outs, xd, n_tokens), "matmul_many");
  for (size_t i = 0; i < outs.size(); ++i)
    must(env.ops().matmul(outs[i].w, xd, n_tokens, reinterpret_cast<float*>(dys_alone[i]->data())), "matmul");
  for (size_t i = 0; i < outs.size(); ++i) {
    const size_t n = static_cast<size_t>(n_tokens * rows_of[i] + guard);
    const std::vector<float> many = env.download(dys_many[i]->data(), n);
    const std::vector<float> alone = env.download(dys_alone[i]->data(), n);
    for (size_t e = 0; e < n; ++e) {
      uint32_t a, b;
      std::memcpy(&a, &many[e], 4);
      std::memcpy(&b, &alone[e], 4);
      ASSERT_EQ(a, b) << "matmul_many output " << i << " (" << kernels::dtype_name(outs[i].w.type) << ", "
                      << rows_of[i] << " rows) element " << e << (e >= n - guard ? " (guard band)" : "") << ": "
                      << many[e] << " vs " << alone[e] << " from matmul";
    }
  }
}

// CUDA's fast prompt mode dequantizes the weights of a prompt batch to F16 in row tiles of at most 256 MiB
// (engine/backend/cuda: kMaxDequantBytes): 32771 x 4096 takes two tiles, [0, 32768) and
// [32768, 32771), and 40 tokens take that path. Row r repeats row r % 61 of a random pool, so the
// reference stays cheap and a row written to the wrong place still shows. The CPU runs it too (a
// large GEMM: about a second on 2 cores); a simulated device runs the very same CPU ops, so this
// one large case is not registered for it (params()).
void matmul_row_tiled_case(Env& env, DType type) {
  SKIP_UNSUPPORTED_TYPE(env, type);
  const int64_t rows = 32771, cols = 4096, n_tokens = 40, pool = 61;
  const Weights w = make_weights(type, pool, cols, 77 + static_cast<uint64_t>(type));
  const auto rb = static_cast<size_t>(kernels::row_bytes(type, cols));
  std::vector<uint8_t> bytes(static_cast<size_t>(rows) * rb);
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(bytes.data() + static_cast<size_t>(r) * rb, w.bytes.data() + static_cast<size_t>(r % pool) * rb, rb);
  Rng rng(78);
  const std::vector<float> x = rng.sym_vec(static_cast<size_t>(n_tokens * cols));
  auto dw = env.upload(bytes.data(), bytes.size(), BufferUse::Weights);
  bytes = {};
  auto dx = env.upload(x);
  auto dy = env.alloc(static_cast<size_t>(n_tokens * rows) * sizeof(float));
  must(env.ops().matmul({dw->data(), type, rows, cols}, reinterpret_cast<const float*>(dx->data()), n_tokens,
                        reinterpret_cast<float*>(dy->data())),
       "matmul");
  std::vector<double> pool_ref(static_cast<size_t>(n_tokens * pool));
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t p = 0; p < pool; ++p) {
      double acc = 0;
      for (int64_t c = 0; c < cols; ++c)
        acc += static_cast<double>(w.values[static_cast<size_t>(p * cols + c)]) * x[static_cast<size_t>(t * cols + c)];
      pool_ref[static_cast<size_t>(t * pool + p)] = acc;
    }
  std::vector<double> ref(static_cast<size_t>(n_tokens * rows));
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t r = 0; r < rows; ++r) ref[static_cast<size_t>(t * rows + r)] = pool_ref[static_cast<size_t>(t * pool + r % pool)];
  expect_rows_close(env.download(dy->data(), ref.size()), ref, rows, matmul_tolerance(type),
                    std::string("matmul ") + kernels::dtype_name(type) + " 32771x4096 by 40 tokens (row tiles)");
  // The rows of the second tile on their own (they are 3 of 32771 in the row norms above).
  const std::vector<float> tail = env.download(reinterpret_cast<const float*>(dy->data()) + (n_tokens - 1) * rows + 32768, 3);
  for (int64_t r = 32768; r < rows; ++r) {
    const double want = pool_ref[static_cast<size_t>((n_tokens - 1) * pool + r % pool)];
    EXPECT_NEAR(tail[static_cast<size_t>(r - 32768)], want, 0.05 * std::fabs(want) + 0.05)
        << "row " << r << " (second tile) of the last token";
  }
}

// -- element-wise --
// Tolerance for add, add_rows and mul: exact. Each output is one IEEE f32 add or multiply, whose
// result is defined to the bit; the reference does the same operation in f32.
void add_case(Env& env) {
  const int64_t n = 4099;
  Rng rng(21);
  const std::vector<float> y = rng.sym_vec(n, 5.0), x = rng.sym_vec(n, 5.0);
  auto dy = env.upload(y);
  auto dx = env.upload(x);
  must(env.ops().add(reinterpret_cast<float*>(dy->data()), reinterpret_cast<const float*>(dx->data()), n), "add");
  const std::vector<float> got = env.download(dy->data(), n);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], y[i] + x[i]) << "add: element " << i;
}

void add_rows_case(Env& env) {
  const int64_t n_rows = 7, n = 300;
  Rng rng(22);
  const std::vector<float> y = rng.sym_vec(n_rows * n, 5.0), b = rng.sym_vec(n, 5.0);
  auto dy = env.upload(y);
  auto db = env.upload(b);
  must(env.ops().add_rows(reinterpret_cast<float*>(dy->data()), reinterpret_cast<const float*>(db->data()), n_rows, n),
       "add_rows");
  const std::vector<float> got = env.download(dy->data(), y.size());
  for (int64_t r = 0; r < n_rows; ++r)
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(got[r * n + i], y[r * n + i] + b[i]) << "add_rows: row " << r << " element " << i;
}

// -- gather_rows / scale_add_rows (mixture-of-experts token routing) --
void gather_rows_case(Env& env) {
  const int64_t src_rows = 20, n = 300;
  Rng rng(31);
  const std::vector<float> src = rng.sym_vec(static_cast<size_t>(src_rows * n), 5.0);
  const std::vector<int32_t> rows = {3, 19, 0, 3, 7};  // a row may be gathered twice
  const int64_t m = static_cast<int64_t>(rows.size());
  auto dsrc = env.upload(src);
  auto ddst = env.alloc(static_cast<size_t>(m * n) * sizeof(float));
  must(env.ops().gather_rows(reinterpret_cast<const float*>(dsrc->data()), src_rows, n, rows.data(), m,
                             reinterpret_cast<float*>(ddst->data())),
       "gather_rows");
  // A copy: bit for bit.
  const std::vector<float> got = env.download(ddst->data(), static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      ASSERT_EQ(got[i * n + j], src[rows[i] * n + j]) << "gather_rows: row " << i << " (source " << rows[i] << ")";
  // No rows: nothing happens.
  must(env.ops().gather_rows(reinterpret_cast<const float*>(dsrc->data()), src_rows, n, nullptr, 0,
                             reinterpret_cast<float*>(ddst->data())),
       "gather_rows of none");
}

void scale_add_rows_case(Env& env) {
  const int64_t dst_rows = 20, n = 300;
  Rng rng(32);
  const std::vector<float> dst = rng.sym_vec(static_cast<size_t>(dst_rows * n), 5.0);
  const std::vector<int32_t> rows = {4, 0, 19, 11, 7};
  const std::vector<float> scales = {0.5f, -1.25f, 0.0f, 2.0f, 0.333f};
  const int64_t m = static_cast<int64_t>(rows.size());
  const std::vector<float> src = rng.sym_vec(static_cast<size_t>(m * n), 5.0);
  auto ddst = env.upload(dst);
  auto dsrc = env.upload(src);
  must(env.ops().scale_add_rows(reinterpret_cast<float*>(ddst->data()), dst_rows, n,
                                reinterpret_cast<const float*>(dsrc->data()), rows.data(), scales.data(), m),
       "scale_add_rows");
  std::vector<double> ref(dst.begin(), dst.end());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      ref[static_cast<size_t>(rows[i] * n + j)] += static_cast<double>(scales[i]) * src[static_cast<size_t>(i * n + j)];
  const std::vector<float> got = env.download(ddst->data(), dst.size());
  // Rows not named are untouched, bit for bit.
  for (int64_t r = 0; r < dst_rows; ++r) {
    if (std::find(rows.begin(), rows.end(), r) != rows.end()) continue;
    for (int64_t j = 0; j < n; ++j) ASSERT_EQ(got[r * n + j], dst[r * n + j]) << "scale_add_rows: row " << r;
  }
  // Tolerance: 1e-6 relative (L2 per row): one multiply and one add per element in f32 (a fused
  // multiply-add rounds once instead of twice).
  expect_rows_close(got, ref, n, 1e-6, "scale_add_rows");
}

void row_index_errors_case(Env& env) {
  const int64_t n = 32;
  Rng rng(33);
  auto a = env.upload(rng.sym_vec(static_cast<size_t>(4 * n)));
  auto b = env.upload(rng.sym_vec(static_cast<size_t>(4 * n)));
  float* pa = reinterpret_cast<float*>(a->data());
  const float* pb = reinterpret_cast<const float*>(b->data());
  const std::vector<float> scales = {1.0f, 1.0f, 1.0f};
  struct Bad {
    std::vector<int32_t> rows;
    bool gather;
    std::string named;
  };
  for (const Bad& bad : {Bad{{0, 4}, true, "row 4"}, Bad{{-1}, true, "row -1"}, Bad{{1, 9, 2}, false, "row 9"},
                         Bad{{2, 0, 2}, false, "row 2 is given twice"}}) {
    const int64_t m = static_cast<int64_t>(bad.rows.size());
    Status s = bad.gather ? env.ops().gather_rows(pb, 4, n, bad.rows.data(), m, pa)
                          : env.ops().scale_add_rows(pa, 4, n, pb, bad.rows.data(), scales.data(), m);
    ASSERT_FALSE(s.ok()) << bad.named << " was accepted";
    EXPECT_EQ(s.error().code, Code::InvalidArgument) << s.error().to_string();
    EXPECT_NE(s.error().message.find(bad.named), std::string::npos) << s.error().to_string();
  }
  // The device still works after the refusals.
  const std::vector<int32_t> good = {3};
  must(env.ops().scale_add_rows(pa, 4, n, pb, good.data(), scales.data(), 1), "scale_add_rows after errors");
  must(env.ops().synchronize(), "synchronize");
}

void mul_case(Env& env) {
  const int64_t n = 4099;
  Rng rng(23);
  const std::vector<float> y = rng.sym_vec(n, 5.0), x = rng.sym_vec(n, 5.0);
  auto dy = env.upload(y);
  auto dx = env.upload(x);
  must(env.ops().mul(reinterpret_cast<float*>(dy->data()), reinterpret_cast<const float*>(dx->data()), n), "mul");
  const std::vector<float> got = env.download(dy->data(), n);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], y[i] * x[i]) << "mul: element " << i;
}

void zero_case(Env& env) {
  const int64_t n = 1001, guard = 16;
  Rng rng(24);
  const std::vector<float> x = rng.sym_vec(n + 2 * guard);
  auto dx = env.upload(x);
  must(env.ops().zero(reinterpret_cast<float*>(dx->data()) + guard, n), "zero");
  const std::vector<float> got = env.download(dx->data(), x.size());
  for (int64_t i = 0; i < n + 2 * guard; ++i) {
    const bool inside = i >= guard && i < guard + n;
    // Exact: zeros inside, the neighbours untouched.
    ASSERT_EQ(got[i], inside ? 0.0f : x[i]) << "zero: element " << i - guard << (inside ? "" : " (outside the range)");
  }
}

// n = 22531: a decode step of 8 sequences' worth, which the CPU backend splits across its threads.
void swiglu_case(Env& env, int64_t n) {
  Rng rng(25);
  const std::vector<float> gate = rng.sym_vec(n, 10.0), up = rng.sym_vec(n, 3.0);
  auto dg = env.upload(gate);
  auto du = env.upload(up);
  must(env.ops().swiglu(reinterpret_cast<float*>(dg->data()), reinterpret_cast<const float*>(du->data()), n), "swiglu");
  std::vector<double> ref(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ref[i] = gate[i] / (1.0 + std::exp(-static_cast<double>(gate[i]))) * up[i];
  // Tolerance: 1e-5 relative (L2): one exp and a division per element (fast-math exp on CUDA is
  // within a few ulp for |x| <= 10).
  expect_rows_close(env.download(dg->data(), n), ref, n, 1e-5, "swiglu");
}

void geglu_case(Env& env, int64_t n) {
  Rng rng(31);
  const std::vector<float> gate = rng.sym_vec(n, 6.0), up = rng.sym_vec(n, 3.0);
  auto dg = env.upload(gate);
  auto du = env.upload(up);
  must(env.ops().geglu(reinterpret_cast<float*>(dg->data()), reinterpret_cast<const float*>(du->data()), n), "geglu");
  std::vector<double> ref(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    ref[i] = 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g))) * up[i];
  }
  // Tolerance: 1e-5 relative (L2): one tanh per element in f32.
  expect_rows_close(env.download(dg->data(), n), ref, n, 1e-5, "geglu");
}

// The GELU of a non-gated FFN (starcoder2), on values up to |8|.
void gelu_case(Env& env, int64_t n) {
  Rng rng(37);
  const std::vector<float> x = rng.sym_vec(n, 8.0);
  auto dx = env.upload(x);
  must(env.ops().gelu(reinterpret_cast<float*>(dx->data()), n), "gelu");
  std::vector<double> ref(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double g = x[i];
    ref[i] = 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g)));
  }
  // Tolerance: 1e-5 relative (L2): one tanh per element in f32.
  expect_rows_close(env.download(dx->data(), n), ref, n, 1e-5, "gelu");
}

// gpt-oss's clamped SwiGLU on gates and ups up to |12|, past both limits (gate above 7, up outside
// [-7, 7]), led by the edges: each limit exactly and one ulp past it, gate 0, up = -1 (a zero
// product), gates far below -7 (no lower clamp: a sigmoid of e^-20).
void swiglu_oai_case(Env& env, int64_t n) {
  Rng rng(37);
  std::vector<float> gate = rng.sym_vec(n, 12.0), up = rng.sym_vec(n, 12.0);
  const float edge_g[] = {7.0f,   std::nextafter(7.0f, 8.0f), std::nextafter(7.0f, 6.0f), 12.0f,
                          -12.0f, -7.0f,                      0.0f,                       1e-3f};
  const float edge_u[] = {7.0f,  std::nextafter(7.0f, 8.0f), -7.0f, std::nextafter(-7.0f, -8.0f),
                          12.0f, -12.0f,                     -1.0f, 0.0f};
  size_t e = 0;
  for (float g : edge_g)
    for (float u : edge_u) {
      gate[e] = g;
      up[e++] = u;
    }
  int64_t gate_over = 0, up_outside = 0;
  for (int64_t i = 0; i < n; ++i) {
    gate_over += gate[i] > 7.0f;
    up_outside += std::abs(up[i]) > 7.0f;
  }
  // The inputs do cross the limits (about 5/24 of the gates, 5/12 of the ups).
  ASSERT_GT(gate_over, n / 6);
  ASSERT_GT(up_outside, n / 3);
  auto dg = env.upload(gate);
  auto du = env.upload(up);
  must(env.ops().swiglu_oai(reinterpret_cast<float*>(dg->data()), reinterpret_cast<const float*>(du->data()), n),
       "swiglu_oai");
  const std::vector<float> got = env.download(dg->data(), n);
  std::vector<double> ref(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double x = std::min(static_cast<double>(gate[i]), 7.0);
    const double y = std::clamp(static_cast<double>(up[i]), -7.0, 7.0);
    const double silu = x / (1.0 + std::exp(-1.702 * x));
    ref[static_cast<size_t>(i)] = silu * (y + 1.0);
    // Tolerance per element: 1e-5 of |x sigmoid(1.702 x)| (|y| + 1), the scale of the f32
    // roundings: the product 1.702 x (up to 20.4) rounded by 6e-8 of itself is 1.2e-6 relative in
    // its exp (measured: 1.05e-6 at gate -9.6); expf within 2 ulp, a division, two products; the
    // kernel's alpha is the f32 1.702f, 1.3e-8 relative from the reference's.
    ASSERT_NEAR(got[static_cast<size_t>(i)], ref[static_cast<size_t>(i)], 1e-5 * std::abs(silu) * (std::abs(y) + 1.0))
        << "swiglu_oai: element " << i << ", gate " << gate[i] << ", up " << up[i];
  }
  // And over the whole vector: 1e-5 relative (L2), as swiglu.
  expect_rows_close(got, ref, n, 1e-5, "swiglu_oai");
}

void scale_case(Env& env) {
  const int64_t n = 1027;
  Rng rng(32);
  const std::vector<float> x = rng.sym_vec(n, 5.0);
  auto dx = env.upload(x);
  const float s = 25.298221f;  // sqrt(640): gemma3's embedding scale
  must(env.ops().scale(reinterpret_cast<float*>(dx->data()), s, n), "scale");
  const std::vector<float> got = env.download(dx->data(), n);
  // Exact: one f32 product per element.
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], x[i] * s) << "scale: element " << i;
}

void softcap_case(Env& env) {
  const int64_t n = 1027;
  Rng rng(33);
  const std::vector<float> x = rng.sym_vec(n, 90.0);
  auto dx = env.upload(x);
  must(env.ops().softcap(reinterpret_cast<float*>(dx->data()), 30.0f, n), "softcap");
  const std::vector<float> got = env.download(dx->data(), n);
  // Tolerance: 2e-6 of the cap (one f32 tanh and two roundings per element).
  for (int64_t i = 0; i < n; ++i)
    ASSERT_NEAR(got[i], 30.0 * std::tanh(double(x[i]) / 30.0), 2e-6 * 30.0) << "softcap: element " << i;
  EXPECT_FALSE(env.ops().softcap(reinterpret_cast<float*>(dx->data()), 0.0f, n).ok());
}

void softmax_case(Env& env, int64_t n_rows, int64_t n) {
  Rng rng(static_cast<uint64_t>(26 + n));
  std::vector<float> x = rng.sym_vec(n_rows * n, 8.0);
  // Row 1 sits near 100: exp overflows f32 unless the row maximum is subtracted first.
  if (n_rows > 1)
    for (int64_t i = 0; i < n; ++i) x[n + i] += 100.0f;
  auto dx = env.upload(x);
  must(env.ops().softmax(reinterpret_cast<float*>(dx->data()), n_rows, n), "softmax");
  std::vector<double> ref(x.size());
  for (int64_t r = 0; r < n_rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<double>(x[r * n + i]));
    for (int64_t i = 0; i < n; ++i) s += std::exp(x[r * n + i] - m);
    for (int64_t i = 0; i < n; ++i) ref[r * n + i] = std::exp(x[r * n + i] - m) / s;
  }
  // Tolerance: 1e-5 relative (L2 per row): f32 exp and sum over n <= 1000.
  expect_rows_close(env.download(dx->data(), x.size()), ref, n, 1e-5, "softmax");
}

// -- rope --
struct RopeCase {
  bool interleaved;
  bool divisors;
  int64_t rope_dims;  // < head_dim: the last head_dim - rope_dims dimensions stay as they are
  int64_t pos0;
  double tol;
};

void rope_reference(std::vector<double>& x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, int64_t pos0,
                    const backend::RopeParams& p, const std::vector<float>& divisors) {
  const int64_t half = p.rope_dims / 2;
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t h = 0; h < n_heads; ++h) {
      double* v = x.data() + (t * n_heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        double theta = static_cast<double>(pos0 + t) * p.freq_scale *
                       std::pow(static_cast<double>(p.freq_base), -2.0 * static_cast<double>(i) / p.rope_dims);
        if (!divisors.empty()) theta /= divisors[i];
        const int64_t a = p.interleaved ? 2 * i : i;
        const int64_t b = p.interleaved ? 2 * i + 1 : i + half;
        const double x0 = v[a], x1 = v[b];
        const double c = std::cos(theta) * p.attn_factor, s = std::sin(theta) * p.attn_factor;
        v[a] = x0 * c - x1 * s;
        v[b] = x0 * s + x1 * c;
      }
    }
}

void rope_case(Env& env, const RopeCase& rc) {
  const int64_t n_tokens = 3, n_heads = 4, head_dim = 64;
  Rng rng(static_cast<uint64_t>(27 + rc.rope_dims + rc.pos0 + (rc.interleaved ? 1 : 0)));
  const std::vector<float> x = rng.sym_vec(n_tokens * n_heads * head_dim, 2.0);
  std::vector<float> divisors;
  std::unique_ptr<backend::Buffer> ddiv;
  backend::RopeParams p;
  p.rope_dims = rc.rope_dims;
  p.interleaved = rc.interleaved;
  if (rc.divisors) {  // Llama-3-style long-context factors, base and scale
    divisors.resize(static_cast<size_t>(rc.rope_dims / 2));
    for (auto& d : divisors) d = 1.0f + 7.0f * static_cast<float>(rng.uniform());
    ddiv = env.upload(divisors);
    p.freq_divisors = reinterpret_cast<const float*>(ddiv->data());
    p.freq_base = 500000.0f;
    p.freq_scale = 0.5f;
    p.attn_factor = 1.19f;  // phi3's long-context cos/sin multiplier comes with its factors
  }
  auto dx = env.upload(x);
  must(env.ops().rope(reinterpret_cast<float*>(dx->data()), n_tokens, n_heads, head_dim, rc.pos0, p), "rope");
  std::vector<double> ref = to_double(x);
  rope_reference(ref, n_tokens, n_heads, head_dim, rc.pos0, p, divisors);
  const std::vector<float> got = env.download(dx->data(), x.size());
  // Dimensions past rope_dims pass through unchanged (exact).
  for (int64_t t = 0; t < n_tokens * n_heads; ++t)
    for (int64_t i = rc.rope_dims; i < head_dim; ++i)
      ASSERT_EQ(got[t * head_dim + i], x[t * head_dim + i]) << "rope changed dimension " << i << " >= rope_dims";
  expect_rows_close(got, ref, head_dim, rc.tol, "rope (rows are heads)");
}

// -- attention --
struct AttentionCase {
  DType kv_type;
  int64_t prompt;  // tokens of the first call at position 0; then one decode token at `prompt`
  int64_t n_ctx;
  int64_t window = 0;  // 0: causal over everything; else the last `window` positions
  float softcap = 0.0f;  // > 0: scores capped to softcap * tanh(score / softcap) (gemma2)
};

void attention_case(Env& env, const AttentionCase& ac) {
  if (!env.device().supports_kv(ac.kv_type))
    GTEST_SKIP() << env.device().id() << " does not keep a KV cache in " << kernels::dtype_name(ac.kv_type)
                 << " (supports_kv is false)";
  const int64_t n_heads = 4, n_kv = 2, hd = 64, group = n_heads / n_kv;
  const int64_t q_dim = n_heads * hd, kv_dim = n_kv * hd, stride = kv_dim;
  const bool f16 = ac.kv_type == DType::F16;
  const bool q8 = ac.kv_type == DType::Q8_0;
  const size_t cache_bytes = static_cast<size_t>(kernels::row_bytes(ac.kv_type, ac.n_ctx * stride));
  auto kc = env.alloc(cache_bytes, BufferUse::KvCache);
  auto vc = env.alloc(cache_bytes, BufferUse::KvCache);
  must(env.device().fill_zero(kc->data(), kc->size()), "fill_zero");
  must(env.device().fill_zero(vc->data(), vc->size()), "fill_zero");
  // The reference cache: what the device's cache should hold, as floats (F16: rounded).
  std::vector<double> ref_k(static_cast<size_t>(ac.n_ctx * stride)), ref_v(ref_k.size());
  auto stored = [&](float f) { return f16 ? kernels::fp16_to_f32(kernels::f32_to_fp16(f)) : f; };
  // Q8_0: each block of 32 elements of a position's row quantized (the reference quantizer).
  auto stored_row = [&](const float* src, int64_t n, std::vector<float>& out) {
    out.assign(src, src + n);
    if (q8) {
      std::vector<uint8_t> blocks(static_cast<size_t>(kernels::row_bytes(DType::Q8_0, n)));
      kernels::quantize_row(DType::Q8_0, src, blocks.data(), n);
      kernels::dequantize_row(DType::Q8_0, blocks.data(), out.data(), n);
    } else {
      for (float& f : out) f = stored(f);
    }
  };
  Rng rng(static_cast<uint64_t>(28 + ac.prompt));

  struct Step {
    int64_t pos0, n_tokens;
  };
  for (const Step step : {Step{0, ac.prompt}, Step{ac.prompt, 1}}) {
    const int64_t nt = step.n_tokens;
    // Queries scaled up so that the softmax is far from uniform (scores of a few units).
    const std::vector<float> q = rng.sym_vec(nt * q_dim, 4.0), k = rng.sym_vec(nt * kv_dim), v = rng.sym_vec(nt * kv_dim);
    auto dq = env.upload(q), dk = env.upload(k), dv = env.upload(v);
    auto dout = env.alloc(static_cast<size_t>(nt * q_dim) * sizeof(float));
    backend::AttentionArgs a;
    a.q = reinterpret_cast<const float*>(dq->data());
    a.k = reinterpret_cast<const float*>(dk->data());
    a.v = reinterpret_cast<const float*>(dv->data());
    a.k_cache = kc->data();
    a.v_cache = vc->data();
    a.kv_type = ac.kv_type;
    a.kv_stride = stride;
    a.n_ctx = ac.n_ctx;
    a.n_tokens = nt;
    a.pos0 = step.pos0;
    a.n_heads = n_heads;
    a.n_kv_heads = n_kv;
    a.head_dim = hd;
    a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    a.window = ac.window;
    a.softcap = ac.softcap;
    a.out = reinterpret_cast<float*>(dout->data());
    must(env.ops().attention(a), "attention at pos0 " + std::to_string(step.pos0));

    std::vector<float> row_k, row_v;
    for (int64_t t = 0; t < nt; ++t) {
      stored_row(k.data() + t * kv_dim, kv_dim, row_k);
      stored_row(v.data() + t * kv_dim, kv_dim, row_v);
      for (int64_t i = 0; i < kv_dim; ++i) {
        ref_k[static_cast<size_t>((step.pos0 + t) * stride + i)] = row_k[static_cast<size_t>(i)];
        ref_v[static_cast<size_t>((step.pos0 + t) * stride + i)] = row_v[static_cast<size_t>(i)];
      }
    }
    std::vector<double> ref(static_cast<size_t>(nt * q_dim));
    std::vector<double> scores(static_cast<size_t>(ac.n_ctx));
    for (int64_t t = 0; t < nt; ++t)
      for (int64_t h = 0; h < n_heads; ++h) {
        const int64_t pos = step.pos0 + t, kv_off = (h / group) * hd;
        const int64_t first = ac.window > 0 ? std::max<int64_t>(0, pos - ac.window + 1) : 0;
        const float* qh = q.data() + t * q_dim + h * hd;
        double m = -INFINITY;
        for (int64_t p = first; p <= pos; ++p) {
          double s = 0;
          for (int64_t i = 0; i < hd; ++i) s += static_cast<double>(qh[i]) * ref_k[p * stride + kv_off + i];
          scores[p] = s * a.scale;
          if (ac.softcap > 0) scores[p] = ac.softcap * std::tanh(scores[p] / ac.softcap);
          m = std::max(m, scores[p]);
        }
        double sum = 0;
        for (int64_t p = first; p <= pos; ++p) sum += (scores[p] = std::exp(scores[p] - m));
        for (int64_t i = 0; i < hd; ++i) {
          double o = 0;
          for (int64_t p = first; p <= pos; ++p) o += scores[p] * ref_v[p * stride + kv_off + i];
          ref[static_cast<size_t>(t * q_dim + h * hd + i)] = o / sum;
        }
      }
    // Tolerance (relative L2 per head): F32 cache 1e-4 (f32 dot products, exp and weighted sums
    // over <= 256 positions); F16 cache 2e-3 (the reference reads the same rounded keys and
    // values, but a backend may also round queries and partial sums to F16); Q8_0 cache 2e-2 (the
    // reference reads the same quantized keys and values; the backend also quantizes each query
    // to 8 bits for its dot products: ~0.4% per score on scores of a few units).
    const double tol = q8 ? 2e-2 : f16 ? 2e-3 : 1e-4;
    expect_rows_close(env.download(dout->data(), ref.size()), ref, hd, tol,
                      "attention output at pos0 " + std::to_string(step.pos0) + " (" + std::to_string(nt) +
                          " tokens; rows are heads)");

    // The cache holds exactly the keys and values given, at their positions (F16: rounded to
    // nearest even, bit for bit).
    const int64_t written = (step.pos0 + nt) * stride;
    if (q8) {
      // Q8_0: the cache dequantizes to the reference's values within one quantization step of
      // each block (a SIMD quantizer may round a halfway element the other way).
      for (const auto& [buf, want, name] :
           {std::tuple{kc.get(), &ref_k, "k_cache"}, std::tuple{vc.get(), &ref_v, "v_cache"}}) {
        const std::vector<uint8_t> raw =
            env.download_bytes(buf->data(), static_cast<size_t>(kernels::row_bytes(DType::Q8_0, written)));
        std::vector<float> got(static_cast<size_t>(written));
        kernels::dequantize_row(DType::Q8_0, raw.data(), got.data(), written);
        for (int64_t b0 = 0; b0 < written; b0 += 32) {
          double amax = 0;
          for (int64_t i = b0; i < b0 + 32; ++i) amax = std::max(amax, std::abs((*want)[static_cast<size_t>(i)]));
          for (int64_t i = b0; i < b0 + 32; ++i)
            ASSERT_NEAR(got[static_cast<size_t>(i)], (*want)[static_cast<size_t>(i)], amax / 127.0 * 1.01 + 1e-7)
                << name << " after the call at pos0 " << step.pos0 << ": element " << i;
        }
      }
      continue;
    }
    const size_t elem = f16 ? 2 : 4;
    for (const auto& [buf, want, name] :
         {std::tuple{kc.get(), &ref_k, "k_cache"}, std::tuple{vc.get(), &ref_v, "v_cache"}}) {
      const std::vector<uint8_t> raw = env.download_bytes(buf->data(), static_cast<size_t>(written) * elem);
      for (int64_t i = 0; i < written; ++i) {
        float got;
        if (f16) {
          uint16_t h;
          std::memcpy(&h, raw.data() + i * 2, 2);
          got = kernels::fp16_to_f32(h);
        } else {
          std::memcpy(&got, raw.data() + i * 4, 4);
        }
        ASSERT_EQ(got, static_cast<float>((*want)[static_cast<size_t>(i)]))
            << name << " after the call at pos0 " << step.pos0 << ": position " << i / stride << " element "
            << i % stride;
      }
    }
  }
}

// Chunked prompt processing must not change attention: the same 12 tokens in one call, in chunks
// of 4, and one at a time give bit-identical outputs and caches (every backend computes each
// (token, head) row the same way whatever the batch).
void attention_chunking_case(Env& env, DType kv_type) {
  if (!env.device().supports_kv(kv_type))
    GTEST_SKIP() << env.device().id() << " does not keep a KV cache in " << kernels::dtype_name(kv_type);
  const int64_t n_heads = 4, n_kv = 2, hd = 64, n = 12, n_ctx = 16;
  const int64_t q_dim = n_heads * hd, kv_dim = n_kv * hd;
  Rng rng(41);
  const std::vector<float> q = rng.sym_vec(n * q_dim, 4.0), k = rng.sym_vec(n * kv_dim), v = rng.sym_vec(n * kv_dim);
  auto dq = env.upload(q), dk = env.upload(k), dv = env.upload(v);
  const size_t cache_bytes = static_cast<size_t>(kernels::row_bytes(kv_type, n_ctx * kv_dim));
  std::vector<std::vector<float>> outs;
  for (int64_t chunk : {n, int64_t{4}, int64_t{1}}) {
    auto kc = env.alloc(cache_bytes, BufferUse::KvCache);
    auto vc = env.alloc(cache_bytes, BufferUse::KvCache);
    must(env.device().fill_zero(kc->data(), cache_bytes), "fill_zero");
    must(env.device().fill_zero(vc->data(), cache_bytes), "fill_zero");
    auto dout = env.alloc(static_cast<size_t>(n * q_dim) * sizeof(float));
    for (int64_t p0 = 0; p0 < n; p0 += chunk) {
      backend::AttentionArgs a;
      a.q = reinterpret_cast<const float*>(dq->data()) + p0 * q_dim;
      a.k = reinterpret_cast<const float*>(dk->data()) + p0 * kv_dim;
      a.v = reinterpret_cast<const float*>(dv->data()) + p0 * kv_dim;
      a.k_cache = kc->data();
      a.v_cache = vc->data();
      a.kv_type = kv_type;
      a.kv_stride = kv_dim;
      a.n_ctx = n_ctx;
      a.n_tokens = std::min(chunk, n - p0);
      a.pos0 = p0;
      a.n_heads = n_heads;
      a.n_kv_heads = n_kv;
      a.head_dim = hd;
      a.scale = 0.125f;
      a.out = reinterpret_cast<float*>(dout->data()) + p0 * q_dim;
      must(env.ops().attention(a), "attention chunk at " + std::to_string(p0));
    }
    outs.push_back(env.download(dout->data(), static_cast<size_t>(n * q_dim)));
  }
  for (size_t c = 1; c < outs.size(); ++c)
    for (size_t i = 0; i < outs[0].size(); ++i)
      ASSERT_EQ(outs[c][i], outs[0][i]) << (c == 1 ? "chunks of 4" : "one token at a time") << " vs one call: token "
                                        << i / q_dim << " element " << i % q_dim;
}

// Attention at real context lengths: a cache of L positions whose first L - n positions are
// written on the host (the reference quantizer / rounding, uploaded as a KV buffer), then a checked
// prompt of n = min(L, 256 if L <= 256 else 64) tokens ending at L (causal or not) and a checked
// decode token at L. GQA `group` query heads per KV head, 2 KV heads, head_dim 64.
void attention_context_case(Env& env, DType kv_type, int64_t group, bool causal, int64_t L) {
  if (!env.device().supports_kv(kv_type))
    GTEST_SKIP() << env.device().id() << " does not keep a KV cache in " << kernels::dtype_name(kv_type)
                 << " (supports_kv is false)";
  const int64_t n_kv = 2, hd = 64, n_heads = n_kv * group, kv_dim = n_kv * hd, q_dim = n_heads * hd;
  const int64_t n_ctx = L + 1, n_prompt = L <= 256 ? L : 64, filled = L - n_prompt;
  const int64_t row_bytes = kernels::row_bytes(kv_type, kv_dim);
  Rng rng(static_cast<uint64_t>(1000 * L + 10 * group + (causal ? 1 : 0)));
  // The host-written part, and what the whole cache holds as floats.
  std::vector<uint8_t> host_k(static_cast<size_t>(n_ctx * row_bytes), 0), host_v(host_k.size(), 0);
  std::vector<double> ref_k(static_cast<size_t>(n_ctx * kv_dim)), ref_v(ref_k.size());
  std::vector<float> row(static_cast<size_t>(kv_dim));
  auto record = [&](const float* src, int64_t pos, uint8_t* bytes, std::vector<double>& ref) {
    std::vector<uint8_t> tmp(static_cast<size_t>(row_bytes));
    kernels::quantize_row(kv_type, src, tmp.data(), kv_dim);
    if (bytes) std::memcpy(bytes + pos * row_bytes, tmp.data(), tmp.size());
    kernels::dequantize_row(kv_type, tmp.data(), row.data(), kv_dim);
    for (int64_t i = 0; i < kv_dim; ++i) ref[static_cast<size_t>(pos * kv_dim + i)] = row[static_cast<size_t>(i)];
  };
  for (int64_t p = 0; p < filled; ++p) {
    const std::vector<float> k = rng.sym_vec(kv_dim), v = rng.sym_vec(kv_dim);
    record(k.data(), p, host_k.data(), ref_k);
    record(v.data(), p, host_v.data(), ref_v);
  }
  auto kc = env.upload(host_k.data(), host_k.size(), BufferUse::KvCache);
  auto vc = env.upload(host_v.data(), host_v.size(), BufferUse::KvCache);

  struct Step {
    int64_t pos0, n_tokens;
  };
  for (const Step step : {Step{filled, n_prompt}, Step{L, 1}}) {
    SCOPED_TRACE(std::to_string(step.n_tokens) + " tokens at " + std::to_string(step.pos0));
    const int64_t nt = step.n_tokens;
    const std::vector<float> q = rng.sym_vec(nt * q_dim, 4.0), k = rng.sym_vec(nt * kv_dim), v = rng.sym_vec(nt * kv_dim);
    for (int64_t t = 0; t < nt; ++t) {
      record(k.data() + t * kv_dim, step.pos0 + t, nullptr, ref_k);
      record(v.data() + t * kv_dim, step.pos0 + t, nullptr, ref_v);
    }
    auto dq = env.upload(q), dk = env.upload(k), dv = env.upload(v);
    auto dout = env.alloc(static_cast<size_t>(nt * q_dim) * sizeof(float));
    backend::AttentionArgs a;
    a.q = reinterpret_cast<const float*>(dq->data());
    a.k = reinterpret_cast<const float*>(dk->data());
    a.v = reinterpret_cast<const float*>(dv->data());
    a.k_cache = kc->data();
    a.v_cache = vc->data();
    a.kv_type = kv_type;
    a.kv_stride = kv_dim;
    a.n_ctx = n_ctx;
    a.n_tokens = nt;
    a.pos0 = step.pos0;
    a.n_heads = n_heads;
    a.n_kv_heads = n_kv;
    a.head_dim = hd;
    a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    a.causal = causal;
    a.out = reinterpret_cast<float*>(dout->data());
    must(env.ops().attention(a), "attention");

    std::vector<double> ref(static_cast<size_t>(nt * q_dim)), w;
    for (int64_t t = 0; t < nt; ++t)
      for (int64_t h = 0; h < n_heads; ++h) {
        const int64_t end = causal ? step.pos0 + t + 1 : step.pos0 + nt, off = (h / group) * hd;
        const float* qh = q.data() + t * q_dim + h * hd;
        w.assign(static_cast<size_t>(end), 0.0);
        double m = -INFINITY;
        for (int64_t p = 0; p < end; ++p) {
          double sdot = 0;
          for (int64_t i = 0; i < hd; ++i) sdot += static_cast<double>(qh[i]) * ref_k[static_cast<size_t>(p * kv_dim + off + i)];
          w[static_cast<size_t>(p)] = sdot * a.scale;
          m = std::max(m, w[static_cast<size_t>(p)]);
        }
        double sum = 0;
        for (double& x : w) sum += (x = std::exp(x - m));
        for (int64_t i = 0; i < hd; ++i) {
          double o = 0;
          for (int64_t p = 0; p < end; ++p) o += w[static_cast<size_t>(p)] * ref_v[static_cast<size_t>(p * kv_dim + off + i)];
          ref[static_cast<size_t>(t * q_dim + h * hd + i)] = o / sum;
        }
      }
    // Tolerances (relative L2 per head) as in attention_case: F32 1e-4, F16 2e-3 (a backend may
    // round queries or partial sums to F16), Q8_0 2e-2 (a backend may quantize the query to 8 bits).
    const double tol = kv_type == DType::Q8_0 ? 2e-2 : kv_type == DType::F16 ? 2e-3 : 1e-4;
    expect_rows_close(env.download(dout->data(), ref.size()), ref, hd, tol, "attention output (rows are heads)");
  }
}

// -- attention sinks (gpt-oss) --
// AttentionArgs::sinks: one logit per query head that joins every row's softmax denominator with
// no value. The float64 reference takes the max over the row's scores and its head's sink and
// adds exp(sink - max) to the sum. Queries of magnitude 4 as in attention_case (scores within
// about +-5, a few hundred positions: log of the sum of exps up to about 6), so the sinks below,
// spread from -2 to 9 over the heads, go from a negligible share of a row's denominator to
// nearly all of it (9: above every score, so the max is the sink's), and a sink read for another
// head than its own changes the output.

// n_heads distinct sink logits in [lo, hi], neighbouring heads (the heads of one KV head) far apart.
std::vector<float> sink_logits(int64_t n_heads, float lo, float hi) {
  std::vector<float> s(static_cast<size_t>(n_heads));
  for (int64_t h = 0; h < n_heads; ++h) {
    const int64_t rank = (h % 2 == 0) ? h / 2 : (n_heads + 1) / 2 + h / 2;  // evens low, odds high
    s[static_cast<size_t>(h)] =
        n_heads == 1 ? hi : lo + (hi - lo) * static_cast<float>(rank) / static_cast<float>(n_heads - 1);
  }
  return s;
}

// Tolerances (relative L2 per head) as attention_case's: F32 1e-4, F16 2e-3, Q8_0 2e-2. The sink
// adds one f32 exp to the denominator (1e-7 relative): nothing to widen.
double sink_tolerance(DType kv_type) { return kv_type == DType::Q8_0 ? 2e-2 : kv_type == DType::F16 ? 2e-3 : 1e-4; }

// The worst relative L2 distance between rows of a and b (each [rows][row_len]), relative to b.
double worst_row_distance(const std::vector<double>& a, const std::vector<double>& b, int64_t row_len) {
  double worst = 0;
  for (size_t r = 0; r * row_len < b.size(); ++r) {
    double diff = 0, norm = 0;
    for (int64_t i = 0; i < row_len; ++i) {
      const double x = a[r * row_len + i], y = b[r * row_len + i];
      diff += (x - y) * (x - y);
      norm += y * y;
    }
    worst = std::max(worst, std::sqrt(diff / norm));
  }
  return worst;
}

// One sequence for the sink cases: its geometry, window, ring and sinks.
struct SinkSeqSpec {
  DType kv_type = DType::F32;
  int64_t n_heads = 4, n_kv = 2, hd = 64;
  int64_t n_ctx = 16;     // positions of the sequence
  int64_t window = 0;     // 0: causal over everything
  int64_t kv_cells = 0;   // > 0: a ring of that many rows
  float sink_lo = -2.0f, sink_hi = 9.0f;
};

// A sequence's KV cache on the device (two copies after fork(): the batch cases run the same call
// on each), what its cache holds by position as floats (the reference: F16 rounded, Q8_0
// quantized by the reference quantizer), its sinks on the device, and its next position. Causal
// calls only.
class SinkSeq {
 public:
  SinkSeq(Env& env, const SinkSeqSpec& s, uint64_t seed) : env_(env), s_(s), rng_(seed) {
    kv_dim_ = s.n_kv * s.hd;
    q_dim_ = s.n_heads * s.hd;
    const int64_t rows = s.kv_cells > 0 ? s.kv_cells : s.n_ctx;
    cache_bytes_ = static_cast<size_t>(kernels::row_bytes(s.kv_type, rows * kv_dim_));
    for (int c = 0; c < 2; ++c) {
      k_[c] = env.alloc(cache_bytes_, BufferUse::KvCache);
      v_[c] = env.alloc(cache_bytes_, BufferUse::KvCache);
      must(env.device().fill_zero(k_[c]->data(), cache_bytes_), "fill_zero");
      must(env.device().fill_zero(v_[c]->data(), cache_bytes_), "fill_zero");
    }
    ref_k_.assign(static_cast<size_t>(s.n_ctx * kv_dim_), 0.0);
    ref_v_.assign(ref_k_.size(), 0.0);
    sinks_ = sink_logits(s.n_heads, s.sink_lo, s.sink_hi);
    dsinks_ = env.upload(sinks_);
  }

  // The next call's inputs: nt new tokens at the next position (recorded in the reference cache),
  // its output buffer, and the float64 outputs with and without the sinks.
  struct Call {
    std::unique_ptr<backend::Buffer> dq, dk, dv, dout;
    int64_t pos0 = 0, n_tokens = 0;
    std::vector<double> ref, ref_without_sinks;
  };
  Call next(int64_t nt) {
    Call c;
    c.pos0 = pos_;
    c.n_tokens = nt;
    const std::vector<float> q = rng_.sym_vec(static_cast<size_t>(nt * q_dim_), 4.0);
    const std::vector<float> k = rng_.sym_vec(static_cast<size_t>(nt * kv_dim_));
    const std::vector<float> v = rng_.sym_vec(static_cast<size_t>(nt * kv_dim_));
    c.dq = env_.upload(q);
    c.dk = env_.upload(k);
    c.dv = env_.upload(v);
    c.dout = env_.alloc(static_cast<size_t>(nt * q_dim_) * sizeof(float));
    for (int64_t t = 0; t < nt; ++t) {
      record(k.data() + t * kv_dim_, pos_ + t, ref_k_);
      record(v.data() + t * kv_dim_, pos_ + t, ref_v_);
    }
    c.ref = reference(q, c.pos0, nt, sinks_.data());
    c.ref_without_sinks = reference(q, c.pos0, nt, nullptr);
    pos_ += nt;
    return c;
  }

  // The call's arguments on cache copy `copy` (0, or 1 after fork()).
  backend::AttentionArgs args(const Call& c, int copy = 0) const {
    backend::AttentionArgs a;
    a.q = reinterpret_cast<const float*>(c.dq->data());
    a.k = reinterpret_cast<const float*>(c.dk->data());
    a.v = reinterpret_cast<const float*>(c.dv->data());
    a.k_cache = k_[copy]->data();
    a.v_cache = v_[copy]->data();
    a.kv_type = s_.kv_type;
    a.kv_stride = kv_dim_;
    a.n_ctx = s_.n_ctx;
    a.kv_cells = s_.kv_cells;
    a.n_tokens = c.n_tokens;
    a.pos0 = c.pos0;
    a.n_heads = s_.n_heads;
    a.n_kv_heads = s_.n_kv;
    a.head_dim = s_.hd;
    a.scale = 1.0f / std::sqrt(static_cast<float>(s_.hd));
    a.window = s_.window;
    a.sinks = reinterpret_cast<const float*>(dsinks_->data());
    a.out = reinterpret_cast<float*>(c.dout->data());
    return a;
  }

  // The call's output against the reference (and the reference without sinks far from it: the
  // case can tell a sink from none).
  void check(const Call& c, const std::string& what) {
    const double tol = sink_tolerance(s_.kv_type);
    EXPECT_GT(worst_row_distance(c.ref_without_sinks, c.ref, s_.hd), 30 * tol)
        << what << ": the sinks hardly change the reference; the case could not tell them from none";
    expect_rows_close(env_.download(c.dout->data(), c.ref.size()), c.ref, s_.hd, tol, what + " (rows are heads)");
  }

  // Copy 1 of the cache <- copy 0.
  void fork() {
    must(env_.ops().copy(k_[0]->data(), k_[1]->data(), cache_bytes_), "copy k cache");
    must(env_.ops().copy(v_[0]->data(), v_[1]->data(), cache_bytes_), "copy v cache");
  }
  std::vector<uint8_t> cache_bytes(int copy) {
    std::vector<uint8_t> b = env_.download_bytes(k_[copy]->data(), cache_bytes_);
    const std::vector<uint8_t> v = env_.download_bytes(v_[copy]->data(), cache_bytes_);
    b.insert(b.end(), v.begin(), v.end());
    return b;
  }

  const SinkSeqSpec& spec() const { return s_; }
  int64_t q_dim() const { return q_dim_; }

 private:
  void record(const float* src, int64_t pos, std::vector<double>& ref) {
    std::vector<float> row(src, src + kv_dim_);
    if (s_.kv_type != DType::F32) {
      std::vector<uint8_t> tmp(static_cast<size_t>(kernels::row_bytes(s_.kv_type, kv_dim_)));
      kernels::quantize_row(s_.kv_type, src, tmp.data(), kv_dim_);
      kernels::dequantize_row(s_.kv_type, tmp.data(), row.data(), kv_dim_);
    }
    for (int64_t i = 0; i < kv_dim_; ++i) ref[static_cast<size_t>(pos * kv_dim_ + i)] = row[static_cast<size_t>(i)];
  }
  // Float64 causal attention of q's nt tokens at pos0 over the reference cache; sinks: [n_heads]
  // or null.
  std::vector<double> reference(const std::vector<float>& q, int64_t pos0, int64_t nt, const float* sinks) const {
    const int64_t hd = s_.hd, group = s_.n_heads / s_.n_kv;
    const double scale = 1.0f / std::sqrt(static_cast<float>(hd));  // the f32 scale the call gets
    std::vector<double> out(static_cast<size_t>(nt * q_dim_)), w;
    for (int64_t t = 0; t < nt; ++t)
      for (int64_t h = 0; h < s_.n_heads; ++h) {
        const int64_t last = pos0 + t, off = (h / group) * hd;
        const int64_t first = s_.window > 0 ? std::max<int64_t>(0, last - s_.window + 1) : 0;
        const float* qh = q.data() + t * q_dim_ + h * hd;
        w.assign(static_cast<size_t>(last - first + 1), 0.0);
        double m = sinks ? static_cast<double>(sinks[h]) : -INFINITY;
        for (int64_t p = first; p <= last; ++p) {
          double d = 0;
          for (int64_t i = 0; i < hd; ++i)
            d += static_cast<double>(qh[i]) * ref_k_[static_cast<size_t>(p * kv_dim_ + off + i)];
          w[static_cast<size_t>(p - first)] = d * scale;
          m = std::max(m, d * scale);
        }
        double sum = sinks ? std::exp(static_cast<double>(sinks[h]) - m) : 0.0;
        for (double& x : w) sum += (x = std::exp(x - m));
        for (int64_t i = 0; i < hd; ++i) {
          double o = 0;
          for (int64_t p = first; p <= last; ++p)
            o += w[static_cast<size_t>(p - first)] * ref_v_[static_cast<size_t>(p * kv_dim_ + off + i)];
          out[static_cast<size_t>(t * q_dim_ + h * hd + i)] = o / sum;
        }
      }
    return out;
  }

  Env& env_;
  SinkSeqSpec s_;
  Rng rng_;
  int64_t kv_dim_ = 0, q_dim_ = 0, pos_ = 0;
  size_t cache_bytes_ = 0;
  std::unique_ptr<backend::Buffer> k_[2], v_[2], dsinks_;
  std::vector<double> ref_k_, ref_v_;
  std::vector<float> sinks_;
};

std::string sink_call_name(const SinkSeq::Call& c) {
  return "attention with sinks, " + std::to_string(c.n_tokens) + " tokens at " + std::to_string(c.pos0);
}

// Calls of calls[i] tokens one after the other from position 0, each checked against the
// float64 reference.
void attention_sinks_case(Env& env, const SinkSeqSpec& spec, const std::vector<int64_t>& calls) {
  if (!env.device().supports_kv(spec.kv_type))
    GTEST_SKIP() << env.device().id() << " does not keep a KV cache in " << kernels::dtype_name(spec.kv_type)
                 << " (supports_kv is false)";
  SinkSeq seq(env, spec, static_cast<uint64_t>(51 + spec.n_heads * 7 + spec.window * 3 + spec.kv_cells + calls.size()));
  for (int64_t nt : calls) {
    const SinkSeq::Call c = seq.next(nt);
    SCOPED_TRACE(sink_call_name(c));
    must(env.ops().attention(seq.args(c)), sink_call_name(c));
    seq.check(c, sink_call_name(c));
    if (::testing::Test::HasFailure()) return;
  }
}

// Batch invariance with sinks: the same 100 tokens (GQA 2, F32 / F16 / Q8_0 cache) in one call,
// in chunks of 7, and one at a time give bit-identical outputs (each token's row is computed the
// same way as a prompt row and as a decode step, the sink merged in the same place). 100 tokens
// cross the CPU's 64-key blocks (the decode path merges per-block partials, the prompt path walks
// the blocks) and stay under CUDA's 128-key split (its decode steps take the unsplit kernel, as
// its prompts do). The one call is also checked against the float64 reference.
void attention_sinks_chunking_case(Env& env, DType kv_type) {
  if (!env.device().supports_kv(kv_type))
    GTEST_SKIP() << env.device().id() << " does not keep a KV cache in " << kernels::dtype_name(kv_type);
  const int64_t n = 100;
  SinkSeqSpec spec;
  spec.kv_type = kv_type;
  spec.n_ctx = 128;
  // The reference and the inputs of the one call; the chunked runs replay the same inputs.
  SinkSeq seq(env, spec, 61);
  const SinkSeq::Call all = seq.next(n);
  must(env.ops().attention(seq.args(all)), "attention with sinks, 100 tokens in one call");
  seq.check(all, "attention with sinks, 100 tokens in one call");
  const std::vector<float> one_call = env.download(all.dout->data(), static_cast<size_t>(n * seq.q_dim()));
  const backend::AttentionArgs base = seq.args(all);
  const int64_t kv_dim = spec.n_kv * spec.hd, q_dim = seq.q_dim();
  const size_t cache_bytes = static_cast<size_t>(kernels::row_bytes(kv_type, spec.n_ctx * kv_dim));
  for (int64_t chunk : {int64_t{7}, int64_t{1}}) {
    SCOPED_TRACE(chunk == 1 ? "one token at a time" : "chunks of 7");
    auto kc = env.alloc(cache_bytes, BufferUse::KvCache);
    auto vc = env.alloc(cache_bytes, BufferUse::KvCache);
    must(env.device().fill_zero(kc->data(), cache_bytes), "fill_zero");
    must(env.device().fill_zero(vc->data(), cache_bytes), "fill_zero");
    auto dout = env.alloc(static_cast<size_t>(n * q_dim) * sizeof(float));
    for (int64_t p0 = 0; p0 < n; p0 += chunk) {
      backend::AttentionArgs a = base;
      a.q = base.q + p0 * q_dim;
      a.k = base.k + p0 * kv_dim;
      a.v = base.v + p0 * kv_dim;
      a.k_cache = kc->data();
      a.v_cache = vc->data();
      a.n_tokens = std::min(chunk, n - p0);
      a.pos0 = p0;
      a.out = reinterpret_cast<float*>(dout->data()) + p0 * q_dim;
      must(env.ops().attention(a), "attention with sinks, chunk at " + std::to_string(p0));
    }
    const std::vector<float> got = env.download(dout->data(), one_call.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(std::memcmp(&got[i], &one_call[i], sizeof(float)), 0)
          << "token " << i / q_dim << " head " << i % q_dim / spec.hd << " element " << i % spec.hd << ": " << got[i]
          << " vs " << one_call[i] << " in one call";
  }
}

// attention_batch with sinks: five sequences with caches of their own, filled by checked calls,
// then one batch of a decode step each and a 3-token prompt: GQA 2 at 6 positions, GQA 4 at 130
// (past a 128-key split), a window of 48 at 200, a ring of 64 rows with a window of 40 at 150
// (wrapped twice), and 3 tokens at 20. Each sequence has sinks of its own (another range), so a
// sink taken from another sequence of the batch changes the output. Every output against the
// float64 reference, and bit for bit what attention() gives the same call on a copy of the cache
// (the caches after both equal too).
void attention_sinks_batch_case(Env& env, DType kv_type) {
  if (!env.device().supports_kv(kv_type))
    GTEST_SKIP() << env.device().id() << " does not keep a KV cache in " << kernels::dtype_name(kv_type);
  struct SeqPlan {
    SinkSeqSpec spec;
    std::vector<int64_t> fill;  // the calls that fill the cache
    int64_t batch_tokens;
  };
  auto spec = [&](int64_t n_heads, int64_t n_ctx, int64_t window, int64_t cells, float lo, float hi) {
    SinkSeqSpec s;
    s.kv_type = kv_type;
    s.n_heads = n_heads;
    s.n_ctx = n_ctx;
    s.window = window;
    s.kv_cells = cells;
    s.sink_lo = lo;
    s.sink_hi = hi;
    return s;
  };
  const std::vector<SeqPlan> plans = {
      {spec(4, 16, 0, 0, -2.0f, 6.0f), {6}, 1},
      {spec(8, 160, 0, 0, 0.0f, 9.0f), {100, 30}, 1},
      {spec(4, 256, 48, 0, -1.0f, 8.0f), {200}, 1},
      {spec(4, 160, 40, 64, 1.0f, 7.0f), {25, 25, 25, 25, 25, 25}, 1},
      {spec(4, 32, 0, 0, -3.0f, 5.0f), {20}, 3},
  };
  std::vector<std::unique_ptr<SinkSeq>> seqs;
  for (size_t i = 0; i < plans.size(); ++i) {
    seqs.push_back(std::make_unique<SinkSeq>(env, plans[i].spec, 71 + i));
    for (int64_t nt : plans[i].fill) {
      const SinkSeq::Call c = seqs[i]->next(nt);
      SCOPED_TRACE("sequence " + std::to_string(i) + ", filling");
      must(env.ops().attention(seqs[i]->args(c)), sink_call_name(c));
      seqs[i]->check(c, "sequence " + std::to_string(i) + " filling: " + sink_call_name(c));
      if (::testing::Test::HasFailure()) return;
    }
    seqs[i]->fork();
  }
  std::vector<SinkSeq::Call> calls;
  std::vector<backend::AttentionArgs> batch;
  for (size_t i = 0; i < plans.size(); ++i) calls.push_back(seqs[i]->next(plans[i].batch_tokens));
  for (size_t i = 0; i < plans.size(); ++i) batch.push_back(seqs[i]->args(calls[i], 0));
  must(env.ops().attention_batch(batch), "attention_batch with sinks");
  std::vector<std::vector<float>> batched;
  for (size_t i = 0; i < plans.size(); ++i) {
    const std::string what = "sequence " + std::to_string(i) + " of the batch: " + sink_call_name(calls[i]);
    seqs[i]->check(calls[i], what);
    batched.push_back(env.download(calls[i].dout->data(), calls[i].ref.size()));
  }
  if (::testing::Test::HasFailure()) return;
  for (size_t i = 0; i < plans.size(); ++i) {
    SCOPED_TRACE("sequence " + std::to_string(i) + " alone");
    must(env.ops().attention(seqs[i]->args(calls[i], 1)), "attention alone");
    const std::vector<float> alone = env.download(calls[i].dout->data(), calls[i].ref.size());
    for (size_t e = 0; e < alone.size(); ++e)
      ASSERT_EQ(std::memcmp(&alone[e], &batched[i][e], sizeof(float)), 0)
          << "element " << e << ": attention() " << alone[e] << ", attention_batch " << batched[i][e];
    ASSERT_TRUE(seqs[i]->cache_bytes(0) == seqs[i]->cache_bytes(1))
        << "the caches after the batch and after attention() differ";
  }
}

// -- copies --
void transfer_round_trip_case(Env& env, size_t bytes) {
  Rng rng(static_cast<uint64_t>(29 + bytes));
  std::vector<uint8_t> src(bytes);
  for (auto& b : src) b = static_cast<uint8_t>(rng.next());
  auto a = env.alloc(bytes);
  auto b = env.alloc(bytes);
  must(env.ops().from_host(src.data(), a->data(), bytes), "from_host");
  must(env.ops().copy(a->data(), b->data(), bytes), "copy");
  std::vector<uint8_t> back(bytes, 0);
  must(env.ops().to_host(b->data(), back.data(), bytes), "to_host");
  // Exact: bytes equal.
  ASSERT_EQ(std::memcmp(src.data(), back.data(), bytes), 0) << bytes << " bytes changed in from_host / copy / to_host";
  must(env.ops().synchronize(), "synchronize");
}

void device_copy_2d_case(Env& env) {
  // Host rows of 100 bytes -> device rows of 64 -> (within) device rows of 80 at offset 8 -> host.
  const size_t height = 7, width = 60;
  Rng rng(30);
  std::vector<uint8_t> src(100 * height);
  for (auto& b : src) b = static_cast<uint8_t>(rng.next());
  auto a = env.alloc(64 * height);
  auto b = env.alloc(80 * height);
  must(env.device().fill_zero(a->data(), a->size()), "fill_zero");
  must(env.device().fill_zero(b->data(), b->size()), "fill_zero");
  must(env.device().copy_from_host({src.data(), 100, a->data(), 64, width, height}), "copy_from_host 2D");
  must(env.device().copy_within({a->data(), 64, b->data() + 8, 80, width, height}), "copy_within 2D");
  std::vector<uint8_t> back(80 * height, 0xee);
  must(env.device().copy_to_host({b->data(), 80, back.data(), 80, 80, height}), "copy_to_host 2D");
  // Exact: the strided bytes land where the pitches put them, the gaps stay zero.
  for (size_t r = 0; r < height; ++r)
    for (size_t i = 0; i < 80; ++i) {
      const uint8_t want = i >= 8 && i < 8 + width ? src[r * 100 + i - 8] : 0;
      ASSERT_EQ(back[r * 80 + i], want) << "row " << r << " byte " << i;
    }
  // The op table sees the same bytes the device copies wrote.
  const std::vector<uint8_t> via_ops = env.download_bytes(a->data(), a->size());
  for (size_t r = 0; r < height; ++r)
    ASSERT_EQ(std::memcmp(via_ops.data() + r * 64, src.data() + r * 100, width), 0) << "row " << r;
}

void events_case(Env& env) {
  auto before = must(env.ops().record_event(), "record_event");
  Rng rng(31);
  auto x = env.upload(rng.sym_vec(4096));
  must(env.ops().softmax(reinterpret_cast<float*>(x->data()), 4, 1024), "softmax");
  auto after = must(env.ops().record_event(), "record_event");
  must(after->synchronize(), "event synchronize");
  const int64_t ns = must(after->elapsed_ns_since(*before), "elapsed_ns_since");
  EXPECT_GE(ns, 0) << "an event recorded later reports a negative time since an earlier one";
  // Where a backend knows how long until an event completes, a completed one is 0 away.
  if (const std::optional<int64_t> left = after->ns_from_now()) EXPECT_EQ(*left, 0) << "a completed event";
}

std::string type_tag(DType t) { return kernels::dtype_name(t); }

// One CTest case per backend x op x weight type; shapes, token counts and variants of an op run
// inside its case (each under a SCOPED_TRACE, so a failure names them). Few cases keep the suite
// quick where every test process pays for loading the CUDA libraries.
std::vector<OpCase> all_cases() {
  std::vector<OpCase> cases;
  for (DType t : weight_types())
    cases.push_back({"embed_" + type_tag(t), [t](Env& e) { embed_case(e, t); }, t});
  cases.push_back({"embed_bad_token", [](Env& e) { embed_bad_token_case(e); }});

  cases.push_back({"rms_norm", [](Env& e) {
                     rms_norm_case(e, 1, 64, false);
                     rms_norm_case(e, 5, 4096, false);
                     rms_norm_case(e, 3, 1000, true);
                   }});

  // Odd row counts; every token count of kMatmulTokens (each backend's matmul paths).
  for (DType t : weight_types()) {
    cases.push_back({"matmul_" + type_tag(t), [t](Env& e) {
                       // 5120 columns: past 4096, where CUDA's tiled kernel prefetches.
                       std::vector<std::pair<int64_t, int64_t>> shapes = {{67, 512}, {130, 1280}, {21, 5120}};
                       if (kernels::traits(t).block_elems <= 32) shapes.push_back({19, 96});  // 3 blocks of 32
                       for (const auto& [rows, cols] : shapes)
                         for (int64_t n_tokens : kMatmulTokens) {
                           SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + ", " +
                                        std::to_string(n_tokens) + " tokens");
                           matmul_case(e, t, rows, cols, n_tokens);
                           if (::testing::Test::IsSkipped()) return;
                         }
                       for (int64_t n_tokens : {1, 3}) {
                         SCOPED_TRACE("67x512, " + std::to_string(n_tokens) + " tokens, x not 16-byte aligned");
                         matmul_case(e, t, 67, 512, n_tokens, 1.0, -1, 1);
                       }
                     },
                     t});
  }

  // Activations past f16's range (|x| up to 2.5e5 > 65504): every token count, so every path (CUDA:
  // mmv, mmv in groups, and the prompt GEMM that converts activations to f16) gives finite values
  // within the usual tolerance; once with all tokens that large, once with one token of 40.
  for (DType t : {DType::F16, DType::Q4_K, DType::Q8_0, DType::BF16}) {
    cases.push_back({"matmul_" + type_tag(t) + "_large_activations", [t](Env& e) {
                       for (int64_t n_tokens : kMatmulTokens) {
                         SCOPED_TRACE(std::to_string(n_tokens) + " tokens of |x| up to 2.5e5");
                         matmul_case(e, t, 67, 512, n_tokens, 2.5e5);
                         if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
                       }
                       SCOPED_TRACE("token 5 of 40 with |x| up to 2.5e5, the others up to 1");
                       matmul_case(e, t, 67, 512, 40, 2.5e5, 5);
                     },
                     t});
  }

  cases.push_back({"matmul_many", [](Env& e) {
                     for (int64_t n_tokens : kMatmulTokens) {
                       SCOPED_TRACE(std::to_string(n_tokens) + " tokens");
                       matmul_many_case(e, n_tokens);
                       if (::testing::Test::HasFatalFailure()) return;
                     }
                   }});

  for (DType t : {DType::Q8_0, DType::Q4_K})
    cases.push_back({"matmul_" + type_tag(t) + "_row_tiled", [t](Env& e) { matmul_row_tiled_case(e, t); }, t});

  cases.push_back({"add", [](Env& e) { add_case(e); }});
  cases.push_back({"add_rows", [](Env& e) { add_rows_case(e); }});
  cases.push_back({"mul", [](Env& e) { mul_case(e); }});
  cases.push_back({"gather_rows", [](Env& e) { gather_rows_case(e); }});
  cases.push_back({"scale_add_rows", [](Env& e) { scale_add_rows_case(e); }});
  cases.push_back({"row_index_errors", [](Env& e) { row_index_errors_case(e); }});
  cases.push_back({"zero", [](Env& e) { zero_case(e); }});
  cases.push_back({"swiglu", [](Env& e) {
                     swiglu_case(e, 4099);
                     swiglu_case(e, 22531);
                   }});
  cases.push_back({"geglu", [](Env& e) {
                     geglu_case(e, 4099);
                     geglu_case(e, 22531);
                   }});
  cases.push_back({"layer_norm", [](Env& e) {
                     layer_norm_case(e, 1, 64, false, true);
                     layer_norm_case(e, 5, 4096, false, true);
                     layer_norm_case(e, 3, 1000, true, true);
                     layer_norm_case(e, 2, 256, false, false);
                   }});
  cases.push_back({"gelu", [](Env& e) {
                     gelu_case(e, 4099);
                     gelu_case(e, 22531);
                   }});
  cases.push_back({"swiglu_oai", [](Env& e) {
                     swiglu_oai_case(e, 4099);
                     swiglu_oai_case(e, 22531);
                   }});
  cases.push_back({"scale", [](Env& e) { scale_case(e); }});
  cases.push_back({"softcap", [](Env& e) { softcap_case(e); }});
  cases.push_back({"softmax", [](Env& e) {
                     softmax_case(e, 4, 1000);
                     softmax_case(e, 3, 7);
                   }});

  // Rope, per pair layout: with and without frequency divisors, all or the first half of the
  // head's dimensions, near the start of the context and at position 4000. Tolerances (relative
  // L2 per head): 1e-5 near the start (f32 angles and sin/cos); at position 4000 an f32 angle
  // carries ~4000 * 2^-24 rad of rounding: 2e-3.
  for (bool interleaved : {true, false})
    cases.push_back({std::string("rope_") + (interleaved ? "interleaved" : "neox"), [interleaved](Env& e) {
                       for (bool divisors : {false, true})
                         for (int64_t rope_dims : {64, 32}) {
                           SCOPED_TRACE(std::string(divisors ? "with" : "without") + " divisors, rope_dims " +
                                        std::to_string(rope_dims) + " of 64");
                           rope_case(e, RopeCase{interleaved, divisors, rope_dims, 5, 1e-5});
                         }
                       SCOPED_TRACE("position 4000");
                       rope_case(e, RopeCase{interleaved, false, 64, 4000, 2e-3});
                     }});

  // GQA 4 heads over 2 KV heads, head_dim 64: a prompt of 7 tokens, then one decode token at
  // position 7; then a prompt of 200 tokens and a decode token at 200 (a longer context).
  for (DType kv : {DType::F32, DType::F16, DType::Q8_0})
    cases.push_back({std::string("attention_kv_") + type_tag(kv), [kv](Env& e) {
                       {
                         SCOPED_TRACE("prompt of 7, decode at 7");
                         attention_case(e, {kv, 7, 16});
                       }
                       if (::testing::Test::IsSkipped()) return;
                       SCOPED_TRACE("prompt of 200, decode at 200");
                       attention_case(e, {kv, 200, 256});
                     },
                     std::nullopt, kv});

  // Sliding windows (gemma3 local layers, Mistral): window 5 over a prompt of 7 and its decode
  // step; window 64 over a prompt of 200 (prompt rows and split-context decode both masked).
  for (DType kv : {DType::F32, DType::F16})
    cases.push_back({std::string("attention_window_kv_") + type_tag(kv), [kv](Env& e) {
                       {
                         SCOPED_TRACE("window 5, prompt of 7, decode at 7");
                         attention_case(e, {kv, 7, 16, 5});
                       }
                       if (::testing::Test::IsSkipped()) return;
                       SCOPED_TRACE("window 64, prompt of 200, decode at 200");
                       attention_case(e, {kv, 200, 256, 64});
                     },
                     std::nullopt, kv});

  // gemma2's soft-capped scores: cap 1.5 on scores of a few units (most of them bent), with and
  // without a window, prompt rows and the decode step.
  for (DType kv : {DType::F32, DType::F16})
    cases.push_back({std::string("attention_softcap_kv_") + type_tag(kv), [kv](Env& e) {
                       {
                         SCOPED_TRACE("softcap 1.5, prompt of 200, decode at 200");
                         attention_case(e, {kv, 200, 256, 0, 1.5f});
                       }
                       if (::testing::Test::IsSkipped()) return;
                       SCOPED_TRACE("softcap 1.5, window 64, prompt of 200, decode at 200");
                       attention_case(e, {kv, 200, 256, 64, 1.5f});
                     }});

  // Context lengths 1, 17, 256, 1,000 and 4,099 (odd sizes, edges of 64-key blocks), GQA 1, 4
  // and 8, causal and not, for the F16 cache (the default) and Q8_0.
  for (DType kv : {DType::F16, DType::Q8_0})
    for (int64_t group : {1, 4, 8})
      cases.push_back({std::string("attention_context_kv_") + type_tag(kv) + "_gqa" + std::to_string(group),
                       [kv, group](Env& e) {
                         for (int64_t L : {1, 17, 256, 1000, 4099})
                           for (bool causal : {true, false}) {
                             SCOPED_TRACE("context " + std::to_string(L) + (causal ? ", causal" : ", not causal"));
                             attention_context_case(e, kv, group, causal, L);
                             if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
                           }
                       },
                       std::nullopt, kv});

  for (DType kv : {DType::F32, DType::F16, DType::Q8_0})
    cases.push_back({std::string("attention_chunking_kv_") + type_tag(kv), [kv](Env& e) { attention_chunking_case(e, kv); },
                     std::nullopt, kv});

  // Attention sinks (gpt-oss), against the float64 reference with the sink in each row's
  // softmax: a decode step at position 0 (one key and the sink) and after it; a prompt of 7 and
  // its decode step, a prompt of 200 and its decode step (CUDA: a split-context decode, the sink
  // merged with the splits); GQA 1, 2 and 4.
  for (DType kv : {DType::F32, DType::F16, DType::Q8_0})
    cases.push_back({std::string("attention_sinks_kv_") + type_tag(kv), [kv](Env& e) {
                       SinkSeqSpec s;
                       s.kv_type = kv;
                       for (int64_t group : {2, 1, 4}) {
                         s.n_heads = 2 * group;
                         {
                           SCOPED_TRACE("GQA " + std::to_string(group) + ": decode at 0, 1, 2, then a prompt of 7 and decode");
                           s.n_ctx = 16;
                           attention_sinks_case(e, s, {1, 1, 1, 7, 1});
                         }
                         if (::testing::Test::IsSkipped() || ::testing::Test::HasFailure()) return;
                         SCOPED_TRACE("GQA " + std::to_string(group) + ": prompt of 200, decode at 200 and 201");
                         s.n_ctx = 256;
                         attention_sinks_case(e, s, {200, 1, 1});
                         if (::testing::Test::HasFailure()) return;
                       }
                     },
                     std::nullopt, kv});

  // Sinks with sliding windows: window 5 over a prompt of 7 and its decode steps (GQA 2); window 64
  // over a prompt of 200 and its decode steps (GQA 4).
  for (DType kv : {DType::F32, DType::F16})
    cases.push_back({std::string("attention_sinks_window_kv_") + type_tag(kv), [kv](Env& e) {
                       SinkSeqSpec s;
                       s.kv_type = kv;
                       {
                         SCOPED_TRACE("window 5, prompt of 7, decode at 7 and 8");
                         s.window = 5;
                         attention_sinks_case(e, s, {7, 1, 1});
                       }
                       if (::testing::Test::IsSkipped() || ::testing::Test::HasFailure()) return;
                       SCOPED_TRACE("window 64, GQA 4, prompt of 200, decode at 200 and 201");
                       s.window = 64;
                       s.n_heads = 8;
                       s.n_ctx = 256;
                       attention_sinks_case(e, s, {200, 1, 1});
                     },
                     std::nullopt, kv});

  // Sinks over a KV ring (a window of 40 in 128 rows, 289 positions: wrapped twice): prompt chunks
  // of 50, decode steps, a chunk of 30 across the wrap, decode steps; every call checked.
  for (DType kv : {DType::F32, DType::F16})
    cases.push_back({std::string("attention_sinks_ring_kv_") + type_tag(kv), [kv](Env& e) {
                       SinkSeqSpec s;
                       s.kv_type = kv;
                       s.window = 40;
                       s.kv_cells = 128;
                       s.n_ctx = 300;
                       attention_sinks_case(e, s, {50, 50, 50, 50, 50, 1, 1, 1, 1, 1, 1, 30, 1, 1, 1});
                     },
                     std::nullopt, kv});

  for (DType kv : {DType::F32, DType::F16, DType::Q8_0})
    cases.push_back({std::string("attention_sinks_chunking_kv_") + type_tag(kv),
                     [kv](Env& e) { attention_sinks_chunking_case(e, kv); }, std::nullopt, kv});

  for (DType kv : {DType::F32, DType::F16})
    cases.push_back({std::string("attention_sinks_batch_kv_") + type_tag(kv),
                     [kv](Env& e) { attention_sinks_batch_case(e, kv); }, std::nullopt, kv});

  cases.push_back({"round_trips", [](Env& e) {
                     for (size_t bytes : {size_t{1}, size_t{4097}, size_t{(3u << 20) + 5}}) {
                       SCOPED_TRACE(std::to_string(bytes) + " bytes");
                       transfer_round_trip_case(e, bytes);
                     }
                   }});
  cases.push_back({"device_copies_2d", [](Env& e) { device_copy_2d_case(e); }});
  cases.push_back({"events", [](Env& e) { events_case(e); }});
  return cases;
}

// ---- the parameterised test -----------------------------------------------------------------------

struct Param {
  std::string backend;  // cpu | sim | cuda
  OpCase op;
};

void PrintTo(const Param& p, std::ostream* os) { *os << p.backend << "/" << p.op.name; }

// What the backend's first device claims (DeviceCaps), asked once when the cases are registered;
// nothing where the backend has no device (no CUDA device: every cuda case is registered and skips,
// saying why) or it does not open (the cases are registered and fail on the open's error).
std::optional<DeviceCaps> caps_of(const std::string& backend) {
  if (backend == "cuda") {
    if (backend::find_backend("cuda")->device_count() == 0) return std::nullopt;
    auto devices = backend::make_devices("cuda:0", 1, 0);
    if (!devices.ok() || devices->empty()) return std::nullopt;
    return devices->front()->caps();
  }
  auto devices = open_devices(backend);
  if (devices.empty()) return std::nullopt;
  return devices.front()->caps();
}

std::vector<Param> params(const std::string& backend) {
  std::vector<Param> out;
  const std::optional<DeviceCaps> caps = caps_of(backend);
  for (OpCase& c : all_cases()) {
    // A case for a weight type or KV cache type the backend's devices do not claim is not theirs
    // to pass (the planner never gives it to them): not registered, rather than registered and
    // skipped. Inside a case SKIP_UNSUPPORTED_TYPE and supports_kv stay as guards.
    if (caps && c.weights && !caps->takes_weights(*c.weights)) continue;
    if (caps && c.kv && !caps->keeps_kv(*c.kv)) continue;
    // A simulated device runs the very CPU ops: the large CUDA row-tiling cases are not
    // registered for it (cpu/...row_tiled checks those ops), rather than registered and skipped.
    if (backend == "sim" && c.name.ends_with("_row_tiled")) continue;
    // CUDA tiles rows only in its fast prompt mode (STRATA_CUDA_FAST_GEMM=1, read when the device's
    // ops are made; ctest test_backend_ops_cuda_fast_gemm): elsewhere the case would be one more
    // large mmv, which the other matmul cases cover.
    const char* fast = std::getenv("STRATA_CUDA_FAST_GEMM");
    if (backend == "cuda" && c.name.ends_with("_row_tiled") && (fast == nullptr || std::string(fast) != "1")) continue;
    out.push_back({backend, std::move(c)});
  }
  return out;
}

class BackendOps : public ::testing::TestWithParam<Param> {};

TEST_P(BackendOps, MatchesReference) {
  const Param& p = GetParam();
  if (p.backend == "cuda" && backend::find_backend("cuda")->device_count() == 0)
    GTEST_SKIP() << "no CUDA device: " << backend::find_backend("cuda")->describe();
  try {
    auto devices = open_devices(p.backend);
    ASSERT_FALSE(devices.empty()) << "no " << p.backend << " device";
    for (auto& device : devices) {
      SCOPED_TRACE("device " + device->id() + " (" + p.backend + ")");
      Env env(*device, p.backend);
      p.op.run(env);
      if (HasFatalFailure() || IsSkipped()) return;
    }
  } catch (const CaseAborted&) {
    // The failure is recorded already.
  }
}

std::string case_name(const ::testing::TestParamInfo<Param>& info) { return info.param.op.name; }

// Test names read "<backend>/BackendOps.MatchesReference/<op>", e.g.
// cuda/BackendOps.MatchesReference/matmul_q4_k.
INSTANTIATE_TEST_SUITE_P(cpu, BackendOps, ::testing::ValuesIn(params("cpu")), case_name);
INSTANTIATE_TEST_SUITE_P(sim, BackendOps, ::testing::ValuesIn(params("sim")), case_name);
INSTANTIATE_TEST_SUITE_P(cuda, BackendOps, ::testing::ValuesIn(params("cuda")), case_name);

}  // namespace
}  // namespace strata
