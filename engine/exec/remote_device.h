// engine/exec/remote_device.h — a device of another rank of an mpirun job, as this rank sees it: its
// identity, memory and speeds (from that rank at start-up, the link set to the measured inter-rank
// link), for the planner, the trace and the devices view. Nothing is allocated or run through it:
// the Pipeline hands the blocks placed on it to its rank (engine/exec/rank_bridge.h).
#pragma once

#include "engine/exec/device.h"

namespace strata::exec {

class RemoteDevice final : public Device {
 public:
  // info.id is the rank-qualified id ("r1:cpu"), info.rank the owning rank.
  explicit RemoteDevice(DeviceInfo info);
  DeviceInfo info() const override;
  bool supports(kernels::DType) const override { return true; }  // the owning rank checks when it places
  bool supports_kv(kernels::DType kv) const override;
  bool host_visible() const override { return false; }
  int remote_rank() const override { return info_.rank; }
  Expected<std::unique_ptr<backend::Ops>> create_ops(const OpsWorkspace&) override;

 protected:
  void* allocate_memory(size_t) override { return nullptr; }  // never used: see the class comment

 private:
  DeviceInfo info_;
};

}  // namespace strata::exec
