// kernels/cpu/matmul_probe.cpp — the measured product rates of matmul_probe.h. The weights are a
// few distinct quantized rows tiled (they decode like a real tensor); one-token passes go through
// several copies in turn so that every pass streams from memory, not from the last-level cache.
#include "kernels/cpu/matmul_probe.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <random>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant.h"

namespace strata::kernels {
namespace {

constexpr int64_t kCols = 2048;  // a multiple of every block size (K-quants: 256)
constexpr int64_t kRows = 2048;

// A [kRows][kCols] matrix of type t, or empty when it cannot be allocated.
std::vector<uint8_t> probe_weights(DType t) {
  const int64_t rb = row_bytes(t, kCols);
  constexpr int64_t kDistinct = 16;
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.f, 0.02f);
  std::vector<float> x(static_cast<size_t>(kCols));
  std::vector<uint8_t> proto(static_cast<size_t>(rb * kDistinct));
  for (int64_t r = 0; r < kDistinct; ++r) {
    for (float& f : x) f = dist(rng);
    quantize_row(t, x.data(), proto.data() + r * rb, kCols);
  }
  std::vector<uint8_t> w;
  try {
    w.resize(static_cast<size_t>(rb * kRows));
  } catch (const std::bad_alloc&) {
    return {};
  }
  for (int64_t r = 0; r < kRows; ++r) std::memcpy(w.data() + r * rb, proto.data() + (r % kDistinct) * rb, rb);
  return w;
}

std::vector<float> activations(int64_t tokens) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(tokens * kCols));
  for (float& f : x) f = dist(rng);
  return x;
}

bool has_product(DType t) { return traits(t).weight_type; }

}  // namespace

double measure_matvec_gbps(ThreadPool& pool, DType t, int64_t bytes) {
  if (!has_product(t)) return 0.0;
  std::vector<std::vector<uint8_t>> copies;
  copies.push_back(probe_weights(t));
  if (copies[0].empty()) return 0.0;
  const int64_t one = static_cast<int64_t>(copies[0].size());
  const int64_t n = std::max<int64_t>(1, bytes / one);
  try {
    for (int64_t c = 1; c < n; ++c) copies.push_back(copies[0]);
  } catch (const std::bad_alloc&) {
    return 0.0;
  }
  const std::vector<float> x = activations(1);
  std::vector<float> y(static_cast<size_t>(kRows));
  std::vector<uint8_t> scratch;
  double best = 0.0;
  for (int pass = 0; pass < 4; ++pass) {  // the first pass warms up (page faults, scratch)
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& w : copies) matmul(pool, t, w.data(), kRows, kCols, x.data(), 1, y.data(), scratch);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (pass > 0 && s > 0) best = std::max(best, static_cast<double>(one * n) / s / 1e9);
  }
  return best;
}

double measure_matmul_tflops(ThreadPool& pool, DType t, int64_t tokens) {
  if (!has_product(t) || tokens < 1) return 0.0;
  const std::vector<uint8_t> w = probe_weights(t);
  if (w.empty()) return 0.0;
  const std::vector<float> x = activations(tokens);
  std::vector<float> y(static_cast<size_t>(kRows * tokens));
  std::vector<uint8_t> scratch;
  double best = 0.0;
  for (int pass = 0; pass < 4; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    matmul(pool, t, w.data(), kRows, kCols, x.data(), tokens, y.data(), scratch);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (pass > 0 && s > 0) best = std::max(best, 2.0 * kRows * kCols * static_cast<double>(tokens) / s / 1e12);
  }
  return best;
}

}  // namespace strata::kernels
