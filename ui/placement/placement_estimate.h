// ui/placement/placement_estimate.h — the editor's instant local estimate of a placement: bytes per
// device (weights + KV + a fixed scratch + declared overhead) and a small cost model for tokens/s.
// Deliberately simpler than engine/plan (no engine headers): the engine's estimate stays the truth.
#pragma once

#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QString>

#include "ui/placement/placement_data.h"

namespace strata::ui {

// What the editor knows about the model; PlacementModel::setModelInfo's JSON:
//   {"name": "Llama-3.2-3B Q4_K_M",          optional, for titles
//    "n_layers": 28,
//    "layer_bytes": [..n_layers..] | one number for every block,   weight bytes per block
//    "embedding_bytes": N,                    token_embd
//    "head_bytes": N,                         output_norm + output
//    "head_tied": false,                      output tied to token_embd: the head adds
//                                             embedding_bytes when not with the embedding
//    "kv_bytes_per_token": N,                 one block's K+V for one position of one sequence
//                                             (2 x n_kv_heads x head_dim x 4); x n_ctx x n_seq
//    "n_embd": N,                             hidden size: a boundary moves n_embd x 4 bytes
//    "scratch_bytes": N}                      optional, per device that runs blocks or the head;
//                                             default kDefaultScratchBytes
struct ModelInfo {
  QString name;
  int nLayers = 0;
  QList<quint64> layerBytes;
  quint64 embeddingBytes = 0;
  quint64 headBytes = 0;
  bool headTied = false;
  quint64 kvBytesPerToken = 0;
  int nEmbd = 0;
  quint64 scratchBytes = 0;

  static ModelInfo fromJson(const QJsonObject& json);
  QJsonObject toJson() const;
  quint64 tileBytes(int tile) const;  // tile 0 = embedding, 1..n = block tile-1, n+1 = head
};

inline constexpr quint64 kDefaultScratchBytes = 256ull << 20;  // 256 MiB per computing device
inline constexpr double kDefaultBandwidthGbps = 20.0;          // a device declaring 0 (as the engine)
inline constexpr double kLinkLatencyUs = 10.0;                 // per cross-device transfer

// A device as /strata/v1/devices describes it.
struct DeviceSpec {
  QString id;
  QString name;
  QString kind;          // cpu | sim | cuda
  bool simulated = false;
  quint64 capacity = 0;  // bytes_total
  double bandwidthGbps = 0;
  double linkGbps = 0;   // 0: not limited (latency only)
  quint64 overheadBytes = 0;  // runtime_overhead_bytes when given

  static QList<DeviceSpec> listFromJson(const QJsonArray& devices);
  QJsonObject toJson() const;
};

struct DeviceMemoryEstimate {
  QString device;
  quint64 weights = 0, kv = 0, scratch = 0, overhead = 0;
  quint64 total = 0, capacity = 0;
  bool used = false;            // the placement puts anything here
  bool fits = true;             // total <= capacity
  quint64 shortfall = 0;        // total - capacity when it does not fit
};

struct CostPrediction {
  double decodeMsPerToken = 0;   // one sequence through every stage
  double decodeTokensPerS = 0;   // 1000 n_seq / max(sum, n_seq x slowest stage)
  int stages = 0;                // runs of consecutive tiles with the same target
  int boundaries = 0;            // device changes along embedding -> blocks -> head
  quint64 transferBytesPerToken = 0;  // hidden states across boundaries + all-reduces
};

// Rules: embedding_bytes on the embedding device; head_bytes (+ embedding_bytes when tied and not
// with the embedding) on the head device; a block's bytes on its device or, for a group, member i
// gets floor(bytes x fraction_i) and the last member the rest; KV the same way (or whole on
// kv_device); scratch on every device that runs a block or the head; overhead on every used device.
// Returns one entry per device, in device order, used or not.
QList<DeviceMemoryEstimate> estimateMemory(const PlacementData& placement, const ModelInfo& model,
                                           const QList<DeviceSpec>& devices);

// Per token, decoding: a block costs bytes / bandwidth (a group: its slowest member's share plus
// two all-reduces of n_embd x 4 bytes); the head head_bytes / bandwidth; a boundary n_embd x 4
// bytes / min(link) + latency; KV elsewhere two transfers per block.
CostPrediction predictCost(const PlacementData& placement, const ModelInfo& model, const QList<DeviceSpec>& devices);

}  // namespace strata::ui
