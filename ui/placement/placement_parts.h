// ui/placement/placement_parts.h — the parts of a block (docs/placement.md, "Parts of a block") as
// the placement editor moves them: where each part runs, moving one part on its own, and the
// engine's normal form (no ffn_device equal to the target, no experts all on the FFN part's device).
// Plain Qt data; no engine headers, no widgets.
#pragma once

#include <QList>
#include <QString>

#include "ui/placement/placement_data.h"

namespace strata::ui {

// What a tile row (and a drag) stands for: a whole tile, or one part of a block.
enum class BlockPart {
  Whole,      // the embedding, the head, or a block with all its parts
  Attention,  // attention with its KV cache: the block's target
  Ffn,        // the dense FFN, or an MoE block's router and shared expert
  Experts,    // an MoE block's routed experts [begin, end)
};
QString partName(BlockPart part);                 // "whole", "attention", "ffn", "experts"
BlockPart partFromName(const QString& name);      // unknown names: Whole

// Where the FFN part runs: ffnDevice, else the block's target (one device or its group).
LayerTarget ffnTargetOf(const LayerTarget& block);
// The routed experts as ranges with resolved ends ([begin, end) within 0..nExpert), covering every
// expert: the placed ranges, or one range on the FFN part's device (empty device when the FFN part
// runs on a group). Empty for a dense model (nExpert 0).
QList<ExpertRange> resolvedExperts(const LayerTarget& block, int nExpert);
// The device running experts [begin, end) (which lie within one placed range when the caller's
// rows are cut at every placed boundary); empty when on a group or out of range.
QString expertsDevice(const LayerTarget& block, int nExpert, int begin, int end);

// The engine's normal form of a block's parts: ffnDevice cleared when it is the one-device target;
// adjacent expert ranges on one device merged, the last one open-ended ("N-"); experts cleared when
// they all run on the FFN part's device. nExpert 0 (not known): expert ranges are left as they are.
void normalizeParts(LayerTarget& block, int nExpert);

// Moves one part of `block` (block number `layer`, for messages) to `lane` (a device, or for the
// attention also a tensor group), the other parts staying where they run; then normalizes. Returns
// an empty string, or why not (e.g. "blk 3: the experts run on one device, not a tensor group").
// Attention: the target (and the KV with it, unless placed elsewhere); Experts: [begin, end).
QString movePart(LayerTarget& block, int layer, BlockPart part, const LayerTarget& lane, int expertBegin, int expertEnd,
                 int nExpert);

// Expert indices in (0, nExpert) where a block's experts rows are cut: the placed ranges'
// boundaries and the user's own cuts (`cuts`, from "Split experts…"), sorted, once each.
QList<int> expertCuts(const LayerTarget& block, int nExpert, const QList<int>& cuts);

}  // namespace strata::ui
