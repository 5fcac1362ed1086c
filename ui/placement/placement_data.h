// ui/placement/placement_data.h — a placement as plain Qt data (one target per block) and its JSON
// (docs/placement.md, version 1). No engine headers: the GUI parses the same JSON itself.
#pragma once

#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

namespace strata::ui {

// Where one block runs: one device (devices.size() == 1) or a tensor-parallel group (2+ devices).
struct LayerTarget {
  QStringList devices;
  QList<double> ratio;  // one per group member (> 0); empty: all equal; always empty for one device
  QString kvDevice;     // empty: KV with the block

  bool isGroup() const { return devices.size() > 1; }
  // Ratio of member i, normalised so the members sum to 1.
  double fraction(int i) const;
  // Same devices in the same order and the same normalised ratio (and KV device when withKv).
  bool sameTarget(const LayerTarget& other) const;
  bool operator==(const LayerTarget& other) const { return sameTarget(other) && kvDevice == other.kvDevice; }
  QString label() const;  // "gpu0", "gpu0+gpu1 2:1"
};

struct PlacementData {
  int nCtx = 2048;
  int nSeq = 1;
  int maxBatch = 256;
  QString embeddingDevice;
  QString headDevice;
  QList<LayerTarget> layers;  // [n_layers], block i at index i

  int layerCount() const { return static_cast<int>(layers.size()); }
  bool operator==(const PlacementData& other) const;
  bool operator!=(const PlacementData& other) const { return !(*this == other); }

  // Everything on one device.
  static PlacementData allOn(const QString& device, int nLayers, int nCtx = 2048);
  // Parses and checks structure: every block 0..nLayers-1 placed exactly once, ranges, groups,
  // ratios, unknown fields. On failure returns an empty placement and sets *error (a message in
  // the engine's words, e.g. "layers[1]: layers 5-9 overlap layers 0-6 at layer 5").
  static PlacementData fromJson(const QJsonObject& json, int nLayers, QString* error);
  // Blocks in order, consecutive blocks with the same target and KV merged into one range;
  // whole-number ratios written as integers. (QJsonObject writes keys sorted, as the engine does.)
  QJsonObject toJson() const;
};

// Number of blocks whose target or KV device differ between a and b (+1 each for the embedding
// and the head when they moved): what "Apply: move N layers" counts.
int changedTiles(const PlacementData& a, const PlacementData& b);

}  // namespace strata::ui
