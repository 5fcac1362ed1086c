// engine/backend/backend.h — a backend: one kind of device, in its own folder (backend/cpu,
// backend/sim, backend/cuda). It names its --devices prefix, says whether it is usable here and why
// not, opens the devices of an entry, and (optionally) runs a collective between its own devices.
// The registry (registry.h) lists them. What a device can do is data (DeviceCaps), so nothing outside
// a backend's folder tests which backend a device belongs to.
// Threads: every call is thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/backend/communicator.h"
#include "engine/backend/device.h"
#include "engine/core/status.h"

namespace strata::backend {

// What opening an entry needs besides its fields: the CPU's threads and measured speed, for the
// "cpu" entry.
struct OpenOptions {
  int cpu_threads = 1;
  CpuSpeed cpu_speed;
};

// One process's part of a collective over the devices of several processes (the ranks of an
// mpirun job holding a tensor group whose members all belong to one backend with a collective).
struct RankCollectivePart {
  std::vector<uint8_t> unique_id;  // from Backend::collective_unique_id() on the group's lowest rank
  int n_members = 0;               // devices in the whole group
  std::vector<int> member_index;   // per local device: its index among the group's members
  // Asked while waiting (initialization, an all-reduce, the end): a non-empty reason when a process
  // of the group is lost. The collective is then aborted and the call fails with that reason
  // instead of waiting for a peer that will never come. Called on the waiting thread.
  std::function<std::string()> lost_peer;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // The --devices prefix and the name in device lists: "cpu", "sim", "cuda".
  virtual std::string name() const = 0;
  // Human, for `devices` and the API: "CUDA runtime 13.0, driver 13.0, NCCL 2.28.3", or why it
  // cannot run here ("no CUDA driver", "CUDA module not installed").
  virtual std::string describe() const = 0;
  // Devices a bare entry ("cuda") opens; 0 when the backend cannot run here.
  virtual int device_count() const = 0;
  // Whether it finds devices of its own on this machine (GPUs), as opposed to the CPU itself or
  // devices declared on the command line (sim). Those found come first in the default device list
  // (no --devices), and `devices` says what each such backend found or why none.
  virtual bool finds_hardware() const { return false; }
  // False for a backend that is not in this process (MissingBackend).
  virtual bool present() const { return true; }
  // Opens the devices of one --devices entry, split at ':' (fields[0] == name()). Errors name the
  // entry; NotFound when a device is not there, NotCompiled when the backend is not in this build.
  virtual Expected<std::vector<std::unique_ptr<Device>>> open(std::span<const std::string> fields,
                                                              const OpenOptions& options) = 0;
  // Every device a bare entry would open, each opened or described as failed, for `devices`
  // without --devices (so that one broken GPU is listed with its reason, not an error for all).
  virtual void probe(std::vector<std::unique_ptr<Device>>& opened, std::vector<DeviceInfo>& failed,
                     const OpenOptions& options) {}
  // The all-reduce between devices of this backend (their caps().collective names it):
  // Unsupported by default (the host reduces).
  virtual Expected<std::unique_ptr<Communicator>> make_communicator(const std::vector<Device*>& members);
  // Several processes: a new id that every process of one collective group joins with, made by
  // the group's lowest rank and sent to the others. Unsupported by default.
  virtual Expected<std::vector<uint8_t>> collective_unique_id();
  // This process's part of a collective spanning processes (members: local devices, in member order).
  virtual Expected<std::unique_ptr<Communicator>> make_rank_communicator(const std::vector<Device*>& local,
                                                                         RankCollectivePart part);
};

// A backend that is not in this process: a known module that is not installed or does not load.
// Reports zero devices, says why, and refuses to open with that reason (NotCompiled), like
// candle's dummy CUDA backend.
class MissingBackend final : public Backend {
 public:
  MissingBackend(std::string name, std::string why) : name_(std::move(name)), why_(std::move(why)) {}
  std::string name() const override { return name_; }
  std::string describe() const override { return why_; }
  int device_count() const override { return 0; }
  bool finds_hardware() const override { return true; }
  bool present() const override { return false; }
  Expected<std::vector<std::unique_ptr<Device>>> open(std::span<const std::string> fields,
                                                      const OpenOptions& options) override;

 private:
  std::string name_, why_;
};

// An entry's fields joined back with ':' ("sim:gpu0:24GiB"), for error texts.
std::string join_fields(std::span<const std::string> fields);

}  // namespace strata::backend
