// tests/test_support.h — paths of the shared test models and small helpers for tests.
#pragma once

#include <filesystem>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <unistd.h>

namespace strata::test {

inline std::filesystem::path shared_models() { return std::filesystem::path(STRATA_SHARED_MODELS_DIR); }
inline std::filesystem::path shared_model(const std::string& name) { return shared_models() / name; }
inline bool have(const std::filesystem::path& p) { return std::filesystem::exists(p); }

// A fresh folder under the system temp dir, unique per test process.
inline std::filesystem::path temp_dir(const std::string& tag) {
  auto dir = std::filesystem::temp_directory_path() / ("strata-test-" + tag + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

// max |a - b| / max |b| over two equally long vectors; infinity if a has a NaN or infinity.
inline double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return a.size() == b.size() ? diff / scale : INFINITY;
}

}  // namespace strata::test
