// engine/core/units.cpp — size parsing (units.h).
#include "engine/core/units.h"

#include <cstdio>

#include <cctype>
#include <cmath>

namespace strata {

Expected<uint64_t> parse_bytes(const std::string& text) {
  size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(text, &pos);
  } catch (...) {
    return Error{Code::InvalidArgument, "'" + text + "' is not a size (try 24GiB, 512MiB, 1.5GB)"};
  }
  std::string unit = text.substr(pos);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "kib" || unit == "k") scale = 1024.0;
  else if (unit == "mib" || unit == "m") scale = 1024.0 * 1024;
  else if (unit == "gib" || unit == "g") scale = 1024.0 * 1024 * 1024;
  else if (unit == "tib" || unit == "t") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "kb") scale = 1e3;
  else if (unit == "mb") scale = 1e6;
  else if (unit == "gb") scale = 1e9;
  else if (unit == "tb") scale = 1e12;
  else return Error{Code::InvalidArgument, "'" + text + "': unknown size unit '" + unit + "'"};
  const double bytes = value * scale;
  if (!(bytes > 0) || !std::isfinite(bytes) || bytes > 1e18)
    return Error{Code::InvalidArgument, "size '" + text + "' must be positive and below 1 EB"};
  return static_cast<uint64_t>(bytes);
}

std::string format_capacity(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  size_t u = 0;
  while (v >= 1024.0 && u + 1 < sizeof kUnits / sizeof kUnits[0]) {
    v /= 1024.0;
    ++u;
  }
  char out[32];
  std::snprintf(out, sizeof out, "%.3g %s", v, kUnits[u]);
  return out;
}

}  // namespace strata
