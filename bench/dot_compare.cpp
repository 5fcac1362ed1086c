// bench/dot_compare.cpp — Strata's one-token dots against llama.cpp's on the same bytes.
//
//   dot_compare LIBGGML_CPU TYPE [ROWS [COLS [REPS]]]
//
// LIBGGML_CPU is a llama.cpp build's libggml-cpu.so (opened at run time: nothing of llama.cpp is
// built into Strata). TYPE is a quantized weight type (q8_0, q4_0, q4_1, q5_0, q5_1, q2_k-q6_k),
// whose block layouts and activation types (Q8_0, Q8_1, Q8_K) the two projects share byte for
// byte. One W (ROWS x COLS, default 256 x 4096: in L2) and one activation row are quantized by
// Strata; each repetition times Strata's product (its decode rows where the type has them, as
// matmul runs decode, else one row at a time), then ggml's ggml_vec_dot_<type>_<act> row by row,
// single-threaded, alternating so that both see the same machine. Prints best / median / mean ms
// per product for each (bench::summarize), and the largest difference of the two outputs relative
// to the largest output (the layouts agree when it is at float rounding). This isolates the dot
// kernels from the two projects' matmul drivers and thread pools; test-backend-ops (the `table`
// section of run_benchmarks.sh) measures whole products.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "kernels/cpu/dtype.h"
#include "kernels/cpu/quant.h"
#include "kernels/cpu/type_kernels.h"

using namespace strata::kernels;

namespace {

// ggml's vec_dot signature: s[0] = dot(vx, vy) of n elements (nrc = 1: one row).
using GgmlDot = void (*)(int n, float* s, size_t bs, const void* vx, size_t bx, const void* vy, size_t by, int nrc);

std::string ggml_symbol(DType t) {
  std::string w = dtype_name(t), a = dtype_name(vec_dot_type(t));
  // ggml spells the K-quants with a capital K: q4_K_q8_K.
  for (std::string* s : {&w, &a})
    if (s->size() == 4 && (*s)[3] == 'k') (*s)[3] = 'K';
  return "ggml_vec_dot_" + w + "_" + a;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: dot_compare LIBGGML_CPU TYPE [ROWS [COLS [REPS]]]\n");
    return 2;
  }
  const auto type = dtype_from_name(argv[2]);
  const DType kTypes[] = {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                          DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K};
  if (!type || std::find(std::begin(kTypes), std::end(kTypes), *type) == std::end(kTypes)) {
    std::fprintf(stderr, "dot_compare: %s is not a quantized weight type\n", argv[2]);
    return 2;
  }
  const DType wt = *type, at = vec_dot_type(wt);
  const int64_t rows = argc > 3 ? std::atoll(argv[3]) : 256, cols = argc > 4 ? std::atoll(argv[4]) : 4096;
  const int reps = argc > 5 ? std::atoi(argv[5]) : 2000;
  if (rows <= 0 || rows % kDecodeRows != 0 || cols <= 0 || cols % traits(wt).block_elems != 0 || reps <= 0) {
    std::fprintf(stderr, "dot_compare: ROWS must be a positive multiple of %d, COLS of %lld\n", kDecodeRows,
                 static_cast<long long>(traits(wt).block_elems));
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "dot_compare: %s\n", dlerror());
    return 1;
  }
  const std::string sym = ggml_symbol(wt);
  const auto ggml_dot = reinterpret_cast<GgmlDot>(dlsym(lib, sym.c_str()));
  const auto ggml_init = reinterpret_cast<void (*)()>(dlsym(lib, "ggml_cpu_init"));
  if (!ggml_dot || !ggml_init) {
    std::fprintf(stderr, "dot_compare: %s has no %s / ggml_cpu_init\n", argv[1], sym.c_str());
    return 1;
  }
  ggml_init();  // its fp16 tables

  const Isa isa = best_isa();
  const TypeKernels& wk = best_type_kernels(wt, isa);
  const TypeKernels& ak = best_type_kernels(at, isa);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.f, 1.f);
  const int64_t wrb = row_bytes(wt, cols);
  std::vector<float> row(static_cast<size_t>(cols));
  std::vector<uint8_t> w(static_cast<size_t>(wrb * rows)), a(static_cast<size_t>(row_bytes(at, cols)));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& f : row) f = normal(rng);
    wk.quantize_row(row.data(), w.data() + r * wrb, cols);
  }
  for (float& f : row) f = normal(rng);
  ak.quantize_row(row.data(), a.data(), cols);

  std::vector<float> ours(static_cast<size_t>(rows)), theirs(static_cast<size_t>(rows));
  std::vector<double> t_ours, t_theirs;
  for (int rep = 0; rep < reps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    if (wk.vec_dot_rows) {
      for (int64_t r = 0; r < rows; r += kDecodeRows) wk.vec_dot_rows(cols, w.data() + r * wrb, wrb, a.data(), &ours[r]);
    } else {
      for (int64_t r = 0; r < rows; ++r) wk.vec_dot(cols, w.data() + r * wrb, a.data(), &ours[r]);
    }
    t_ours.push_back(strata::bench::seconds_since(t0));
    const auto t1 = std::chrono::steady_clock::now();
    for (int64_t r = 0; r < rows; ++r) ggml_dot(static_cast<int>(cols), &theirs[r], 0, w.data() + r * wrb, 0, a.data(), 0, 1);
    t_theirs.push_back(strata::bench::seconds_since(t1));
  }
  double diff = 0, mag = 0;
  for (int64_t r = 0; r < rows; ++r) {
    diff = std::max(diff, static_cast<double>(std::fabs(ours[r] - theirs[r])));
    mag = std::max(mag, static_cast<double>(std::fabs(theirs[r])));
  }
  const strata::bench::Timing s = strata::bench::summarize(t_ours), g = strata::bench::summarize(t_theirs);
  std::printf("%-5s W %lld x %lld, 1 thread, %d reps: strata (%s %s) best %.4f median %.4f mean %.4f ms | "
              "ggml %s best %.4f median %.4f mean %.4f ms | best ratio %.2f | max diff / max |out| %.1e\n",
              dtype_name(wt), static_cast<long long>(rows), static_cast<long long>(cols), reps, isa_name(isa),
              wk.vec_dot_rows ? "decode rows" : "vec_dot", 1e3 * s.best, 1e3 * s.median, 1e3 * s.mean, sym.c_str(),
              1e3 * g.best, 1e3 * g.median, 1e3 * g.mean, g.best / s.best, mag > 0 ? diff / mag : 0.0);
  return 0;
}
