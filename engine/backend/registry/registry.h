// engine/backend/registry/registry.h — the backends this process has (backend.h), and the --devices list
// turned into devices. The built-in ones are listed in registry.cpp (one line each); loadable ones
// are shared modules (libstrata-backend-NAME.so, module_loader.h) found at start, so one
// strata-engine runs with and without, say, the CUDA libraries.
// Threads: the registry is built once, on first use, thread-safely; Backend calls are thread-safe.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/device.h"
#include "engine/core/status.h"

namespace strata::backend {

// Every backend of this process: the built-in ones, then the modules (loaded or missing).
std::span<Backend* const> backends();
// The backend with this --devices prefix, or null.
Backend* find_backend(const std::string& name);
// The backend that opened a device (by its info().backend), or null.
Backend* backend_of(const Device& device);

// Parses "cpu,cuda,cuda:1,sim:gpu0:24GiB,sim:gpu1:12GiB:bw=900GB/s" into devices, each entry opened
// by the backend its prefix names. Errors name the entry; device ids must be unique.
Expected<std::vector<std::unique_ptr<Device>>> make_devices(const std::string& spec, int cpu_threads,
                                                            const CpuSpeed& cpu_speed);
// The default device list: every device of the backends that find hardware, then the CPU
// ("cuda,cpu" or "cpu").
std::string default_devices_spec();

}  // namespace strata::backend
