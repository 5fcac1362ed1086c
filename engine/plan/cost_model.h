// engine/plan/cost_model.h — predicted time per token of a placement: compute per block from
// weight bytes / memory bandwidth (once per batch), each token's activation bytes / memory
// bandwidth (activation_traffic.h) and FLOPs / compute rate, transfers at stage boundaries and
// all-reduces from link bandwidth and latency. Formulas in docs/placement.md ("Cost model").
// Depends on plan/ and model/ descriptions and DeviceInfo's declared speeds; runs nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/core/device_info.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "engine/plan/placement.h"
#include "engine/plan/tensor_split.h"

namespace strata::plan {

// Used when a device declares 0 (unknown): a modest desktop CPU.
inline constexpr double kDefaultBandwidthGbps = 20.0;  // GB/s
inline constexpr double kDefaultTflops = 0.5;          // 1e12 FLOP/s

// A pipeline stage as the cost model sees it: a run of blocks on one target, possibly with the
// embedding in front and the head behind (when they share its single device), or the embedding
// or the head alone on a device of their own.
struct StageCost {
  Target target;
  std::string kv_device;
  int64_t first_layer = 0, end_layer = 0;  // blocks [first, end); equal for embedding/head-only stages
  bool has_embedding = false, has_head = false;
  // Milliseconds per decoded token (one sequence):
  double recv_ms = 0;         // receiving the hidden state from the previous stage (0 for the first)
  double compute_ms = 0;      // blocks (slowest member for a group), embedding lookup, head
  double attention_ms = 0;    // of compute_ms: reading the KV cache at the estimate's context, writing the new rows
  double allreduce_ms = 0;    // 2 per block of a group
  double kv_transfer_ms = 0;  // q/k/v out and attention back, for blocks whose KV lives elsewhere
  double crossing_ms = 0;     // the hidden state between the parts of blocks placed in parts
  double decode_ms = 0;       // the five above
  double prefill_ms = 0;      // per prompt token, weights read once per batch of max_batch tokens
  // Bytes per decoded token (one sequence) this stage moves between devices: the hidden state in
  // (when it crosses devices), 2 all-reduces per group block, q/k/v out and back per KV-elsewhere block.
  uint64_t transfer_bytes = 0;
  bool receives = false;      // the hidden state crosses devices into this stage (a boundary)
};

struct DeviceCost {
  std::string device;
  double decode_ms = 0;   // compute busy time per decoded token
  double prefill_ms = 0;  // per prompt token
};

struct CostEstimate {
  std::vector<StageCost> stages;
  std::vector<DeviceCost> devices;   // devices that compute, in device-list order
  int64_t n_seq = 1;
  int64_t context = 0;               // positions already in the KV cache the figures assume
  double decode_ms_per_token = 0;    // one sequence, one token through every stage: the sum
  double bottleneck_ms = 0;          // the slowest stage
  // n_seq sequences decoding together: one micro-batch of decode_rows_per_micro_batch sequences
  // per stage in flight (decode_micro_batches of them, at most one per stage); a round gives every
  // sequence one token in decode_round_ms = max(one micro-batch's trip through the stages,
  // micro-batches x the slowest stage's time on one), each stage reading its weights once per
  // micro-batch. With one sequence: 1 micro-batch of 1 row, the round is decode_ms_per_token.
  int64_t decode_micro_batches = 1;
  int64_t decode_rows_per_micro_batch = 1;
  double decode_round_ms = 0;
  double decode_tokens_per_s = 0;    // all n_seq sequences together: 1000 n_seq / decode_round_ms
  double prefill_ms_per_token = 0;   // one batch at a time through every stage: the sum
  double prefill_tokens_per_s = 0;
  int64_t boundaries = 0;            // stages the hidden state crosses devices into
  uint64_t transfer_bytes_per_token = 0;  // all stages' transfer_bytes: what crosses links per token
  // Milliseconds per generated token over all sequences; what the auto-planner minimises.
  double objective_ms() const { return decode_tokens_per_s > 0 ? 1000.0 / decode_tokens_per_s : 0.0; }
};

// Validates the placement, then predicts. Devices' bandwidth_gbps / tflops of 0 use the defaults
// above; a link_gbps of 0 means no bandwidth limit (in-process copies): only latency counts.
// context: tokens already in the sequence's KV cache (0: an empty cache, attention free; the
// placement's n_ctx: the end of a full chat). Decode attention reads context positions of K and
// V per layer (sliding-window layers at most their window); a prompt batch of max_batch tokens
// after context positions sees context + max_batch / 2 positions per token on average.
Expected<CostEstimate> estimate_cost(const Placement& placement, const model::ModelConfig& config,
                                     const model::ModelWeights& weights, const std::vector<DeviceInfo>& devices,
                                     int64_t context = 0);

nlohmann::json to_json(const CostEstimate& cost);

// The devices as this machine can run them. A simulated device executes the CPU's kernels on its
// own host threads and then waits out its declared time, so it is never faster than either: its
// bandwidth, one-token product rates and FLOP rate become at most the host CPU's (the device with
// caps.host_cpu), scaled by its threads' share of the CPU's threads. Other devices are unchanged;
// so is everything when no device is simulated or there is no host CPU among them.
std::vector<DeviceInfo> host_bounded(const std::vector<DeviceInfo>& devices);
// The placement computes on a simulated device (blocks, parts, embedding, head or a KV cache).
bool uses_simulated(const Placement& placement, const std::vector<DeviceInfo>& devices);

// Building blocks, shared with the auto-planner.
uint64_t hidden_state_bytes(const model::ModelConfig& config);  // n_embd x 4: one token's activations
// Elements of the matrices and vectors of one shard (FLOPs per token = 2 x this).
uint64_t shard_parameters(const model::ModelConfig& config, const model::LayerWeights& layer, const LayerShard& shard);
// The same by part of a block: attention (Q, K, V, O, norm) and the FFN part (a dense FFN; an
// MoE block's router and shared expert).
uint64_t attention_parameters(const model::ModelConfig& config, const model::LayerWeights& layer,
                              const LayerShard& shard);
uint64_t ffn_parameters(const model::ModelConfig& config, const model::LayerWeights& layer, const LayerShard& shard);
// Routed experts [begin, end) of an MoE block per token, weights read once per batch: a decoded
// token reads the experts it is routed to (n_expert_used of n_expert, spread evenly), a batch of
// tokens every expert one of them is routed to.
double experts_ms(const model::ModelConfig& config, const model::LayerWeights& layer, int64_t begin, int64_t end,
                  const DeviceInfo& device, int64_t batch);
// Bytes per token that travel with the hidden state after unit `from` when the next part of the
// block runs elsewhere: an MoE block's partial sum and routing (0 for dense blocks).
uint64_t expert_partial_bytes(const model::ModelConfig& config, const BlockUnit& from);
// max(weight_bytes / bandwidth / batch + activation_bytes / bandwidth, flops / rate) in ms, per
// token: weights read once per batch, the token's own activations (activation_traffic.h) not shared.
double compute_ms(uint64_t weight_bytes, double flops, const DeviceInfo& device, int64_t batch,
                  uint64_t activation_bytes = 0);
// One block (whole, or a shard of a group) per token: its weights, read once per batch, and its
// activations (attention_activation_bytes + ffn_activation_bytes), every token's own.
double block_ms(const model::ModelConfig& config, const model::LayerWeights& layer, const LayerShard& shard,
                bool whole, const DeviceInfo& device, int64_t batch);
double embedding_ms(const model::ModelConfig& config, const model::ModelWeights& weights,
                    const DeviceInfo& device);
double head_ms(const model::ModelConfig& config, const model::ModelWeights& weights, const DeviceInfo& device,
               int64_t batch);
// The head over vocab_rows of the vocabulary (a tensor group's share, plan::head_shares; head_ms is
// all n_vocab rows): those rows of the output matrix read once per batch, the token's activations,
// and its logits (vocab_rows x 4 bytes) to the host over the device's link, latency included.
double head_rows_ms(const model::ModelConfig& config, const model::ModelWeights& weights, const DeviceInfo& device,
                    int64_t batch, int64_t vocab_rows);
// Attention of one layer per token over `positions` KV positions, for n_kv_heads of the layer's KV
// heads (and their query heads): max((K and V bytes / reads_shared_by + the token's own K and V
// rows written) / bandwidth, FLOPs / rate), FLOPs = 4 x positions x query heads x head_dim.
// reads_shared_by: query tokens that share each read of a key block (1 for decode; prompts are
// tiled). At 0 positions (an empty cache) only the write is left.
double attention_ms(const model::ModelConfig& config, int64_t n_kv_heads, kernels::DType kv_type, double positions,
                    const DeviceInfo& device, double reads_shared_by);
// bytes / min(link) + max(latency) in ms; 0 between a device and itself.
double transfer_ms(uint64_t bytes, const DeviceInfo& a, const DeviceInfo& b);

}  // namespace strata::plan
