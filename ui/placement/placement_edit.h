// ui/placement/placement_edit.h — one user edit of a placement (tiles, or one part of some blocks,
// dropped on a lane): checked against the model and the devices before it is applied, and
// undone/redone as a QUndoCommand.
#pragma once

#include <QStringList>
#include <QUndoCommand>

#include <functional>

#include "ui/placement/placement_data.h"
#include "ui/placement/placement_estimate.h"
#include "ui/placement/placement_parts.h"

namespace strata::ui {

// A column of the editor: the model's tiles, one device, or a tensor-parallel group.
struct Lane {
  enum class Kind { Model, Device, Group };
  Kind kind = Kind::Model;
  LayerTarget target;  // Device: one device; Group: members and ratio
  QString label() const;
};

// Tiles: 0 = embedding, 1..n = blocks 0..n-1, n+1 = head. A part edit moves that part of every
// block firstTile..lastTile on its own (placement_parts.h: movePart), the other parts staying.
struct PlacementEdit {
  int firstTile = 0;
  int lastTile = 0;
  Lane lane;
  BlockPart part = BlockPart::Whole;
  int expertBegin = 0, expertEnd = 0;  // part Experts: routed experts [begin, end)
  int nExpert = 0;                     // the model's routed experts per block (0: dense)
  QString description(int nLayers) const;  // "blk 3 … blk 7 → gpu1", "blk 2 … blk 3 ffn → cpu", "blk 1 experts 4-7 → cpu"
};

QString tileName(int tile, int nLayers);  // "embedding", "blk 3", "head"

// Empty when the edit may be applied, else why not (the engine's words where it has them), e.g.
// "drop onto a device lane or a tensor group, not onto the model column",
// "tiles 20-24 out of range: the model has 22 layers (0-21)",
// "a 'group' needs at least 2 devices, has 1",
// "the embedding must be on one device, not a group of 2 (gpu0, gpu1)",
// "placement names device 'gpu7', which is not among: cpu, gpu0";
// for parts (movePart): "the embedding and the head have no parts", "blk 0 has a dense FFN (no experts)",
// "blk 1: the experts run on one device, not a tensor group".
// Not fitting in memory is not an error here (the lane turns red; Apply is refused).
QString validateEdit(const PlacementEdit& edit, const PlacementData& current, const ModelInfo& model,
                     const QStringList& deviceIds);

// The placement after the edit (assumes validateEdit passed). A block keeps its kv_device unless
// it would name the block's own single device. A whole block moves with all its parts (its
// ffn_device and experts cleared); a part edit leaves the block's other parts where they run and
// writes the block's parts in the engine's normal form.
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
