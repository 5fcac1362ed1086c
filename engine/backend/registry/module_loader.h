// engine/backend/registry/module_loader.h — backends that live in shared modules (libstrata-backend-NAME.so),
// opened at start with dlopen, as ggml does with GGML_BACKEND_DL: the engine itself links none of
// their libraries (CUDA's runtime, cuBLAS, NCCL), so one strata-engine starts on any machine and says
// what is missing. A module exports one C function, strata_backend_module_v1 (module_abi.h), that
// checks the engine's ABI tag and returns its Backend.
// Where modules are looked for, in order: $STRATA_BACKEND_PATH (':'-separated folders), the folder
// of the running executable, and the installed module folder relative to it (STRATA_MODULE_DIR,
// "../lib/<multiarch>/strata"). Threads: called once, by the registry.
#pragma once

#include <string>

#include "engine/core/status.h"

namespace strata::backend {

class Backend;

struct ModuleSpec {
  std::string name;   // the --devices prefix: "cuda"
  std::string stem;   // libstrata-backend-<stem>.so
  std::string human;  // for messages: "CUDA"
};

// The module's Backend (owned by the module, alive until the process ends; modules are never
// unloaded). NotCompiled naming what happened: "CUDA module not installed (libstrata-backend-cuda.so
// not in ...)", "CUDA module did not load: libcudart.so.13: cannot open shared object file", or an
// ABI mismatch.
Expected<Backend*> load_backend_module(const ModuleSpec& spec);

}  // namespace strata::backend
