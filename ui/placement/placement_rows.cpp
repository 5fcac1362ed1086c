// ui/placement/placement_rows.cpp — the editor's rows (see header).
#include "ui/placement/placement_rows.h"

#include "ui/placement/placement_edit.h"

namespace strata::ui {

QString TileRow::label(int nLayers) const {
  const QString name = tileName(tile, nLayers);
  switch (part) {
    case BlockPart::Whole: return name;
    case BlockPart::Attention: return name + QStringLiteral(" attention");
    case BlockPart::Ffn: return name + QStringLiteral(" ffn");
    case BlockPart::Experts:
      return expertEnd - expertBegin == 1 ? name + QStringLiteral(" expert %1").arg(expertBegin)
                                          : name + QStringLiteral(" experts %1-%2").arg(expertBegin).arg(expertEnd - 1);
  }
  return name;
}

QList<TileRow> tileRows(const PlacementData& p, int nExpert, const QSet<int>& expanded, const QMap<int, QList<int>>& cuts) {
  const int n = p.layerCount();
  QList<TileRow> rows;
  if (n <= 0) return rows;
  rows.append(TileRow{0});
  for (int b = 0; b < n; ++b) {
    rows.append(TileRow{b + 1});
    if (!expanded.contains(b)) continue;
    rows.append(TileRow{b + 1, BlockPart::Attention});
    rows.append(TileRow{b + 1, BlockPart::Ffn});
    if (nExpert <= 0) continue;
    int begin = 0;
    for (int cut : expertCuts(p.layers[b], nExpert, cuts.value(b))) {
      rows.append(TileRow{b + 1, BlockPart::Experts, begin, cut});
      begin = cut;
    }
    rows.append(TileRow{b + 1, BlockPart::Experts, begin, nExpert});
  }
  rows.append(TileRow{n + 1});
  return rows;
}

}  // namespace strata::ui
