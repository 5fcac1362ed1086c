// ui/placement/placement_edit.h — one user edit of a placement (tiles dropped on a lane): checked
// against the model and the devices before it is applied, and undone/redone as a QUndoCommand.
#pragma once

#include <QStringList>
#include <QUndoCommand>

#include <functional>

#include "ui/placement/placement_data.h"
#include "ui/placement/placement_estimate.h"

namespace strata::ui {

// A column of the editor: the model's tiles, one device, or a tensor-parallel group.
struct Lane {
  enum class Kind { Model, Device, Group };
  Kind kind = Kind::Model;
  LayerTarget target;  // Device: one device; Group: members and ratio
  QString label() const;
};

// Tiles are rows: 0 = embedding, 1..n = blocks 0..n-1, n+1 = head.
struct PlacementEdit {
  int firstTile = 0;
  int lastTile = 0;
  Lane lane;
  QString description(int nLayers) const;  // "blk 3-7 → gpu1"
};

QString tileName(int tile, int nLayers);  // "embedding", "blk 3", "head"

// Empty when the edit may be applied, else why not (the engine's words where it has them), e.g.
// "drop onto a device lane or a tensor group, not onto the model column",
// "tiles 20-24 out of range: the model has 22 layers (0-21)",
// "a 'group' needs at least 2 devices, has 1",
// "the embedding must be on one device, not a group of 2 (gpu0, gpu1)",
// "placement names device 'gpu7', which is not among: cpu, gpu0".
// Not fitting in memory is not an error here (the lane turns red; Apply is refused).
QString validateEdit(const PlacementEdit& edit, const PlacementData& current, const ModelInfo& model,
                     const QStringList& deviceIds);

// The placement after the edit (assumes validateEdit passed). A block keeps its kv_device unless
// it would name the block's own single device.
PlacementData applyEdit(const PlacementEdit& edit, const PlacementData& current);

// Swaps between two placements through `setter` (the model's, which updates views and figures).
class PlacementCommand : public QUndoCommand {
 public:
  PlacementCommand(std::function<void(const PlacementData&)> setter, PlacementData before, PlacementData after,
                   const QString& text);
  void undo() override { setter_(before_); }
  void redo() override { setter_(after_); }

 private:
  std::function<void(const PlacementData&)> setter_;
  PlacementData before_, after_;
};

}  // namespace strata::ui
