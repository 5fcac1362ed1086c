// engine/core/units.h — sizes as users type them ("24GiB", "512MiB", "1.5GB"), read into bytes.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/status.h"

namespace strata {

// "24GiB", "512MiB", "1.5GB", "1000000" -> bytes. InvalidArgument names the text and what is wrong.
Expected<uint64_t> parse_bytes(const std::string& text);

}  // namespace strata
