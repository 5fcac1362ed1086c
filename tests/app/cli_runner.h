// tests/app/cli_runner.h — runs the strata-engine binary as a user would and captures its exit
// code, stdout and stderr; shared by the CLI tests.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.h"

namespace strata::test {

namespace fs = std::filesystem;

struct CliRun {
  int exit_code = -1;  // -1: killed by a signal (a crash) or timed out
  std::string out, err;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// env: VAR=value assignments for the engine's environment (shell words, e.g. "STRATA_ISA=avx2").
inline CliRun engine(const std::vector<std::string>& args, const std::string& env = "") {
  static const fs::path dir = test::temp_dir("cli");
  std::string cmd = "timeout 120 " + quote(STRATA_ENGINE_BINARY);
  for (const auto& a : args) cmd += " " + quote(a);
  // Keep the user's "last model" record out of the tests.
  cmd = "XDG_CONFIG_HOME=" + quote((dir / "config").string()) + " " + env + " " + cmd + " >" + quote((dir / "out").string()) +
        " 2>" + quote((dir / "err").string()) + " </dev/null";
  const int status = std::system(cmd.c_str());
  CliRun r;
  if (WIFEXITED(status) && WEXITSTATUS(status) != 124) r.exit_code = WEXITSTATUS(status);
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  return r;
}


inline void expect_one_line_error(const CliRun& r, const std::string& word) {
  EXPECT_GT(r.exit_code, 0) << "crash or hang (signal/timeout) or success; stderr: " << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
  EXPECT_NE(r.err.find(word), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

}  // namespace strata::test
