// engine/backend/module_abi.h — the one symbol a backend module exports, and the tag both sides
// compare so that a module from another build is refused instead of crashing: modules share the
// engine's C++ types (Backend, Device, Ops), so they must come from the same version and compiler.
#pragma once

#include <string>

#include "engine/core/version.h"

#define STRATA_BACKEND_MODULE_ENTRY "strata_backend_module_v1"

namespace strata::backend {

class Backend;

// Returns the module's Backend when engine_abi equals the module's own tag, else null (and
// *module_abi is set to the module's tag for the error text). Called once.
using ModuleEntry = Backend* (*)(const char* engine_abi, const char** module_abi);

// Raised whenever Backend, Device, Ops or Communicator change shape.
inline constexpr int kBackendInterfaceRevision = 1;

// "strata 0.1.0, interface 1, g++ 12.2.0": what must match between engine and module. Each side
// computes it from its own build (version() comes from its own copy of core/version.cpp).
inline const std::string& backend_abi_tag() {
  static const std::string tag = std::string("strata ") + version() + ", interface " +
                                 std::to_string(kBackendInterfaceRevision) + ", compiler " + __VERSION__;
  return tag;
}

}  // namespace strata::backend
