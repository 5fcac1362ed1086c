// engine/core/version.cpp — STRATA_VERSION is set on this file alone by engine/CMakeLists.txt from
// PROJECT_VERSION, so a version bump recompiles one file.
#include "engine/core/version.h"

namespace strata {

const char* version() { return STRATA_VERSION; }

}  // namespace strata
