// engine/exec/pipeline.h — runs a model placed across devices. A stage is a run of consecutive
// blocks on one target (one device, or a tensor-parallel group); each stage has its own thread
// that takes micro-batches in order, runs them on its device workers and hands the hidden
// state to the next stage, so several micro-batches are in different stages at once. A
// micro-batch stacks the tokens of several sequences ([n_total][n_embd]; a decode step: one row
// per sequence), so each weight matrix is read once per step for all of them; attention runs per
// sequence on its own KV and positions. With several stages an eval is spread over up to one
// micro-batch per stage, so the stages still overlap. Every device computes through its backend's Ops table
// (engine/backend/), hidden states cross devices through comm/, and tensor-parallel groups
// all-reduce through the communicator comm/ picks for them (NCCL between GPUs, host otherwise).
// pipeline_build.cpp builds the runtime from a placement (and re-places); pipeline_run.cpp runs it.
// Calling thread: one driver at a time calls eval/apply.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/core/status.h"
#include "engine/backend/device.h"
#include "engine/exec/device_worker.h"
#include "engine/arch/block_forward.h"
#include "engine/exec/placed_weights.h"
#include "engine/exec/rank_bridge.h"
#include "engine/model/model.h"
#include "engine/plan/placement.h"
#include "engine/trace/recorder.h"

namespace strata::exec {

class Pipeline {
 public:
  // devices: every device the placement may name (owned by the caller, outliving the pipeline).
  // recorder: optional; lanes named after the devices are added to it.
  // ranks: the other processes of an mpirun job (null in one process). Devices of other ranks
  // (Device::remote_rank() >= 0) are placed and run there: on rank 0 (the driver) a stage on them
  // is a call to that rank; on the other ranks (workers) only their own devices are built and the
  // driver's calls come in through serve_stage.
  static Expected<std::unique_ptr<Pipeline>> create(const model::Model& model, std::vector<backend::Device*> devices,
                                                    const plan::Placement& placement,
                                                    trace::Recorder* recorder = nullptr, RankBridge* ranks = nullptr);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  struct Request {
    int32_t seq = 0;                    // sequence slot [0, n_seq)
    std::span<const int32_t> tokens;    // appended at the sequence's position
    float* logits = nullptr;            // [n_vocab] <- logits after the last token; may be null
    // true: logits is [tokens.size()][n_vocab] <- the logits after every token (what a speculative
    // step verifies its drafted tokens against). Each row has the bits a one-token eval at that
    // position gives (batch-invariant kernels). Unsupported when the head runs on another rank.
    bool all_logits = false;
    // [tokens.size()][n_embd] <- the final residual stream of every token (after the last block,
    // before the output norm); may be null. Unsupported when the last stage runs on another rank.
    float* hidden = nullptr;
  };
  // Evaluates all requests (distinct sequences) concurrently through the stages. OutOfRange
  // when a sequence would pass n_ctx; InvalidArgument for bad ids. Nothing is evaluated then.
  // Same as wait(submit(requests)).
  Status eval(std::span<const Request> requests);

  // Several evals in flight at once, so that the stages stay busy across decode steps: while
  // one group of sequences is in the last stage (or being sampled by the driver), the next
  // group's step already runs in the first. submit starts an eval and returns at once; wait
  // blocks until it has left the last stage and returns its status. Evals enter the first stage
  // in submit order and keep that order through every stage.
  //   max_micro_batches: how many micro-batches the eval is cut into. 0: up to one per stage
  //   that can overlap (concurrent_stages; a lone eval then overlaps itself across them); 1: one
  //   block of rows, every stage's weights read once for all of them (what a caller keeping one
  //   eval per stage in flight wants: each extra micro-batch reads every stage's weights again).
  // The requests' sequences must not be in an eval in flight (InvalidArgument: a sequence's
  // next tokens need its previous ones in the cache), and their logits buffers must live until
  // wait returns. Positions move when wait returns ok; a failed eval moves none. truncate,
  // copy_sequence and apply need no eval in flight. Calling thread: the one driver.
  Expected<uint64_t> submit(std::span<const Request> requests, int64_t max_micro_batches = 0);
  Status wait(uint64_t eval_id);
  // Evals submitted and not yet waited for.
  int64_t evals_in_flight() const;
  // Stages of the current placement (the embedding and the head may be stages of their own).
  int64_t stage_count() const;
  // How many stages can work at the same moment (plan::concurrent_stage_count: stages sharing a
  // device take turns): 1 for one device or one tensor-parallel group, 2 for a layer split over
  // two devices. How many evals a driver keeps in flight, and how many micro-batches submit cuts
  // a step into by default, to keep every device busy without re-reading weights for nothing.
  int64_t concurrent_stages() const;
  // Whether a Request may ask for all_logits: the head runs in this process (not on another rank
  // of an mpirun job). Drivers take plain steps where it does not.
  bool all_logits_supported() const;

  int64_t position(int32_t seq) const { return positions_[static_cast<size_t>(seq)]; }
  // Forgets positions >= n of a sequence (their keys and values become free to overwrite) and
  // returns the position kept: n (clamped to [0, position]), or 0 where a sliding-window
  // block's ring no longer holds the window before n (kept_prefix). The caller evaluates the
  // sequence again from what is kept.
  int64_t truncate(int32_t seq, int64_t n);
  // What truncate(seq, n) would keep, without changing anything. A ring of R rows for a window
  // of W holds the last R positions written, so n is kept when the sequence has been no further
  // than n + R - W (kv_rewind); without rings (or with Placement::swa_full) always.
  int64_t kept_prefix(int32_t seq, int64_t n) const;
  // Positions a sequence can always be cut back by from the furthest it has been (>= 64, the
  // largest speculative step's rejected guesses fit): the smallest R - W of the rings; INT64_MAX
  // without rings.
  int64_t kv_rewind() const { return kv_rewind_; }
  // Makes sequence dst hold the first n positions of sequence src (keys and values of every
  // block, on every device and shard, copied device-locally), so a prompt two sequences share
  // is evaluated once. dst's position becomes n. InvalidArgument for bad ids, src == dst, n
  // outside [0, position(src)], or n that src's rings no longer hold (kept_prefix(src, n) < n).
  // Calling thread: the driver, with no eval in flight.
  Status copy_sequence(int32_t src, int32_t dst, int64_t n);
  int64_t n_ctx() const { return placement_.n_ctx; }
  int64_t n_seq() const { return placement_.n_seq; }
  const model::Model& model() const { return model_; }
  const plan::Placement& placement() const { return placement_; }

  // What apply() does with the KV cache of the blocks it moves.
  enum class KvOnApply {
    Copy,     // carried to the block's new place: every sequence keeps its position
    Discard,  // dropped (after a lost device, whose memory cannot be read): every position is 0
  };
  // Moves to a new placement. Blocks whose target and KV device are unchanged keep their
  // memory; the others are placed anew (weights from the model's mapped file) and their KV
  // contents copied or discarded. Returns blocks moved. On failure (a block or a device's
  // scratch that does not fit) nothing changes: the pipeline keeps running the old placement,
  // with the same memory on every device, and the error says why.
  Expected<int64_t> apply(const plan::Placement& placement, KvOnApply kv = KvOnApply::Copy);
  // Every device the pipeline may place on (the ones given to create()).
  const std::vector<backend::Device*>& devices() const { return devices_; }
  // Ids of the devices the current placement uses that have failed (Device::failed()).
  std::vector<std::string> failed_devices() const;

  // Worker ranks: runs this rank's part of one stage for a micro-batch sent by the driver
  // (call.hidden in and out, logits of its parts when the stage holds the head, trace events of
  // the call when there is a recorder). Calling thread: the worker's message loop.
  Status serve_stage(StageCall& call);
  // Worker ranks: the driver's position of a sequence (for copy_sequence's bounds).
  void set_position(int32_t seq, int64_t n);

  // The longest wait for one piece of a device's work (a stage's micro-batch, a tensor group
  // member's layer part, a copy back to the host). A device that can be lost
  // (Device::can_be_lost: not the CPU) and does not finish in time is marked failed ("did not
  // answer within ... s") and the eval fails with Device, which the scheduler turns into a
  // re-plan. Backends' own blocking calls give up once their device is failed, so the wait then
  // ends. 0: wait without limit. Default 60 s. Any thread.
  void set_device_timeout(std::chrono::milliseconds timeout) { device_timeout_ms_.store(timeout.count()); }
  std::chrono::milliseconds device_timeout() const { return std::chrono::milliseconds(device_timeout_ms_.load()); }

  // Per device: bytes held, by use (what the planner's estimate is checked against).
  std::map<std::string, backend::MemoryUse> memory_by_device() const;
  // Per device: weight bytes of the blocks by part (attention, FFN part, routed experts), from the
  // buffers placed for each (what plan::DeviceMemory's attention_bytes, ffn_bytes and
  // experts_bytes predict). Devices holding no block part are absent.
  std::map<std::string, PartBytes> part_bytes_by_device() const;
  // Records one memory snapshot per device lane into the recorder (if any).
  void snapshot_memory() const;

 private:
  struct LayerSlot;
  struct DeviceRuntime;
  struct StageRuntime;
  struct MicroBatch;
  struct RuntimeSet;

  Pipeline(const model::Model& model, std::vector<backend::Device*> devices, trace::Recorder* recorder);

  // --- building (pipeline_build.cpp) ---
  Expected<backend::Device*> device(const std::string& id) const;
  Expected<std::unique_ptr<LayerSlot>> build_layer(int64_t index, const plan::LayerPlacement& where);
  Status place_parts(LayerSlot& slot, int64_t index);
  // Device runtimes (ops, scratch, embedding/head copies) and stages for `layers` under `placement`.
  Expected<std::unique_ptr<RuntimeSet>> build_runtimes(const plan::Placement& placement,
                                                       const std::vector<LayerSlot*>& layers);
  // Copies the live KV contents of `from` into `to` (same block index, any devices and shards).
  Status copy_kv(const LayerSlot& from, const LayerSlot& to);
  std::vector<LayerSlot*> layer_list() const;

  // --- running (pipeline_run.cpp) ---
  void start_stages();
  void stop_stages();
  void stage_loop(StageRuntime* stage);
  void run_stage(StageRuntime& stage, MicroBatch& mb);
  Status run_local(StageRuntime& stage, MicroBatch& mb);
  Status run_remote(StageRuntime& stage, MicroBatch& mb, int rank, bool record);
  // Marks failed every device on a rank the link has found lost (`rank`'s with `why`, the others'
  // with "rank R is lost"), so that a re-plan leaves them out. Rank 0's thread.
  void mark_lost_rank_devices(int rank, const std::string& why);
  Status run_single(StageRuntime& stage, MicroBatch& mb);
  Status run_unit(DeviceRuntime& rt, const LayerSlot& slot, const plan::BlockUnit& unit, MicroBatch& mb);
  Status run_group(StageRuntime& stage, MicroBatch& mb);
  KvView kv_view(const LayerSlot& slot, size_t member, int32_t seq) const;
  // The rows, positions and KV views of every sequence of a micro-batch for one layer's member.
  std::vector<SeqRows> seq_rows(const LayerSlot& slot, size_t member, const MicroBatch& mb) const;
  // The head over the last row of every part of mb that wants logits, copied to their hosts.
  Status run_head(DeviceRuntime& rt, MicroBatch& mb, trace::Recorder* rec);
  int32_t lane_of(const backend::Device* d) const;
  int32_t lane_named(const std::string& id) const;
  bool local(const backend::Device* d) const { return d->remote_rank() < 0; }
  // Waits for `done`, work submitted to rt's worker, under the device timeout (see
  // set_device_timeout): Device error (and rt's device marked failed) when it ran out.
  Status await_work(DeviceRuntime& rt, std::future<void>& done);

  const model::Model& model_;
  std::vector<backend::Device*> devices_;
  trace::Recorder* recorder_;
  RankBridge* ranks_ = nullptr;  // null: one process
  plan::Placement placement_;

  std::vector<std::unique_ptr<LayerSlot>> layers_;
  std::unique_ptr<RuntimeSet> runtime_;  // device runtimes and stages of the current placement
  std::vector<int64_t> positions_;  // per sequence
  // Per sequence: the furthest position + 1 it has been written to since it was last emptied
  // (truncate to 0). A ring's rows hold the latest positions written to them, so this decides
  // how far back the sequence can be cut (kept_prefix).
  std::vector<int64_t> written_;
  int64_t kv_rewind_ = INT64_MAX;  // kv_rewind(): set by create() from the layers' rings
  std::atomic<int64_t> device_timeout_ms_{60000};

  // Evals in flight (submit .. wait): their micro-batches, and how many have left the last
  // stage (counted by the last stage's thread under done_mutex_).
  struct InFlight;
  mutable std::mutex done_mutex_;
  std::condition_variable done_cv_;
  std::map<uint64_t, std::unique_ptr<InFlight>> in_flight_;
  uint64_t next_eval_id_ = 1;
  std::vector<bool> seq_in_flight_;  // per sequence; the driver's
};

}  // namespace strata::exec
