// engine/backend/sim/sim_device.h — a simulated accelerator and the "sim" backend: it runs the CPU
// ops on host cores with a declared capacity and speed, never finishes an op or a transfer faster
// than those allow (sim_ops.h), acts out faults on purpose (SimFaults), and says everywhere that it
// is simulated. It makes every split, transfer and fault path testable without a GPU.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "engine/backend/device.h"

namespace strata::backend {

class Backend;

// A simulated accelerator: runs the CPU ops on host cores with a declared capacity and speed,
// never finishes an op or a transfer faster than those allow (it waits out the difference, see
// engine/backend/sim/), and says everywhere that it is simulated.
struct SimulatedSpec {
  std::string id;                 // "gpu0"
  uint64_t capacity_bytes = 0;
  double bandwidth_gbps = 900;
  double tflops = 80;
  double link_gbps = 25;
  double link_latency_us = 10;
  uint64_t runtime_overhead_bytes = 0;
  int threads = 1;
};

// Faults a simulated device acts out on purpose (spec options and POST .../devices/ID/fault), so
// that losing a device, running out of its memory and straggling can be tested without hardware.
struct SimFaults {
  int64_t fail_after_ops = -1;   // lost when this many more ops have started (-1: never)
  double fail_at_s = -1;         // lost this many seconds after the fault is set (-1: never)
  int64_t oom_after_bytes = -1;  // allocations fail once this many more bytes would be held (-1: never)
  double slow = 1;               // every op and transfer takes this factor of its declared time (>= 1)
  // Hung: when this many more ops have started, the next one never finishes: it blocks until
  // the engine gives the device up (its device timeout), then fails as lost (-1: never).
  int64_t hang_after_ops = -1;
  // Full: when this many more ops have started, every later op fails with OutOfMemory, as a GPU
  // whose lazily grown scratch (the CUDA backend's staging and workspaces) no longer fits because
  // something else took its memory. The device is full, not lost (-1: never).
  int64_t oom_after_ops = -1;
};

class SimulatedDevice final : public HostDevice {
 public:
  explicit SimulatedDevice(SimulatedSpec spec);
  DeviceInfo info() const override;
  Expected<std::unique_ptr<Ops>> create_ops(const OpsWorkspace& workspace) override;
  // Transfers in and out wait out the declared link time (latency + bytes / link bandwidth).
  Status copy_from_host(const Copy2D& copy) override;
  Status copy_to_host(const Copy2D& copy) override;
  const SimulatedSpec& spec() const { return spec_; }

  // Arms faults (replacing armed ones; slow applies at once). Any thread.
  void inject(const SimFaults& faults);
  // Called before each op and transfer: Device error once the device is lost (marking it failed
  // when an armed fault fires now). Calling thread: the device's worker or a copy's caller.
  Status check_alive();
  // Factor on declared op and transfer times (1 unless a slow fault is armed).
  double slow_factor() const { return slow_.load(std::memory_order_relaxed); }

 protected:
  void on_failed() override;

 private:
  SimulatedSpec spec_;
  std::atomic<int64_t> hang_left_{-1};      // -1: no hang fault
  std::atomic<int64_t> oom_ops_left_{-1};   // -1: no oom_after_ops fault
  std::atomic<bool> full_{false};           // the oom_after_ops fault fired
  std::mutex hang_mutex_;                   // with hang_cv_: a hung op waits for failed()
  std::condition_variable hang_cv_;
  std::atomic<int64_t> ops_left_{-1};       // -1: no fail_after fault
  std::atomic<int64_t> fail_at_ns_{-1};     // steady-clock ns; -1: no fail_at fault
  std::atomic<double> slow_{1.0};
};

// The "sim" backend: entries "sim:NAME:SIZE[:bw=..:tflops=..:link=..:latency=..:threads=..:overhead=..]"
// plus the fault options of SimFaults (fail_after, fail_at, hang_after, oom_after, oom_after_ops, slow).
std::unique_ptr<Backend> make_sim_backend();

}  // namespace strata::backend
