// kernels/cpu/matmul_probe.cpp — the measured product rates of matmul_probe.h. The weights are a
// few distinct quantized rows tiled (they decode like a real tensor); one-token passes go through
// several copies in turn so that every pass streams from memory, not from the last-level cache.
#include "kernels/cpu/matmul_probe.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <initializer_list>
#include <new>
#include <random>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant.h"

namespace strata::kernels {
namespace {

constexpr int64_t kCols = 2048;  // a multiple of every block size (K-quants: 256)
constexpr int64_t kRows = 2048;

// A [rows][cols] matrix of type t, or empty when it cannot be allocated.
std::vector<uint8_t> probe_weights(DType t, int64_t rows = kRows, int64_t cols = kCols) {
  const int64_t rb = row_bytes(t, cols);
  constexpr int64_t kDistinct = 16;
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.f, 0.02f);
  std::vector<float> x(static_cast<size_t>(cols));
  std::vector<uint8_t> proto(static_cast<size_t>(rb * kDistinct));
  for (int64_t r = 0; r < kDistinct; ++r) {
    for (float& f : x) f = dist(rng);
    quantize_row(t, x.data(), proto.data() + r * rb, cols);
  }
  std::vector<uint8_t> w;
  try {
    w.resize(static_cast<size_t>(rb * rows));
  } catch (const std::bad_alloc&) {
    return {};
  }
  for (int64_t r = 0; r < rows; ++r) std::memcpy(w.data() + r * rb, proto.data() + (r % kDistinct) * rb, rb);
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

// Copies of a [rows][cols] matrix of type t, `bytes` in all, read in turn by one-token products
// (so that every pass streams from memory, not from the last-level cache).
struct Streamed {
  int64_t rows = 0, cols = 0;
  double bytes_per_call = 0;
  std::vector<std::vector<uint8_t>> copies;  // empty: could not be allocated
  std::vector<float> y;
};

Streamed make_streamed(DType t, int64_t rows, int64_t cols, int64_t bytes) {
  Streamed s;
  s.rows = rows;
  s.cols = cols;
  std::vector<uint8_t> one = probe_weights(t, rows, cols);
  if (one.empty()) return s;
  const int64_t n = std::max<int64_t>(1, bytes / static_cast<int64_t>(one.size()));
  s.bytes_per_call = static_cast<double>(one.size());
  try {
    for (int64_t c = 0; c < n; ++c) s.copies.push_back(one);
    s.y.resize(static_cast<size_t>(rows));
  } catch (const std::bad_alloc&) {
    s.copies.clear();
  }
  return s;
}

// The median of the values (0 when there are none).
double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Seconds per one-token call of each shape (0 for one that could not be allocated): 8 passes over
// its copies, the shapes interleaved pass by pass so that all see the same moments of a shared
// machine, after one warm-up pass each (page faults, scratch). The median pass counts: the fastest
// one over-promised on a shared VM, where `bench` averages over its slow moments too.
std::vector<double> median_call_seconds(ThreadPool& pool, DType t, std::initializer_list<Streamed*> shapes) {
  constexpr int kPasses = 8;
  const std::vector<float> x = activations(1);  // kCols floats: enough for every shape here
  std::vector<uint8_t> scratch;
  std::vector<std::vector<double>> passes(shapes.size());
  for (int pass = 0; pass <= kPasses; ++pass) {
    size_t i = 0;
    for (Streamed* s : shapes) {
      std::vector<double>& mine = passes[i++];
      if (s->copies.empty()) continue;
      const auto t0 = std::chrono::steady_clock::now();
      for (const auto& w : s->copies) matmul(pool, t, w.data(), s->rows, s->cols, x.data(), 1, s->y.data(), scratch);
      const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                         static_cast<double>(s->copies.size());
      if (pass > 0) mine.push_back(sec);
    }
  }
  std::vector<double> out;
  for (const std::vector<double>& v : passes) out.push_back(median(v));
  return out;
}

}  // namespace

MatvecSpeed measure_matvec(ThreadPool& pool, DType t, int64_t bytes) {
  if (!has_product(t)) return {};
  // Short rows of a width models use, with a remainder after the kernels' 4-block steps: 576
  // (SmolLM2-135M's, 18 blocks of 32); the 256-element types 768 (3 super-blocks). A width that
  // is a multiple of every step (512) ran 10-20% faster per byte than 576 does.
  const int64_t short_cols = traits(t).block_elems > 32 ? 768 : 576;
  const int64_t short_n = kRows * kCols / short_cols;  // rows: about the same bytes a matrix
  Streamed long_rows = make_streamed(t, kRows, kCols, bytes);
  Streamed short_rows = make_streamed(t, short_n, short_cols, bytes);
  if (long_rows.copies.empty()) return {};
  const std::vector<double> sec = median_call_seconds(pool, t, {&long_rows, &short_rows});
  const double long_s = sec[0], short_s = sec[1];
  if (long_s <= 0) return {};
  MatvecSpeed m{long_rows.bytes_per_call / long_s / 1e9, 0.0};
  if (short_s <= 0) return m;
  const double long_row_bytes = long_rows.bytes_per_call / kRows, long_row_s = long_s / kRows;
  const double short_row_bytes = short_rows.bytes_per_call / short_n, short_row_s = short_s / short_n;
  // Through both points: t = row_s + row_bytes / rate. Noise can make the short rows look as fast
  // or faster per byte: then no fixed part, the long rows' rate.
  const double rate = (long_row_bytes - short_row_bytes) / (long_row_s - short_row_s);
  const double fixed = short_row_s - short_row_bytes / rate;
  if (rate > 0 && fixed > 0) m = MatvecSpeed{rate / 1e9, fixed * 1e9};
  return m;
}

double measure_matvec_call_us(ThreadPool& pool, const MatvecSpeed& q8_0, int64_t bytes) {
  if (q8_0.gbps <= 0) return 0.0;
  constexpr int64_t kSmallRows = 192, kSmallCols = 576;
  Streamed small = make_streamed(DType::Q8_0, kSmallRows, kSmallCols, bytes);
  if (small.copies.empty()) return 0.0;
  const double typical = median_call_seconds(pool, DType::Q8_0, {&small})[0];
  const double accounted = static_cast<double>(kSmallRows) * q8_0.row_ns * 1e-9 + small.bytes_per_call / (q8_0.gbps * 1e9);
  return std::max(0.0, typical - accounted) * 1e6;
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
