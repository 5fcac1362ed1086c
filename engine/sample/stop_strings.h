// engine/sample/stop_strings.h — finds stop strings in streamed text without ever emitting a
// byte that later turns out to belong to a stop string. Pure string logic.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace strata::sample {

class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops);

  // Appends text; returns the part that is safe to emit now. After a match, stopped() is true
  // and nothing at or after the stop string is ever returned.
  std::string push(std::string_view text);
  // At the end of generation: whatever was held back (nothing if stopped).
  std::string flush();
  bool stopped() const { return stopped_; }
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;  // held back: could be the start of a stop string
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace strata::sample
