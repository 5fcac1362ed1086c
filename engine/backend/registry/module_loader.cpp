// engine/backend/registry/module_loader.cpp — dlopen of backend modules (module_loader.h).
#include "engine/backend/registry/module_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include "engine/backend/module_abi.h"

namespace strata::backend {

namespace {

std::filesystem::path executable_folder() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

std::vector<std::filesystem::path> module_folders() {
  std::vector<std::filesystem::path> out;
  if (const char* env = std::getenv("STRATA_BACKEND_PATH")) {
    std::string list = env;
    size_t start = 0;
    while (start <= list.size()) {
      const size_t at = list.find(':', start);
      const std::string dir = list.substr(start, at == std::string::npos ? std::string::npos : at - start);
      if (!dir.empty()) out.emplace_back(dir);
      if (at == std::string::npos) break;
      start = at + 1;
    }
  }
  const std::filesystem::path exe = executable_folder();
  if (!exe.empty()) {
    out.push_back(exe);
#ifdef STRATA_MODULE_DIR
    out.push_back((exe / STRATA_MODULE_DIR).lexically_normal());
#endif
  }
  return out;
}

}  // namespace

Expected<Backend*> load_backend_module(const ModuleSpec& spec) {
  const std::string file = "libstrata-backend-" + spec.stem + ".so";
  std::string searched;
  for (const std::filesystem::path& dir : module_folders()) {
    const std::filesystem::path path = dir / file;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      searched += (searched.empty() ? "" : ", ") + dir.string();
      continue;
    }
    // RTLD_LOCAL: the module's own copies of the engine's base code stay private to it (it exports
    // only its entry); RTLD_NOW: a missing library (libcudart) fails here, not at a later call.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = dlerror();
      return Error{Code::NotCompiled, spec.human + " module did not load: " + (why ? why : path.string())};
    }
    auto entry = reinterpret_cast<ModuleEntry>(dlsym(handle, STRATA_BACKEND_MODULE_ENTRY));
    if (!entry) return Error{Code::NotCompiled, spec.human + " module " + path.string() + " has no " + STRATA_BACKEND_MODULE_ENTRY};
    const char* module_abi = "";
    Backend* backend = entry(backend_abi_tag().c_str(), &module_abi);
    if (!backend)
      return Error{Code::NotCompiled, spec.human + " module " + path.string() + " is from another build (" +
                                          (module_abi ? module_abi : "?") + "; this engine: " + backend_abi_tag() + ")"};
    return backend;
  }
  return Error{Code::NotCompiled, spec.human + " module not installed (" + file + " is not in " +
                                      (searched.empty() ? std::string("any module folder") : searched) + ")"};
}

}  // namespace strata::backend
