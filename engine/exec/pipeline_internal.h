// engine/exec/pipeline_internal.h — the runtime state of a Pipeline, shared by its two halves
// (pipeline_build.cpp builds it from a placement, pipeline_run.cpp runs micro-batches through it).
// Private to those two files.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/backend/ops.h"
#include "engine/comm/communicator.h"
#include "engine/arch/block_forward.h"
#include "engine/exec/scratch_views.h"
#include "engine/plan/scratch_layout.h"
#include "engine/exec/device_worker.h"
#include "engine/exec/pipeline.h"

namespace strata::exec {

struct Pipeline::LayerSlot {
  plan::LayerPlacement where;
  std::vector<backend::Device*> members;
  std::vector<plan::LayerShard> shards;
  std::vector<ShardWeights> weights;
  BufferList weight_buffers;
  // KV: shared_kv -> one buffer on the KV device with the whole layer, [2][n_seq][kv_rows][kv_dim];
  // else one buffer per member with its shard, [2][n_seq][kv_rows][local kv dim]. Elements: kv_type.
  // kv_rows (plan::kv_cells): n_ctx, one row per position, or fewer: a sliding-window block's ring,
  // position p in row p mod kv_rows.
  bool shared_kv = false;
  int64_t kv_rows = 0;
  std::vector<backend::Device*> kv_devices;  // the device of each kv_buffers entry
  BufferList kv_buffers;
  kernels::DType kv_type = kernels::DType::F32;
  // Parts placed below the block (plan::LayerPlacement ffn_device / experts; docs/placement.md):
  // the FFN part's device and weights (null: with the members, in weights[]), and each routed
  // expert range's.
  backend::Device* ffn_device = nullptr;
  ShardWeights ffn_weights;
  struct ExpertPart {
    backend::Device* device = nullptr;
    int64_t begin = 0, end = 0;  // experts [begin, end)
    ShardWeights weights;
  };
  std::vector<ExpertPart> expert_parts;
  // Weight bytes each placement above charged, by device and part (part_bytes_by_device).
  std::vector<std::pair<backend::Device*, PartBytes>> charged;
};

// A device of another rank has a runtime with only its device and lane (its work runs there).
struct Pipeline::DeviceRuntime {
  backend::Device* device = nullptr;
  int32_t lane = -1;
  std::unique_ptr<DeviceWorker> worker;
  BufferList buffers;  // embedding / head / rope copies, scratch, overhead
  model::TensorView token_embd, output_norm, output_norm_b;
  // The head's vocabulary rows [head_row_begin, head_row_begin + output.rows) this device computes
  // (plan::head_shares: all of them, or its share of a tensor group's).
  model::TensorView output;
  int64_t head_row_begin = 0;
  const float* rope_freqs = nullptr;  // device memory
  plan::ScratchLayout layout;
  std::unique_ptr<backend::Ops> ops;    // the device's stream of work; used on its worker only
  std::unique_ptr<BlockForward> block;  // block arithmetic over ops
  // Held by a stage for the whole time it uses this device's scratch for one micro-batch: a
  // device does one thing at a time even when it appears in several stages.
  std::mutex busy;
};

struct Pipeline::StageRuntime {
  bool has_embed = false, has_head = false;
  // The blocks, or parts of blocks, this stage runs, in order (plan::units_of): whole blocks on
  // the stage's target, or the parts of blocks placed in parts that the target runs.
  std::vector<plan::BlockUnit> units;
  std::vector<DeviceRuntime*> members;
  // Several processes: the members of this rank (with their index in members), and the other
  // ranks holding members (sorted). One process: local == members, ranks empty.
  std::vector<DeviceRuntime*> local;
  std::vector<size_t> local_index;
  std::vector<int> ranks;
  std::unique_ptr<backend::Communicator> comm;  // tensor-parallel groups only (cross-rank: one over MPI)
  StageRuntime* next = nullptr;
  std::thread thread;
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<MicroBatch*> queue;
  bool stopping = false;
};

// A block of tokens that goes through the stages together: one chunk each of one or more
// sequences, stacked row-wise, so every weight matrix of a stage is read once for all of them
// (decode: one token of every active sequence). A sequence appears at most once in a batch.
struct Pipeline::MicroBatch {
  struct Part {
    int32_t seq = 0;
    int64_t row0 = 0;              // first row of this sequence in the block
    int64_t n = 0;                 // its tokens
    int64_t pos0 = 0;              // position of its first token
    // host [logit_rows][n_vocab] <- the logits after its last logit_rows tokens (1: the last chunk
    // of a request; every token of the chunk when the request asked for all rows); may be null
    float* logits = nullptr;
    int64_t logit_rows = 1;        // 1..n
  };
  std::vector<Part> parts;
  std::vector<int32_t> tokens;      // [n] the parts' tokens, in row order
  int64_t n = 0;                    // rows: the sum of parts[i].n
  std::vector<float> hidden;        // [n][n_embd], host memory between stages
  // A block placed in parts whose residual update is not finished when the micro-batch leaves a
  // stage (its MoE experts run further on): the update so far ([n][n_embd], host) and the
  // routing of every row.
  std::vector<float> pending_update;
  MoeRouting routing;
  const backend::Device* holder = nullptr;   // device whose memory produced `hidden`
  // Several processes: >= 0 when the hidden state is not in `hidden` but was sent by that worker
  // rank straight to the next stage's rank(s), on hidden_tag (StageCall::forward_to).
  int hidden_rank = -1;
  int hidden_tag = -1;
  Status status;                    // the first error of any stage; later stages skip the batch
  uint64_t eval_id = 0;             // the submit() it belongs to
  // Trace attribution: the first part's sequence and position, n_tokens = n.
  int32_t seq() const { return parts.front().seq; }
  int64_t pos0() const { return parts.front().pos0; }
};

// An eval between submit() and wait(): its micro-batches and the sequences it advances.
struct Pipeline::InFlight {
  std::vector<std::unique_ptr<MicroBatch>> batches;
  int64_t done = 0;                                   // batches that left the last stage
  std::vector<std::pair<int32_t, int64_t>> advance;   // (sequence, tokens) applied on success
  // Requests that asked for final hidden states: (sequence, caller's [tokens x n_embd] floats,
  // tokens). Filled by wait() from the micro-batches' host copies.
  struct HiddenOut {
    int32_t seq;
    float* dst;
    int64_t n_tokens;
  };
  std::vector<HiddenOut> hidden_out;
};

// Everything a placement needs beyond the blocks' weights and KV: one runtime per device used,
// the overhead of devices holding only KV, and the stages in order.
struct Pipeline::RuntimeSet {
  std::map<const backend::Device*, std::unique_ptr<DeviceRuntime>> runtimes;
  std::map<const backend::Device*, std::unique_ptr<backend::Buffer>> kv_only_overhead;
  std::vector<std::unique_ptr<StageRuntime>> stages;
};

}  // namespace strata::exec
