// engine/dist/remote_device.h — a device of another rank of an mpirun job, as this rank sees it: its
// identity, memory and speeds (from that rank at start-up, the link set to the measured inter-rank
// link), for the planner, the trace and the devices view. Nothing is allocated or run through it:
// the Pipeline hands the blocks placed on it to its rank (engine/exec/rank_bridge.h).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/backend/device.h"

namespace strata::dist {

// The latest memory figures of other ranks' devices, by rank-qualified id, as those ranks reported
// them (each answer to a placement carries them: dist::Cluster writes here). Thread-safe.
class RemoteMemory {
 public:
  struct Figures {
    backend::MemoryUse use;             // bytes held, by use
    uint64_t bytes_free = 0;   // as the device's info() reports it there
    uint64_t bytes_total = 0;
  };
  void set(const std::string& id, const Figures& figures);
  std::optional<Figures> get(const std::string& id) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, Figures> by_id_;
};

class RemoteDevice final : public backend::Device {
 public:
  // info.id is the rank-qualified id ("r1:cpu"), info.rank the owning rank. Its caps are the owning
  // device's (info.caps: its KV types, its collective), but for weight types (the owning rank
  // checks when it places) and host memory (its buffers live in another process). memory: where the
  // owning rank's reports land (null: the figures of `info` stay, from start-up).
  explicit RemoteDevice(DeviceInfo info, std::shared_ptr<const RemoteMemory> memory = nullptr);
  // Memory figures: the owning rank's latest report, else start-up's.
  DeviceInfo info() const override;
  backend::MemoryUse memory_use() const override;
  uint64_t bytes_free() const override;
  int remote_rank() const override { return info_.rank; }
  Expected<std::unique_ptr<backend::Ops>> create_ops(const backend::OpsWorkspace&) override;

 protected:
  void* allocate_memory(size_t) override { return nullptr; }  // never used: see the class comment

 private:
  DeviceInfo info_;
  std::shared_ptr<const RemoteMemory> memory_;
};

}  // namespace strata::dist
