// ui/placement/placement_model.cpp — PlacementModel: tiles x lanes, drops as undoable edits, and the
// engine's estimate asked for after every change. GUI thread only.
#include "ui/placement/placement_model.h"

#include <QBrush>
#include <QColor>
#include <QJsonDocument>
#include <QMimeData>

#include <algorithm>

#include "ui/placement/gpu_offload.h"
#include "ui/devices/memory_bar.h"
#include "ui/theme/contrast.h"

namespace strata::ui {

namespace {

QColor layerColor(int tile, int tiles) {
  const int hue = tiles > 0 ? (tile * 300 / std::max(tiles, 1)) % 360 : 0;
  return QColor::fromHsv(hue, 60, 245);
}

}  // namespace

PlacementModel::PlacementModel(QObject* parent) : QAbstractTableModel(parent), undo_(new QUndoStack(this)) {}

int PlacementModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }

int PlacementModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : 1 + static_cast<int>(devices_.size() + groups_.size());
}

Lane PlacementModel::lane(int column) const {
  Lane l;
  if (column <= 0 || column >= columnCount()) return l;
  if (column <= devices_.size()) {
    l.kind = Lane::Kind::Device;
    l.target.devices = QStringList{devices_[column - 1].id};
  } else {
    l.kind = Lane::Kind::Group;
    l.target = groups_[column - 1 - devices_.size()];
  }
  return l;
}

int PlacementModel::laneOfDevice(const QString& id) const {
  for (int i = 0; i < devices_.size(); ++i)
    if (devices_[i].id == id) return i + 1;
  return -1;
}

QStringList PlacementModel::deviceIds() const {
  QStringList ids;
  for (const DeviceSpec& d : devices_) ids << d.id;
  return ids;
}

QVariant PlacementModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const TileRow row = rows_.value(index.row());
  const int tile = row.tile;
  const int n = model_.nLayers;
  const int layer = row.layer(n);
  const PlacementData& p = shown();
  const LayerTarget block = p.layers.value(layer);
  LayerTarget target;  // where this row's tile or part runs
  quint64 bytes = model_.tileBytes(tile);
  if (tile == 0) {
    target.devices = {p.embeddingDevice};
  } else if (tile == n + 1) {
    target.devices = {p.headDevice};
  } else if (row.part == BlockPart::Ffn) {
    target = ffnTargetOf(block);
    bytes = model_.ffnBytes(layer);
  } else if (row.part == BlockPart::Experts) {
    const QString device = expertsDevice(block, model_.nExpert, row.expertBegin, row.expertEnd);
    target = device.isEmpty() ? ffnTargetOf(block) : LayerTarget{{device}, {}, {}, {}, {}};
    bytes = model_.expertsBytes(layer, row.expertBegin, row.expertEnd);
  } else {
    target = block;
    if (row.part == BlockPart::Attention) bytes = model_.attentionBytes(layer);
  }

  const Lane l = lane(index.column());
  bool placed = false;
  double share = 0;  // of the tile's split ratio, as the user set it (the engine splits by whole heads)
  QStringList partsHere;  // a whole block's parts on this device lane, apart from its target
  if (l.kind == Lane::Kind::Device) {
    const QString id = l.target.devices.first();
    const int member = static_cast<int>(target.devices.indexOf(id));
    placed = target.devices.size() == 1 && member == 0;
    if (member >= 0) share = placed ? 1.0 : target.fraction(member);
    if (row.part == BlockPart::Whole && layer >= 0 && block.hasParts()) {
      if (block.ffnDevice == id) partsHere << QStringLiteral("ffn");
      for (const ExpertRange& r : resolvedExperts(block, model_.nExpert))  // (with the FFN part when not placed)
        if (r.device == id)
          partsHere << (r.begin == 0 && r.end == model_.nExpert ? QStringLiteral("experts")
                                                                 : QStringLiteral("experts %1-%2").arg(r.begin).arg(r.end - 1));
      if (placed) partsHere.clear();  // the target's lane shows the block
    }
  } else if (l.kind == Lane::Kind::Group) {
    placed = target.isGroup() && target.sameTarget(l.target);
    share = placed ? 1.0 : 0.0;
  }
  const QColor colour = layerColor(tile, tileCount());

  switch (role) {
    case Qt::DisplayRole:
      if (index.column() == 0)
        return row.part == BlockPart::Whole && expanded_.contains(layer) ? QStringLiteral("▾ ") + row.label(n) : row.label(n);
      if (placed) return QStringLiteral("%1  %2").arg(row.label(n), formatBytes(bytes));
      if (share > 0) return QStringLiteral("%1  %2% of a split").arg(row.label(n)).arg(qRound(share * 100));
      if (!partsHere.isEmpty()) return QStringLiteral("%1  %2").arg(row.label(n), partsHere.join(QStringLiteral(", ")));
      return {};
    case Qt::ToolTipRole: {
      QString tip = QStringLiteral("%1: %2 on %3%4")
                        .arg(row.label(n), formatBytes(bytes), target.label(),
                             row.part == BlockPart::Ffn || row.part == BlockPart::Experts || target.kvDevice.isEmpty()
                                 ? QString()
                                 : QStringLiteral(", KV on ") + target.kvDevice);
      if (row.part == BlockPart::Whole && layer >= 0 && block.hasParts()) {
        tip += QStringLiteral("; ffn on %1").arg(ffnTargetOf(block).label());
        for (const ExpertRange& r : resolvedExperts(block, model_.nExpert))
          tip += QStringLiteral(", experts %1-%2 on %3").arg(r.begin).arg(r.end - 1).arg(r.device);
      }
      if (index.column() == 0 && row.part == BlockPart::Whole && layer >= 0)
        tip += expanded_.contains(layer) ? QStringLiteral(" (double-click: hide its parts)")
                                         : QStringLiteral(" (double-click: show its parts)");
      return tip;
    }
    case Qt::BackgroundRole:
      if (index.column() == 0 || placed) return QBrush(colour);
      if (share > 0 || !partsHere.isEmpty()) return QBrush(colour.lighter(110));
      return {};
    case Qt::ForegroundRole:  // pastel tiles in every theme: dark text on them, not the palette's
      if (index.column() == 0 || placed) return QBrush(textOn(colour));
      if (share > 0 || !partsHere.isEmpty()) return QBrush(textOn(colour.lighter(110)));
      return {};
    case TileKindRole:
      return tile == 0 ? QStringLiteral("embedding") : tile == n + 1 ? QStringLiteral("head") : QStringLiteral("block");
    case LayerRole: return layer;
    case TileBytesRole: return bytes;
    case TargetRole: return target.label();
    case PlacedRole: return placed;
    case ShareRole: return share;
    case TileRole: return tile;
    case PartRole: return partName(row.part);
    case ExpertBeginRole: return row.expertBegin;
    case ExpertEndRole: return row.expertEnd;
    case ExpandedRole: return row.part == BlockPart::Whole && expanded_.contains(layer);
    case PartsHereRole: return partsHere;
    default: return {};
  }
}

QVariant PlacementModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation == Qt::Vertical) {
    if (section < 0 || section >= rowCount()) return {};
    return role == Qt::DisplayRole ? QVariant(rows_[section].label(model_.nLayers)) : QVariant();
  }
  if (section < 0 || section >= columnCount()) return {};
  const Lane l = lane(section);
  const bool isDevice = l.kind == Lane::Kind::Device;
  const DeviceSpec* dev = isDevice ? &devices_[section - 1] : nullptr;
  const DeviceMemoryEstimate mem = isDevice ? memoryOf(dev->id) : DeviceMemoryEstimate{};
  switch (role) {
    case Qt::DisplayRole:
      if (!isDevice) return l.label();
      // One fact a line, so that a narrow lane shows each whole ("gpu1 1.0 GiB (simulated" was cut).
      return QStringLiteral("%1\n%2%3").arg(dev->id, formatBytes(dev->capacity),
                                             dev->simulated ? QStringLiteral("\nsimulated") : QString());
    case Qt::ToolTipRole:
      if (!isDevice) return l.kind == Lane::Kind::Group ? QStringLiteral("drop blocks here to split their tensors")
                                                        : QStringLiteral("the model's tiles: drag them onto a lane");
      return QStringLiteral("%1 (%2): weights %3 (attention %4, ffn %5%6), KV %7, scratch %8, overhead %9 = %10 of %11%12")
          .arg(dev->id, dev->name, formatBytes(mem.weights), formatBytes(mem.attention), formatBytes(mem.ffn),
               model_.isMoe() ? QStringLiteral(", experts ") + formatBytes(mem.experts) : QString(), formatBytes(mem.kv),
               formatBytes(mem.scratch), formatBytes(mem.overhead))
          .arg(formatBytes(mem.total), formatBytes(mem.capacity),
               mem.fits ? QString() : QStringLiteral(": short ") + formatBytes(mem.shortfall));
    case Qt::ForegroundRole:
      return isDevice && !mem.fits ? QVariant(QBrush(QColor(0xc0, 0x20, 0x20))) : QVariant();
    case LaneKindRole:
      return l.kind == Lane::Kind::Model ? QStringLiteral("model") : isDevice ? QStringLiteral("device") : QStringLiteral("group");
    case LaneDevicesRole: return l.target.devices;
    case LaneSimulatedRole: return dev ? dev->simulated : false;
    case LaneWeightsRole: return mem.weights;
    case LaneKvRole: return mem.kv;
    case LaneScratchRole: return mem.scratch;
    case LaneOverheadRole: return mem.overhead;
    case LaneTotalRole: return mem.total;
    case LaneCapacityRole: return mem.capacity;
    case LaneFitsRole: return mem.fits;
    case LaneShortfallRole: return mem.shortfall;
    case LaneAttentionRole: return mem.attention;
    case LaneFfnRole: return mem.ffn;
    case LaneExpertsRole: return mem.experts;
    default: return {};
  }
}

Qt::ItemFlags PlacementModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::ItemIsDropEnabled;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDropEnabled;
  if (index.column() == 0 || data(index, PlacedRole).toBool() || data(index, ShareRole).toDouble() > 0)
    f |= Qt::ItemIsDragEnabled;
  return f;
}

QHash<int, QByteArray> PlacementModel::roleNames() const {
  QHash<int, QByteArray> r = QAbstractTableModel::roleNames();
  r.insert({{TileKindRole, "tileKind"}, {LayerRole, "layer"}, {TileBytesRole, "tileBytes"}, {TargetRole, "target"},
            {PlacedRole, "placed"}, {ShareRole, "share"}, {LaneKindRole, "laneKind"},
            {LaneDevicesRole, "laneDevices"}, {LaneSimulatedRole, "laneSimulated"}, {LaneWeightsRole, "laneWeights"},
            {LaneKvRole, "laneKv"}, {LaneScratchRole, "laneScratch"}, {LaneOverheadRole, "laneOverhead"},
            {LaneTotalRole, "laneTotal"}, {LaneCapacityRole, "laneCapacity"}, {LaneFitsRole, "laneFits"},
            {LaneShortfallRole, "laneShortfall"}, {TileRole, "tile"}, {PartRole, "part"},
            {ExpertBeginRole, "expertBegin"}, {ExpertEndRole, "expertEnd"}, {ExpandedRole, "expanded"},
            {PartsHereRole, "partsHere"}, {LaneAttentionRole, "laneAttention"}, {LaneFfnRole, "laneFfn"},
            {LaneExpertsRole, "laneExperts"}});
  return r;
}

QStringList PlacementModel::mimeTypes() const { return {QString::fromLatin1(kMimeType)}; }

QMimeData* PlacementModel::makeMime(int firstTile, int lastTile, BlockPart part, int expertBegin, int expertEnd) {
  auto* mime = new QMimeData;
  QJsonObject payload{{"first_tile", firstTile}, {"last_tile", lastTile}};
  if (part != BlockPart::Whole) payload.insert(QStringLiteral("part"), partName(part));
  if (part == BlockPart::Experts) payload.insert(QStringLiteral("experts"), QJsonArray{expertBegin, expertEnd});
  mime->setData(QString::fromLatin1(kMimeType), QJsonDocument(payload).toJson(QJsonDocument::Compact));
  return mime;
}

QMimeData* PlacementModel::mimeData(const QModelIndexList& indexes) const {
  // Rows of one part (the same expert range for experts) drag that part of the blocks they span;
  // anything else drags the tiles spanned, whole.
  int first = -1, last = -1;
  std::optional<TileRow> part;
  bool onePart = true;
  for (const QModelIndex& i : indexes) {
    if (!i.isValid() || i.row() >= rows_.size()) continue;
    const TileRow r = rows_[i.row()];
    first = first < 0 ? r.tile : std::min(first, r.tile);
    last = std::max(last, r.tile);
    if (!part) part = r;
    onePart = onePart && r.part != BlockPart::Whole && r.part == part->part &&
              (r.part != BlockPart::Experts || (r.expertBegin == part->expertBegin && r.expertEnd == part->expertEnd));
  }
  if (first < 0) return nullptr;
  return onePart ? makeMime(first, last, part->part, part->expertBegin, part->expertEnd) : makeMime(first, last);
}

PlacementEdit PlacementModel::editFromMime(const QMimeData* data, int column, QString* error) const {
  PlacementEdit e;
  e.firstTile = e.lastTile = -1;
  if (!data || !data->hasFormat(QString::fromLatin1(kMimeType))) {
    if (error) *error = QStringLiteral("not layer tiles");
    return e;
  }
  const QJsonObject o = QJsonDocument::fromJson(data->data(QString::fromLatin1(kMimeType))).object();
  e.firstTile = o.value(QLatin1String("first_tile")).toInt(-1);
  e.lastTile = o.value(QLatin1String("last_tile")).toInt(-1);
  e.part = partFromName(o.value(QLatin1String("part")).toString());
  e.expertBegin = o.value(QLatin1String("experts")).toArray().at(0).toInt();
  e.expertEnd = o.value(QLatin1String("experts")).toArray().at(1).toInt();
  e.nExpert = model_.nExpert;
  e.lane = lane(column);
  if (error) {
    *error = column < 0 || column >= columnCount() ? QStringLiteral("drop onto a lane (column %1 does not exist)").arg(column)
                                                   : validateEdit(e, placement_, model_, deviceIds());
  }
  return e;
}

bool PlacementModel::canDropMimeData(const QMimeData* data, Qt::DropAction, int, int column,
                                     const QModelIndex& parent) const {
  QString error;
  const PlacementEdit e = editFromMime(data, parent.isValid() ? parent.column() : column, &error);
  return error.isEmpty() && ui::applyEdit(e, placement_) != placement_;  // a drop that moves nothing is refused
}

bool PlacementModel::dropMimeData(const QMimeData* data, Qt::DropAction action, int, int column,
                                  const QModelIndex& parent) {
  // The preview ends without asking the engine about the placement before the drop: the drop's own
  // placement is what the hover showed, and its answer (in hand or on its way) serves it.
  const bool previewed = preview_.has_value();
  preview_.reset();
  bool ok = action == Qt::IgnoreAction;
  if (!ok) {
    QString error;
    const PlacementEdit e = editFromMime(data, parent.isValid() ? parent.column() : column, &error);
    if (!error.isEmpty()) {
      lastError_ = error;
      emit editRejected(error);
    } else {
      ok = applyEdit(e, &error);
    }
  }
  if (previewed && shown().toJson() != estimateFor_) recompute();  // nothing dropped: back to the placement
  return ok;
}

bool PlacementModel::applyEdit(const PlacementEdit& edit, QString* error) {
  QString why = validateEdit(edit, placement_, model_, deviceIds());
  const PlacementData next = why.isEmpty() ? ui::applyEdit(edit, placement_) : PlacementData{};
  if (why.isEmpty() && next == placement_) why = QStringLiteral("nothing moves: %1 is already there").arg(edit.description(model_.nLayers));
  if (!why.isEmpty()) {
    lastError_ = why;
    if (error) *error = why;
    emit editRejected(why);
    return false;
  }
  lastError_.clear();
  pushPlacement(next, edit.description(model_.nLayers));
  return true;
}

void PlacementModel::pushPlacement(const PlacementData& next, const QString& text) {
  undo_->push(new PlacementCommand([this](const PlacementData& p) { setPlacementData(p); }, placement_, next, text));
}

void PlacementModel::setPlacementData(const PlacementData& p) {
  ensureGroupLanes(p);
  placement_ = p;
  preview_.reset();
  syncRows();
  if (rowCount() > 0 && columnCount() > 0) emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
  recompute();
  emit placementChanged(placement_.toJson());
}

void PlacementModel::ensureGroupLanes(const PlacementData& p) {
  for (const LayerTarget& t : p.layers) {
    if (!t.isGroup()) continue;
    bool known = false;
    for (const LayerTarget& g : groups_) known = known || g.sameTarget(t);
    if (!known) addGroupLane(t.devices, t.ratio);
  }
}

int PlacementModel::addGroupLane(const QStringList& devices, const QList<double>& ratio) {
  const LayerTarget t{devices, ratio, {}, {}, {}};
  for (int i = 0; i < groups_.size(); ++i)
    if (groups_[i].sameTarget(t) && groups_[i].ratio.size() == ratio.size()) return 1 + static_cast<int>(devices_.size()) + i;
  const int column = columnCount();
  beginInsertColumns({}, column, column);
  groups_.append(t);
  endInsertColumns();
  return column;
}

bool PlacementModel::removeGroupLane(int column) {
  const Lane l = lane(column);
  if (l.kind != Lane::Kind::Group) return false;
  for (const LayerTarget& t : placement_.layers)
    if (t.isGroup() && t.sameTarget(l.target)) return false;
  beginRemoveColumns({}, column, column);
  groups_.removeAt(column - 1 - devices_.size());
  endRemoveColumns();
  return true;
}

void PlacementModel::setModelInfo(const QJsonObject& info) {
  beginResetModel();
  model_ = ModelInfo::fromJson(info);
  expanded_.clear();
  cuts_.clear();
  undo_->clear();
  preview_.reset();
  hasEstimate_ = hasCommitted_ = false;  // answers for another model
  estimate_ = EngineEstimate{};
  if (placement_.layerCount() != model_.nLayers) {
    QString first = devices_.isEmpty() ? QStringLiteral("cpu") : devices_.first().id;
    for (const DeviceSpec& d : devices_)
      if (d.kind != QLatin1String("cpu")) {
        first = d.id;
        break;
      }
    placement_ = PlacementData::allOn(first, model_.nLayers, placement_.nCtx);
    applied_ = PlacementData{};
  }
  rows_ = tileRows(placement_, model_.nExpert, expanded_, cuts_);
  endResetModel();
  recompute(true);
  emit placementChanged(placement_.toJson());
}

void PlacementModel::setDevices(const QJsonArray& devices) {
  beginResetModel();
  const QList<DeviceSpec> next = DeviceSpec::listFromJson(devices);
  const auto sameDevices = [&] {
    if (next.size() != devices_.size()) return false;
    for (int i = 0; i < next.size(); ++i)
      if (next[i].id != devices_[i].id || next[i].capacity != devices_[i].capacity) return false;
    return true;
  };
  if (!sameDevices()) {  // figures for other devices: none until the engine answers for these
    estimate_ = EngineEstimate{};
    estimateFor_ = {};
    hasEstimate_ = hasCommitted_ = false;
  }
  devices_ = next;
  preview_.reset();
  endResetModel();
  recompute(true);  // other devices (or the same ones of a restarted engine): ask again
}

QString PlacementModel::checkDevices(const PlacementData& p) const {
  const QStringList ids = deviceIds();
  auto check = [&](const QString& id, const QString& where) {
    return id.isEmpty() || ids.contains(id)
               ? QString()
               : QStringLiteral("%1: placement names device '%2', which is not among: %3")
                     .arg(where, id, ids.join(QStringLiteral(", ")));
  };
  QString e = check(p.embeddingDevice, QStringLiteral("embedding"));
  if (e.isEmpty()) e = check(p.headDevice, QStringLiteral("head"));
  for (int b = 0; e.isEmpty() && b < p.layers.size(); ++b) {
    for (const QString& d : p.layers[b].devices) e = e.isEmpty() ? check(d, QStringLiteral("layer %1").arg(b)) : e;
    if (e.isEmpty()) e = check(p.layers[b].kvDevice, QStringLiteral("layer %1").arg(b));
    if (e.isEmpty()) e = check(p.layers[b].ffnDevice, QStringLiteral("layer %1").arg(b));
    for (const ExpertRange& r : p.layers[b].experts) e = e.isEmpty() ? check(r.device, QStringLiteral("layer %1").arg(b)) : e;
  }
  return e;
}

bool PlacementModel::setPlacement(const QJsonObject& json, QString* error) {
  QString why;
  const PlacementData p = PlacementData::fromJson(json, model_.nLayers, &why);
  if (why.isEmpty()) why = checkDevices(p);
  if (!why.isEmpty()) {
    lastError_ = why;
    if (error) *error = why;
    emit editRejected(why);
    return false;
  }
  if (p != placement_) pushPlacement(p, QStringLiteral("new placement"));
  return true;
}

bool PlacementModel::resetPlacement(const QJsonObject& json, QString* error) {
  QString why;
  const PlacementData p = PlacementData::fromJson(json, model_.nLayers, &why);
  if (why.isEmpty()) why = checkDevices(p);
  if (!why.isEmpty()) {
    lastError_ = why;
    if (error) *error = why;
    return false;
  }
  undo_->clear();
  applied_ = p;
  setPlacementData(p);
  return true;
}

bool PlacementModel::setKvDeviceForAll(const QString& device) {
  if (!device.isEmpty() && !deviceIds().contains(device)) return false;
  PlacementData next = placement_;
  for (LayerTarget& t : next.layers) t.kvDevice = t.devices.size() == 1 && t.devices.first() == device ? QString() : device;
  if (next == placement_) return false;
  pushPlacement(next, device.isEmpty() ? QStringLiteral("KV with its layer") : QStringLiteral("KV on %1").arg(device));
  return true;
}

bool PlacementModel::setOffloadedBlocks(int n) {
  if (placement_.layerCount() == 0) return false;
  const PlacementData next = offloadPlacement(placement_, devices_, n);
  if (next == placement_) return false;
  pushPlacement(next, QStringLiteral("GPU offload: %1 of %2 blocks").arg(n).arg(placement_.layerCount()));
  return true;
}

int PlacementModel::offloadedBlockCount() const { return offloadedBlocks(placement_, devices_); }

bool PlacementModel::setContext(int nCtx, int nSeq) {
  if (nCtx < 1 || nCtx > (1 << 24) || nSeq < 1 || nSeq > 256) return false;
  PlacementData next = placement_;
  next.nCtx = nCtx;
  next.nSeq = nSeq;
  if (next == placement_) return false;
  pushPlacement(next, QStringLiteral("context %1 x %2").arg(nCtx).arg(nSeq));
  return true;
}

void PlacementModel::previewEdit(const PlacementEdit& edit) {
  if (!validateEdit(edit, placement_, model_, deviceIds()).isEmpty()) {
    clearPreview();
    return;
  }
  const PlacementData next = ui::applyEdit(edit, placement_);
  if (preview_ && *preview_ == next) return;
  preview_ = next;
  recompute();
}

void PlacementModel::clearPreview() {
  if (!preview_) return;
  preview_.reset();
  recompute();
}

void PlacementModel::recompute(bool force) {
  const QJsonObject want = shown().toJson();
  if (!force && hasEstimate_ && estimateFor_ == want) {
    // The answer in hand is for this placement (a drop of the placement the hover previewed).
    if (!preview_) {
      committed_ = estimate_;
      committedFor_ = want;
      hasCommitted_ = true;
    }
  } else if (model_.nLayers > 0 && !devices_.isEmpty()) {
    emit estimateWanted(want);
  }
  figuresChanged();
}

void PlacementModel::figuresChanged() {
  if (columnCount() > 1) emit headerDataChanged(Qt::Horizontal, 1, columnCount() - 1);
  emit estimateChanged();
}

void PlacementModel::takeEstimate(const QJsonObject& placement, const EngineEstimate& estimate) {
  // A late answer for a placement left behind (an undo back to one already estimated) does not
  // replace the figures of the placement shown.
  if (estimateCurrent() && placement != estimateFor_) return;
  estimate_ = estimate;
  estimateFor_ = placement;
  hasEstimate_ = true;
  unavailable_.clear();
  if (placement == placement_.toJson()) {
    committed_ = estimate;
    committedFor_ = placement;
    hasCommitted_ = true;
  }
  figuresChanged();
}

void PlacementModel::setEngineEstimate(const QJsonObject& placement, const QJsonObject& answer) {
  takeEstimate(placement, parseEstimate(answer, devices_));
}

void PlacementModel::setEstimateRejected(const QJsonObject& placement, const QString& error) {
  EngineEstimate e = parseEstimate({}, devices_);
  e.fits = false;
  e.error = error;
  takeEstimate(placement, e);
}

void PlacementModel::setEstimateUnavailable(const QString& reason) {
  unavailable_ = reason.isEmpty() ? QStringLiteral("the engine did not answer") : reason;
  estimate_ = EngineEstimate{};
  estimateFor_ = {};
  hasEstimate_ = hasCommitted_ = false;
  figuresChanged();
}

void PlacementModel::requestEstimate() { recompute(true); }

bool PlacementModel::estimateCurrent() const { return hasEstimate_ && estimateFor_ == shown().toJson(); }

DeviceMemoryEstimate PlacementModel::memoryOf(const QString& device) const {
  for (const DeviceMemoryEstimate& m : estimate_.memory)
    if (m.device == device) return m;
  DeviceMemoryEstimate none;  // not estimated (yet): nothing placed, its capacity
  none.device = device;
  for (const DeviceSpec& d : devices_)
    if (d.id == device) none.capacity = d.capacity;
  return none;
}

QString PlacementModel::applyBlocker() const {
  if (model_.nLayers <= 0) return QStringLiteral("no model loaded");
  if (!unavailable_.isEmpty()) return QStringLiteral("no estimate from the engine: ") + unavailable_;
  if (!hasCommitted_ || committedFor_ != placement_.toJson()) return QStringLiteral("waiting for the engine's estimate");
  if (!committed_.fits)
    return committed_.error.isEmpty() ? QStringLiteral("the engine says it does not fit") : committed_.error;
  if (changedTileCount() == 0) return QStringLiteral("nothing moved");
  return {};
}

QString PlacementModel::changeSummary() const {
  if (applied_.layerCount() != placement_.layerCount()) return {};
  // One entry per change: (what, bytes, to); runs of consecutive whole blocks to the same target merge.
  struct Change {
    QString what;
    int first = -1, last = -1;  // blocks of a whole-block run
    quint64 bytes = 0;
    QString to;
  };
  QList<Change> changes;
  auto add = [&](const QString& what, int layer, quint64 bytes, const QString& to) {
    if (layer >= 0 && !changes.isEmpty() && changes.last().last == layer - 1 && changes.last().to == to &&
        changes.last().what.isEmpty() && what.isEmpty()) {
      changes.last().last = layer;
      changes.last().bytes += bytes;
      return;
    }
    changes.append(Change{what, layer, layer, bytes, to});
  };
  if (applied_.embeddingDevice != placement_.embeddingDevice)
    add(tr("the embedding"), -1, model_.embeddingBytes, placement_.embeddingDevice);
  for (int l = 0; l < placement_.layerCount(); ++l) {
    const LayerTarget& a = applied_.layers[l];
    const LayerTarget& b = placement_.layers[l];
    if (a == b) continue;
    if (!a.sameTarget(b)) {
      add(QString(), l, model_.layerBytes.value(l), b.label());
      continue;
    }
    if (a.ffnDevice != b.ffnDevice)
      add(tr("blk %1 FFN part").arg(l), -1, model_.ffnBytes(l), b.ffnDevice.isEmpty() ? b.label() : b.ffnDevice);
    if (a.experts != b.experts) {
      QStringList to;
      for (const ExpertRange& r : b.experts) to << r.device;
      add(tr("blk %1 experts").arg(l), -1, 0, to.isEmpty() ? b.label() : to.join(QLatin1Char('+')));
    }
    if (a.kvDevice != b.kvDevice) add(tr("blk %1 KV cache").arg(l), -1, 0, b.kvDevice.isEmpty() ? b.label() : b.kvDevice);
  }
  if (applied_.headDevice != placement_.headDevice) add(tr("the head"), -1, model_.headBytes, placement_.headDevice);
  QStringList out;
  for (const Change& c : changes) {
    QString what = c.what;
    if (what.isEmpty()) what = c.first == c.last ? tr("blk %1").arg(c.first) : tr("blk %1–%2").arg(c.first).arg(c.last);
    out << (c.bytes > 0 ? tr("%1 (%2) to %3").arg(what, formatBytes(c.bytes), c.to) : tr("%1 to %2").arg(what, c.to));
  }
  if (applied_.nCtx != placement_.nCtx || applied_.nSeq != placement_.nSeq)
    out << tr("context %1 × %2").arg(placement_.nCtx).arg(placement_.nSeq);
  return out.join(QStringLiteral("; "));
}

int PlacementModel::changedTileCount() const {
  if (applied_.layerCount() != placement_.layerCount()) return tileCount();
  return changedTiles(applied_, placement_) + (applied_.nCtx != placement_.nCtx || applied_.nSeq != placement_.nSeq ? 1 : 0);
}

void PlacementModel::markApplied() {
  applied_ = placement_;
  emit estimateChanged();
}

}  // namespace strata::ui
