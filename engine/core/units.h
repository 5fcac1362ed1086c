// engine/core/units.h — sizes as users type them ("24GiB", "512MiB", "1.5GB"), read into bytes.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/status.h"

namespace strata {

// "24GiB", "512MiB", "1.5GB", "1000000" -> bytes. InvalidArgument names the text and what is wrong.
Expected<uint64_t> parse_bytes(const std::string& text);

// A capacity for a device's name, in the largest binary unit that keeps it at 1 or more, to three
// significant digits: "32 MiB" (not "0.0312 GiB"), "1 GiB", "1.5 GiB", "24 GiB", "512 B".
std::string format_capacity(uint64_t bytes);

}  // namespace strata
