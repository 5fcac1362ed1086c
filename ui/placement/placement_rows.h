// ui/placement/placement_rows.h — the rows of the placement editor: one per tile (embedding, blocks,
// head), and under a block whose parts are shown, one per part: attention, FFN part, and for a
// mixture-of-experts model one row per expert range (cut where the placement places ranges apart
// and where the user split them). Plain data; no widgets.
#pragma once

#include <QList>
#include <QMap>
#include <QSet>
#include <QString>

#include "ui/placement/placement_data.h"
#include "ui/placement/placement_parts.h"

namespace strata::ui {

struct TileRow {
  int tile = 0;  // 0 = embedding, 1..n = block tile-1, n+1 = head
  BlockPart part = BlockPart::Whole;
  int expertBegin = 0, expertEnd = 0;  // part Experts: [begin, end)

  int layer(int nLayers) const { return tile >= 1 && tile <= nLayers ? tile - 1 : -1; }
  bool operator==(const TileRow& o) const {
    return tile == o.tile && part == o.part && expertBegin == o.expertBegin && expertEnd == o.expertEnd;
  }
  // "blk 3", "blk 3 attention", "blk 3 ffn", "blk 3 experts 0-63", "head".
  QString label(int nLayers) const;
};

// Every row in order. expanded: blocks whose parts are shown; cuts: the user's expert cuts per block.
QList<TileRow> tileRows(const PlacementData& placement, int nExpert, const QSet<int>& expanded,
                        const QMap<int, QList<int>>& cuts);

}  // namespace strata::ui
