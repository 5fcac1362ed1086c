// tests/test_support.h — paths of the shared test models and small helpers for tests.
#pragma once

#include <filesystem>
#include <string>

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

}  // namespace strata::test
