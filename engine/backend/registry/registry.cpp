// engine/backend/registry/registry.cpp — the list of backends and --devices parsing (registry.h).
// A built-in backend is one line in builtin_backends(); a loadable one is one line in
// module_backends() (module_loader.h), found at start as libstrata-backend-NAME.so.
#include "engine/backend/registry/registry.h"

#include <algorithm>
#include <mutex>

#include "engine/backend/cpu/cpu_device.h"
#include "engine/backend/registry/module_loader.h"
#include "engine/backend/sim/sim_device.h"

namespace strata::backend {

namespace {

std::vector<std::unique_ptr<Backend>> builtin_backends() {
  std::vector<std::unique_ptr<Backend>> out;
  out.push_back(make_cpu_backend());
  out.push_back(make_sim_backend());
  return out;
}

// Backends that live in shared modules: the --devices prefix, the module's file name stem and
// what a user reads when it is missing.
std::vector<ModuleSpec> module_backends() {
  return {{"cuda", "cuda", "CUDA"}};
}

struct Registry {
  std::vector<std::unique_ptr<Backend>> owned;  // built-in and missing backends
  std::vector<Backend*> all;                    // every backend, in listing order
};

const Registry& registry() {
  static const Registry r = [] {
    Registry reg;
    for (auto& b : builtin_backends()) {
      reg.all.push_back(b.get());
      reg.owned.push_back(std::move(b));
    }
    for (const ModuleSpec& spec : module_backends()) {
      Expected<Backend*> loaded = load_backend_module(spec);
      if (loaded.ok()) {
        reg.all.push_back(*loaded);
      } else {
        reg.owned.push_back(std::make_unique<MissingBackend>(spec.name, loaded.error().message));
        reg.all.push_back(reg.owned.back().get());
      }
    }
    return reg;
  }();
  return r;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) break;
    start = at + 1;
  }
  return out;
}

}  // namespace

std::span<Backend* const> backends() { return registry().all; }

Backend* find_backend(const std::string& name) {
  for (Backend* b : backends())
    if (b->name() == name) return b;
  return nullptr;
}

Backend* backend_of(const Device& device) { return find_backend(device.info().backend); }

std::string default_devices_spec() {
  std::string spec;
  for (Backend* b : backends())
    if (b->finds_hardware() && b->device_count() > 0) spec += b->name() + ",";
  return spec + "cpu";
}

Expected<std::vector<std::unique_ptr<Device>>> make_devices(const std::string& spec, int cpu_threads,
                                                            const CpuSpeed& cpu_speed) {
  const OpenOptions options{cpu_threads, cpu_speed};
  std::vector<std::unique_ptr<Device>> devices;
  for (const std::string& entry : split(spec.empty() ? "cpu" : spec, ',')) {
    if (entry.empty()) return Error{Code::InvalidArgument, "--devices '" + spec + "' has an empty entry"};
    const std::vector<std::string> fields = split(entry, ':');
    Backend* backend = find_backend(fields[0]);
    if (!backend) {
      std::string known;
      for (Backend* b : backends()) known += (known.empty() ? "" : ", ") + b->name();
      return Error{Code::InvalidArgument, "device '" + entry + "': unknown backend '" + fields[0] + "' (known: " +
                                              known + "; e.g. cpu, cuda, cuda:N, sim:NAME:SIZE[:bw=..:tflops=..:link=..])"};
    }
    STRATA_ASSIGN_OR_RETURN(auto opened, backend->open(fields, options));
    for (auto& d : opened) {
      const bool taken = std::any_of(devices.begin(), devices.end(), [&](const auto& o) { return o->id() == d->id(); });
      if (taken) return Error{Code::InvalidArgument, "device '" + d->id() + "' is listed twice"};
      devices.push_back(std::move(d));
    }
  }
  return devices;
}

}  // namespace strata::backend
