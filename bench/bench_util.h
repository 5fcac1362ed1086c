// bench/bench_util.h — what the kernel micro-benchmarks share: their command-line lists, the ISA
// they are told to use, and the summary of many timed calls. Header-only; benchmarks only.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu/isa.h"

namespace strata::bench {

// "1,64,512" -> {1, 64, 512}; entries that are not positive whole numbers are left out.
inline std::vector<int64_t> parse_positive_list(const std::string& list) {
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos < list.size()) {
    const size_t comma = std::min(list.find(',', pos), list.size());
    const long long v = std::atoll(list.substr(pos, comma - pos).c_str());
    if (v > 0) out.push_back(v);
    pos = comma + 1;
  }
  return out;
}

// "a,b,c" -> {"a", "b", "c"} (empty entries kept: the caller says which names it knows).
inline std::vector<std::string> split_commas(const std::string& list) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    const size_t comma = std::min(list.find(',', pos), list.size());
    out.push_back(list.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

// Makes the kernels use the ISA named "best", "scalar", "avx2", "avx512" (without AMX) or "amx"
// (Avx512 with it). The chosen level, or nothing when the name is unknown or this CPU lacks it (a
// figure must not claim an ISA it did not run: kernels::force_isa alone would ignore an
// unsupported one).
inline std::optional<kernels::Isa> use_isa(const char* name) {
  if (std::strcmp(name, "best") == 0) {
    kernels::force_isa(kernels::best_isa());  // AMX as STRATA_ISA says
    return kernels::best_isa();
  }
  if (!kernels::force_isa_by_name(name)) return std::nullopt;
  return kernels::active_isa();
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Seconds per call over many calls. On a shared machine the best call is the one that ran
// undisturbed (what a kernel change is judged by); the mean is what test-backend-ops reports.
struct Timing {
  double best = 0, median = 0, mean = 0;
  size_t calls = 0;
};

inline Timing summarize(std::vector<double> seconds) {
  Timing t;
  if (seconds.empty()) return t;
  std::sort(seconds.begin(), seconds.end());
  double sum = 0;
  for (double s : seconds) sum += s;
  t.best = seconds.front();
  t.median = seconds[seconds.size() / 2];
  t.mean = sum / static_cast<double>(seconds.size());
  t.calls = seconds.size();
  return t;
}

}  // namespace strata::bench
