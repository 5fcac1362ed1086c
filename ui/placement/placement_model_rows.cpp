// ui/placement/placement_model_rows.cpp — PlacementModel's rows of block parts: showing and hiding a
// block's parts, the user's expert cuts, and keeping the rows in step with the placement (part rows
// removed and inserted block by block, so views keep their place). GUI thread only.
#include "ui/placement/placement_model.h"

#include <algorithm>

namespace strata::ui {

bool PlacementModel::setExpanded(int layer, bool on) {
  if (layer < 0 || layer >= model_.nLayers || expanded_.contains(layer) == on) return false;
  if (on) expanded_.insert(layer);
  else expanded_.remove(layer);
  syncRows();
  const int row = rowOf(TileRow{layer + 1});
  emit dataChanged(index(row, 0), index(row, columnCount() - 1));  // the block row's marker and tooltip
  return true;
}

void PlacementModel::setAllExpanded(bool on) {
  for (int b = 0; b < model_.nLayers; ++b) {
    if (on) expanded_.insert(b);
    else expanded_.remove(b);
  }
  syncRows();
  if (rowCount() > 0) emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
}

bool PlacementModel::splitExperts(int layer, int cut) {
  if (layer < 0 || layer >= model_.nLayers || cut <= 0 || cut >= model_.nExpert) return false;
  QList<int>& cuts = cuts_[layer];
  if (cuts.contains(cut)) return false;
  cuts.append(cut);
  std::sort(cuts.begin(), cuts.end());
  expanded_.insert(layer);  // the new ranges are rows to drag
  syncRows();
  return true;
}

bool PlacementModel::joinExperts(int layer) {
  if (!cuts_.contains(layer)) return false;
  cuts_.remove(layer);
  syncRows();
  return true;
}

void PlacementModel::syncRows() {
  const QList<TileRow> next = tileRows(placement_, model_.nExpert, expanded_, cuts_);
  if (next == rows_) return;
  auto tiles = [](const QList<TileRow>& rows) {
    return std::count_if(rows.begin(), rows.end(), [](const TileRow& r) { return r.part == BlockPart::Whole; });
  };
  if (rows_.isEmpty() || next.isEmpty() || tiles(rows_) != tiles(next)) {
    beginResetModel();
    rows_ = next;
    endResetModel();
    return;
  }
  // Tile by tile: a tile's row stays; its part rows are replaced where they changed.
  int row = 0;
  for (int j = 0; j < next.size();) {
    int jEnd = j + 1, rowEnd = row + 1;
    while (jEnd < next.size() && next[jEnd].part != BlockPart::Whole) ++jEnd;
    while (rowEnd < rows_.size() && rows_[rowEnd].part != BlockPart::Whole) ++rowEnd;
    const int oldParts = rowEnd - row - 1, newParts = jEnd - j - 1;
    if (rows_.mid(row + 1, oldParts) != next.mid(j + 1, newParts)) {
      if (oldParts > 0) {
        beginRemoveRows({}, row + 1, row + oldParts);
        rows_.remove(row + 1, oldParts);
        endRemoveRows();
      }
      if (newParts > 0) {
        beginInsertRows({}, row + 1, row + newParts);
        for (int k = 0; k < newParts; ++k) rows_.insert(row + 1 + k, next[j + 1 + k]);
        endInsertRows();
      }
    }
    row += 1 + newParts;
    j = jEnd;
  }
}

}  // namespace strata::ui
