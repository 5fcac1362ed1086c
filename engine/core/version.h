// engine/core/version.h — Strata's version, from the CMake project version (one source of truth for
// `strata-engine --version`, the API's status and the GUI's About box). Depends on nothing.
#pragma once

namespace strata {

// "MAJOR.MINOR.PATCH", e.g. "0.1.0".
const char* version();

}  // namespace strata
