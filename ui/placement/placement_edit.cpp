// ui/placement/placement_edit.cpp — PlacementEdit validation and application, and the undo command.
#include "ui/placement/placement_edit.h"

#include <QSet>

namespace strata::ui {

QString Lane::label() const {
  switch (kind) {
    case Kind::Model: return QStringLiteral("Model");
    case Kind::Device: return target.devices.value(0);
    case Kind::Group: return QStringLiteral("group ") + target.label();
  }
  return {};
}

QString tileName(int tile, int nLayers) {
  if (tile == 0) return QStringLiteral("embedding");
  if (tile == nLayers + 1) return QStringLiteral("head");
  return QStringLiteral("blk %1").arg(tile - 1);
}

QString PlacementEdit::description(int nLayers) const {
  QString what = firstTile == lastTile
                     ? tileName(firstTile, nLayers)
                     : QStringLiteral("%1 … %2").arg(tileName(firstTile, nLayers), tileName(lastTile, nLayers));
  if (part == BlockPart::Experts)
    what += expertEnd - expertBegin == nExpert ? QStringLiteral(" experts")
                                                : QStringLiteral(" experts %1-%2").arg(expertBegin).arg(expertEnd - 1);
  else if (part != BlockPart::Whole)
    what += QLatin1Char(' ') + partName(part);
  return QStringLiteral("%1 → %2").arg(what, lane.label());
}

QString validateEdit(const PlacementEdit& e, const PlacementData& current, const ModelInfo& model,
                     const QStringList& deviceIds) {
  const int n = model.nLayers;
  if (n <= 0 || current.layerCount() != n) return QStringLiteral("no model to place");
  if (e.lane.kind == Lane::Kind::Model)
    return QStringLiteral("drop onto a device lane or a tensor group, not onto the model column");
  if (e.firstTile < 0 || e.lastTile < e.firstTile)
    return QStringLiteral("tiles %1-%2 are not a range").arg(e.firstTile).arg(e.lastTile);
  if (e.lastTile > n + 1)
    return QStringLiteral("tiles %1-%2 out of range: the model has %3 layers (0-%4)")
        .arg(e.firstTile - 1).arg(e.lastTile - 1).arg(n).arg(n - 1);
  const LayerTarget& t = e.lane.target;
  if (t.devices.isEmpty()) return QStringLiteral("the lane names no device");
  if (e.lane.kind == Lane::Kind::Group) {
    if (t.devices.size() < 2) return QStringLiteral("a 'group' needs at least 2 devices, has %1").arg(t.devices.size());
    QSet<QString> seen;
    for (const QString& d : t.devices) {
      if (seen.contains(d)) return QStringLiteral("device '%1' appears twice in the group").arg(d);
      seen.insert(d);
    }
    if (!t.ratio.isEmpty() && t.ratio.size() != t.devices.size())
      return QStringLiteral("'ratio' has %1 values for a group of %2 devices").arg(t.ratio.size()).arg(t.devices.size());
    for (int i = 0; i < t.ratio.size(); ++i)
      if (!(t.ratio[i] > 0))
        return QStringLiteral("'ratio'[%1] is %2 for device '%3'; ratios must be > 0").arg(i).arg(t.ratio[i]).arg(t.devices[i]);
    const QString members = t.devices.join(QStringLiteral(", "));
    if (e.firstTile == 0)
      return QStringLiteral("the embedding must be on one device, not a group of %1 (%2)").arg(t.devices.size()).arg(members);
    if (e.lastTile == n + 1)
      return QStringLiteral("the head must be on one device, not a group of %1 (%2)").arg(t.devices.size()).arg(members);
  } else if (t.devices.size() != 1) {
    return QStringLiteral("a device lane holds one device");
  }
  for (const QString& d : t.devices)
    if (!deviceIds.contains(d))
      return QStringLiteral("placement names device '%1', which is not among: %2").arg(d, deviceIds.join(QStringLiteral(", ")));
  if (e.part != BlockPart::Whole) {
    if (e.firstTile == 0 || e.lastTile == n + 1) return QStringLiteral("the embedding and the head have no parts");
    for (int tile = e.firstTile; tile <= e.lastTile; ++tile) {
      LayerTarget block = current.layers[tile - 1];
      const QString why = movePart(block, tile - 1, e.part, t, e.expertBegin, e.expertEnd, model.nExpert);
      if (!why.isEmpty()) return why;
    }
  }
  return {};
}

PlacementData applyEdit(const PlacementEdit& e, const PlacementData& current) {
  PlacementData p = current;
  const int n = p.layerCount();
  for (int tile = e.firstTile; tile <= e.lastTile; ++tile) {
    if (tile == 0) {
      p.embeddingDevice = e.lane.target.devices.value(0);
    } else if (tile == n + 1) {
      p.headDevice = e.lane.target.devices.value(0);
    } else if (e.part != BlockPart::Whole) {
      movePart(p.layers[tile - 1], tile - 1, e.part, e.lane.target, e.expertBegin, e.expertEnd, e.nExpert);
    } else {
      LayerTarget& t = p.layers[tile - 1];
      const QString kv = t.kvDevice;
      t = LayerTarget{e.lane.target.devices, e.lane.target.isGroup() ? e.lane.target.ratio : QList<double>{}, {}, {}, {}};
      if (!(t.devices.size() == 1 && t.devices.first() == kv)) t.kvDevice = kv;
    }
  }
  return p;
}

PlacementCommand::PlacementCommand(std::function<void(const PlacementData&)> setter, PlacementData before,
                                   PlacementData after, const QString& text)
    : setter_(std::move(setter)), before_(std::move(before)), after_(std::move(after)) {
  setText(text);
}

}  // namespace strata::ui
