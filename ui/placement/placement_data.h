// ui/placement/placement_data.h — a placement as plain Qt data (one target per block, and the parts of
// a block placed apart) and its JSON (docs/placement.md, version 1, "Parts of a block"). No engine
// headers: the GUI parses and writes the same JSON itself, field for field like the engine.
#pragma once

#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

namespace strata::ui {

// Routed experts [begin, end) of a mixture-of-experts block on one device; end == kAllExperts runs
// through the block's last expert (JSON "64-", or "experts": "cpu" for all of them).
inline constexpr int kAllExperts = -1;
struct ExpertRange {
  int begin = 0;
  int end = kAllExperts;  // exclusive
  QString device;
  bool operator==(const ExpertRange& o) const { return begin == o.begin && end == o.end && device == o.device; }
  int endOf(int nExpert) const { return end == kAllExperts ? nExpert : end; }
};

// Where one block runs: one device (devices.size() == 1) or a tensor-parallel group (2+ devices).
// The target runs the block's attention and every part not placed apart (ffnDevice, experts).
struct LayerTarget {
  QStringList devices;
  QList<double> ratio;  // one per group member (> 0); empty: all equal; always empty for one device
  QString kvDevice;     // empty: KV with the block
  QString ffnDevice;    // the dense FFN, or an MoE block's router + shared expert; empty: with the target
  QList<ExpertRange> experts;  // the routed experts by ranges, in order; empty: with the FFN part

  bool isGroup() const { return devices.size() > 1; }
  // Ratio of member i, normalised so the members sum to 1.
  double fraction(int i) const;
  // Same devices in the same order and the same normalised ratio (and KV device when withKv).
  bool sameTarget(const LayerTarget& other) const;
  bool operator==(const LayerTarget& other) const {
    return sameTarget(other) && kvDevice == other.kvDevice && ffnDevice == other.ffnDevice && experts == other.experts;
  }
  bool hasParts() const { return !ffnDevice.isEmpty() || !experts.isEmpty(); }
  QString label() const;  // "gpu0", "gpu0+gpu1 2:1"
};

struct PlacementData {
  int nCtx = 2048;
  int nSeq = 1;
  int maxBatch = 256;
  QString kvType;  // "f32" | "q8_0"; empty: the engine's default f16 (written only when not f16)
  bool swaFull = false;  // sliding-window blocks keep n_ctx rows, not a ring (written only when true)
  QString embeddingDevice;
  QString headDevice;
  QList<LayerTarget> layers;  // [n_layers], block i at index i

  int layerCount() const { return static_cast<int>(layers.size()); }
  bool operator==(const PlacementData& other) const;
  bool operator!=(const PlacementData& other) const { return !(*this == other); }

  // Everything on one device.
  static PlacementData allOn(const QString& device, int nLayers, int nCtx = 2048);
  // Parses and checks structure: every block 0..nLayers-1 placed exactly once, ranges, groups,
  // ratios, parts (ffn_device, experts: a device id or [{"experts": "0-63", "device": id}, ...]),
  // kv_type, unknown fields. Expert coverage against the model is the engine's check. On failure returns an empty placement and sets *error (a message in
  // the engine's words, e.g. "layers[1]: layers 5-9 overlap layers 0-6 at layer 5").
  static PlacementData fromJson(const QJsonObject& json, int nLayers, QString* error);
  // Blocks in order, consecutive blocks with the same target, KV and parts merged into one range;
  // whole-number ratios written as integers; "experts" as a device id when one range holds them all.
  // (QJsonObject writes keys sorted, as the engine does.)
  QJsonObject toJson() const;
};

// Number of blocks whose target or KV device differ between a and b (+1 each for the embedding
// and the head when they moved): what "Apply: move N layers" counts.
int changedTiles(const PlacementData& a, const PlacementData& b);

}  // namespace strata::ui
