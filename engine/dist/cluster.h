// engine/dist/cluster.h — the ranks of an mpirun job working as one engine. Rank 0 (the driver) runs
// the command (serve, run, bench), the scheduler and the sampler; every other rank (a worker) owns
// its local devices, maps the model file itself and answers the driver's calls: place a placement,
// run its part of a stage for one micro-batch (taking its input from, or sending its output straight
// to, another worker when the driver says so), copy a sequence, stop. At start-up every rank tells
// the driver its host and devices, and the driver measures the link to each with ping-pong
// (latency, bandwidth, clock offset: the cost model and the trace merge use them).
// Threads: the driver calls the RankBridge functions from its pipeline's threads; serve() runs on
// the worker's main thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/dist/rank_link.h"
#include "engine/core/device_info.h"
#include "engine/backend/device.h"
#include "engine/exec/rank_bridge.h"
#include "engine/dist/remote_device.h"
#include "engine/model/model.h"

namespace strata::dist {

class WireReader;

struct RankSummary {
  int rank = 0;
  std::string host;
  LinkMeasure link;  // to rank 0 (zero for rank 0 itself)
  std::vector<DeviceInfo> devices;
};

class Cluster final : public exec::RankBridge {
 public:
  // Collective: every rank calls it once with its own devices' infos (ids already "rN:..."). The
  // driver gathers every rank's host and devices and measures each link; the workers get the table.
  static Expected<std::unique_ptr<Cluster>> connect(RankLink& link, std::vector<DeviceInfo> local);
  ~Cluster() override;

  const std::vector<RankSummary>& ranks() const { return ranks_; }
  // Every device of every rank, in rank order, the link of other ranks' devices set to the
  // measured inter-rank link where that is slower.
  std::vector<DeviceInfo> all_devices() const;
  // Stand-ins for the devices of the other ranks (RemoteDevice). On the driver their memory
  // figures follow the ranks' reports: every answer to a placement carries the rank's devices'
  // memory as it is after placing (or after going back), so /devices and /status show it.
  std::vector<std::unique_ptr<backend::Device>> remote_devices() const;

  // Worker: answers the driver until it says stop (Ok) or is lost (Device error). model: loads the
  // model on the first placement (each rank maps the file itself). devices: this rank's devices
  // and the stand-ins of the others (what the driver's placement may name). crash_after_calls >= 0
  // (fault injection, for tests of a lost rank): returns Cancelled instead of answering stage call
  // number crash_after_calls + 1, leaving the driver waiting; the caller then ends the process.
  Status serve(const std::function<Expected<const model::Model*>()>& model, const std::vector<backend::Device*>& devices,
               int64_t crash_after_calls = -1);
  // Driver: tells every live worker to stop (their serve() returns). Idempotent.
  void stop_workers();

  // RankBridge (the driver's side, except group_communicator which every member rank uses).
  int rank() const override { return link_.rank(); }
  Status begin_place(const plan::Placement& placement, bool fresh, bool discard_kv) override;
  Status end_place(const plan::Placement* revert_to, bool local_failed) override;
  Status run_stage(int rank, exec::StageCall& call) override;
  int next_transfer_tag() override { return next_reply_tag(); }
  Status copy_sequence(int32_t src, int32_t dst, int64_t n) override;
  Expected<std::unique_ptr<backend::Communicator>> group_communicator(const std::vector<backend::Device*>& members,
                                                                   const std::vector<int>& ranks, int tag) override;
  bool rank_lost(int rank) const override { return link_.lost(rank); }

  // Driver: whether the workers trace (set before the first placement; they record their spans
  // and send them back with each stage call).
  void set_tracing(bool on) { tracing_ = on; }

 private:
  explicit Cluster(RankLink& link) : link_(link) {}
  int next_reply_tag();
  Status request(int rank, const std::vector<uint8_t>& message);
  Expected<dist::RankMessage> reply(int rank, int tag);
  // Driver: reads a placement answer's memory report (after its status) into memory_.
  Status take_memory_report(dist::WireReader& r, int rank);

  RankLink& link_;
  std::vector<RankSummary> ranks_;
  std::shared_ptr<RemoteMemory> memory_ = std::make_shared<RemoteMemory>();  // other ranks' reports
  std::atomic<int> reply_counter_{0};
  bool tracing_ = false;
  bool stopped_ = false;
  std::vector<std::pair<int, int>> pending_place_;  // (rank, reply tag) of a begin_place
  std::vector<uint8_t> pending_place_message_;
};

// Driver: tells every live worker to stop, for a driver that never made a Cluster (a command
// that places nothing). Rank 0 only; does nothing elsewhere.
void stop_rank_workers(RankLink& link);

// The part of a --devices list for one rank of an mpirun job: entries "rN:REST" belong to rank N
// ("r1:cpu", "r1:cuda:0", "r0:sim:gpu0:8GiB"). Empty spec: every rank its default devices. An entry
// without a rank prefix is an error naming it. Returns the rank's entries without their prefix
// ("" when the rank has none).
Expected<std::string> rank_devices_spec(const std::string& spec, int rank, int size);

}  // namespace strata::dist
