// tests/test_support.h — paths of the shared test models and small helpers for tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

namespace strata::test {

inline std::filesystem::path shared_models() { return std::filesystem::path(STRATA_SHARED_MODELS_DIR); }
inline std::filesystem::path shared_model(const std::string& name) { return shared_models() / name; }
inline bool have(const std::filesystem::path& p) { return std::filesystem::exists(p); }

// Where setup (tools/fetch_models.sh) puts the real chat models (SmolLM2-135M-Instruct Q4_1, Gemma
// 3 270M Q4_K_M); it guarantees them, so a test that finds one missing fails instead of skipping.
inline std::filesystem::path real_models() {
  if (const char* home = std::getenv("STRATA_MODEL_HOME")) return home;
  if (const char* data = std::getenv("XDG_DATA_HOME")) return std::filesystem::path(data) / "strata" / "models";
  const char* h = std::getenv("HOME");
  return std::filesystem::path(h ? h : "/") / ".local" / "share" / "strata" / "models";
}

// The folders temp_dir() made, removed with everything in them when the test process exits
// normally: CTest runs every test case in a process of its own, and models written there are
// 1-100 MB each, so a kept folder per case filled /tmp by gigabytes a suite run. Set
// STRATA_KEEP_TEST_DIRS=1 to keep them for a look after a failure. Only the process that made a
// folder removes it (a forked child leaves through _exit, which skips this destructor anyway).
class TempDirRegistry {
 public:
  ~TempDirRegistry() {
    if (std::getenv("STRATA_KEEP_TEST_DIRS") != nullptr || owner_ != ::getpid()) return;
    for (const auto& dir : dirs_) {
      std::error_code ignored;  // a folder already gone, or busy: nothing a test can do about it
      std::filesystem::remove_all(dir, ignored);
    }
  }
  void add(const std::filesystem::path& dir) {
    std::lock_guard lock(mutex_);
    if (std::find(dirs_.begin(), dirs_.end(), dir) == dirs_.end()) dirs_.push_back(dir);
  }

 private:
  std::mutex mutex_;
  std::vector<std::filesystem::path> dirs_;
  pid_t owner_ = ::getpid();
};

inline TempDirRegistry& temp_dir_registry() {
  static TempDirRegistry registry;
  return registry;
}

// A fresh folder under the system temp dir, unique per test process, removed when it exits.
inline std::filesystem::path temp_dir(const std::string& tag) {
  auto dir = std::filesystem::temp_directory_path() / ("strata-test-" + tag + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  temp_dir_registry().add(dir);
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

// max |l|.
inline double max_abs(const std::vector<float>& l) {
  double m = 0;
  for (float v : l) m = std::max(m, std::fabs(static_cast<double>(v)));
  return m;
}

// The gap between the largest and the second largest value (logits: how near a tie the argmax is).
inline double top2_margin(const std::vector<float>& l) {
  float first = -INFINITY, second = -INFINITY;
  for (float v : l) {
    if (v > first) {
      second = first;
      first = v;
    } else if (v > second) {
      second = v;
    }
  }
  return static_cast<double>(first) - second;
}

}  // namespace strata::test
