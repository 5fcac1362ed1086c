// ui/placement/placement_estimate.h — what the placement editor shows, as the engine states it: the
// model's tile sizes (from /strata/v1/status), the devices (from /strata/v1/devices) and the
// engine's answer to POST /strata/v1/placement/estimate, parsed. Nothing here computes an estimate:
// the engine's planner (engine/plan) is the only one, and the editor asks it (PlacementEstimator).
#pragma once

#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QString>

namespace strata::ui {

// What the editor knows about the model, for the tiles it draws; PlacementModel::setModelInfo's
// JSON (the /strata/v1/status "model" object has these fields):
//   {"name": "Llama-3.2-3B Q4_K_M",          optional, for titles
//    "n_layers": 28,
//    "layer_bytes": [..n_layers..] | one number for every block,   weight bytes per block
//    "embedding_bytes": N,                    token_embd
//    "head_bytes": N,                         output_norm + output (0 matrix bytes when tied)
//    "layer_parts": [{"attention_bytes", "ffn_bytes", "experts_bytes"}, ..n_layers..],   optional
//    "n_expert": 128, "n_expert_used": 8}     optional; 0 (absent): a dense model
struct PartBytes {
  quint64 attention = 0;  // attention, its norms (the KV cache is the estimate's)
  quint64 ffn = 0;        // the dense FFN, or an MoE block's router + shared expert
  quint64 experts = 0;    // every routed expert; one is experts / nExpert
};
struct ModelInfo {
  QString name;
  int nLayers = 0;
  QList<quint64> layerBytes;
  QList<PartBytes> layerParts;  // [n_layers]; zeros when the engine did not say
  quint64 embeddingBytes = 0;
  quint64 headBytes = 0;
  int nExpert = 0;      // routed experts per block; 0: a dense model
  int nExpertUsed = 0;  // experts each token runs (top-k)

  bool isMoe() const { return nExpert > 0; }
  static ModelInfo fromJson(const QJsonObject& json);
  QJsonObject toJson() const;
  quint64 tileBytes(int tile) const;  // tile 0 = embedding, 1..n = block tile-1, n+1 = head
  // Bytes of block `layer`'s attention, FFN part, or routed experts [expertBegin, expertEnd).
  quint64 attentionBytes(int layer) const { return layerParts.value(layer).attention; }
  quint64 ffnBytes(int layer) const { return layerParts.value(layer).ffn; }
  quint64 expertsBytes(int layer, int expertBegin, int expertEnd) const;
};

// A device as /strata/v1/devices describes it (the fields the editor shows).
struct DeviceSpec {
  QString id;
  QString name;
  QString kind;          // cpu | sim | cuda
  bool simulated = false;
  quint64 capacity = 0;  // bytes_total

  static QList<DeviceSpec> listFromJson(const QJsonArray& devices);
};

// One device's row of the engine's memory estimate ("memory"."devices"[i] of the answer); a device
// the placement does not use has zeros and its capacity.
struct DeviceMemoryEstimate {
  QString device;
  quint64 weights = 0, kv = 0, scratch = 0, overhead = 0;  // weight_bytes, kv_bytes, scratch_bytes, overhead_bytes
  // weights by part of the blocks ("parts": attention_bytes, ffn_bytes, experts_bytes); the rest of
  // weights is the embedding, the head and the RoPE factors.
  quint64 attention = 0, ffn = 0, experts = 0;
  quint64 total = 0, capacity = 0;                         // total_bytes, capacity_bytes
  bool used = false;            // the engine listed it: the placement puts something here
  bool fits = true;
  quint64 shortfall = 0;        // shortfall_bytes: total - capacity when it does not fit
};

// The engine's "cost" object (its cost model at an empty KV cache).
struct CostPrediction {
  double decodeMsPerToken = 0;        // decode_ms_per_token: one sequence through every stage
  double decodeTokensPerS = 0;        // decode_tokens_per_s: n_seq sequences pipelined
  double prefillTokensPerS = 0;       // prefill_tokens_per_s
  int stages = 0;                     // stages.length
  int boundaries = 0;                 // boundaries: stages the hidden state crosses devices into
  quint64 transferBytesPerToken = 0;  // transfer_bytes_per_token
  int nSeq = 1;                       // n_seq: sequences decoded at once (the server's parallel slots)
};

// The label's figures, consistent with each other: one reply's speed and its inverse (ms/token) from
// the same number; with several sequences the total over all of them beside it, named; with
// simulated devices (`onThisMachine` non-null) the declared hardware's figures and this machine's,
// both labelled ("this machine": the simulated devices bounded by the host CPU, whose kernels they
// run). "Predicted: 1266.0 tok/s decode (0.79 ms/token), 1900 tok/s prefill".
QString predictionText(const CostPrediction& c, const CostPrediction* onThisMachine);

// The engine's answer for one placement, parsed.
struct EngineEstimate {
  QList<DeviceMemoryEstimate> memory;  // one entry per device of the editor, in device order
  CostPrediction cost;
  bool hasCost = false;  // "cost" was not null
  CostPrediction onThisMachine;  // cost_on_this_machine: simulated devices bounded by the host CPU
  bool hasOnThisMachine = false;  // the placement uses a simulated device and the engine said
  bool fits = false;
  QString error;         // the engine's text: why it does not fit (or why the placement is invalid)
};

// `answer` is the 200 body of /strata/v1/placement/estimate:
//   {"fits", "memory": {"devices": [{"device", "weight_bytes", ...}]}, "cost": {...}|null, "error"}.
// Devices of `devices` the engine did not list get zeros and their capacity; devices the engine
// listed that `devices` lacks are appended (the editor's list may lag behind the engine's).
EngineEstimate parseEstimate(const QJsonObject& answer, const QList<DeviceSpec>& devices);
// One cost object of the engine's ("cost", "cost_on_this_machine").
CostPrediction parseCost(const QJsonObject& cost);

}  // namespace strata::ui
