// ui/devices/device_model.cpp — DeviceModel: parses the engine's device, status and trace-memory JSON.
// GUI thread only; no HTTP.
#include "ui/devices/device_model.h"

#include <algorithm>

namespace strata::ui {

namespace {

quint64 bytesOf(const QJsonValue& v) {
  const double d = v.toDouble(0.0);
  return d > 0 ? static_cast<quint64>(d) : 0;
}

// What a row's hover says: why it failed (first), the memory breakdown, and what kind of device it is:
// number, compute capability and peer access for a device with peer access (a GPU; caps.peer_access),
// "simulated" for a simulated one.
QString deviceToolTip(const DeviceRow& d) {
  const MemoryBreakdown& m = d.memory;
  QStringList lines;
  if (d.failed)
    lines << QStringLiteral("%1 failed: %2").arg(d.id, d.failure.isEmpty() ? QStringLiteral("no reason given") : d.failure);
  lines << QStringLiteral("%1 — %2 of %3 used; weights %4, KV %5 / %6, scratch %7, other %8, free %9")
               .arg(d.id, formatBytes(m.usedBytes()), formatBytes(m.capacity), formatBytes(m.weights),
                    formatBytes(m.kvUsed), formatBytes(m.kvReserved), formatBytes(m.scratch), formatBytes(m.other),
                    formatBytes(m.freeBytes()));
  if (d.peerAccess) {
    const QString kind = d.kind.toUpper();
    QString cuda = d.ordinal >= 0 ? QStringLiteral("%1 device %2").arg(kind).arg(d.ordinal) : QStringLiteral("%1 device").arg(kind);
    if (!d.computeCapability.isEmpty()) cuda += QStringLiteral(", compute capability %1").arg(d.computeCapability);
    lines << cuda;
    lines << (d.peers.isEmpty() ? QStringLiteral("peer access: none")
                                : QStringLiteral("peer access: %1").arg(d.peers.join(QLatin1String(", "))));
  }
  if (!d.host.isEmpty()) lines << QStringLiteral("rank %1 of the engine, on host %2").arg(d.rank).arg(d.host);
  if (d.simulated) lines << QStringLiteral("simulated: declared memory and speeds, run on this machine's CPU");
  return lines.join(QLatin1Char('\n'));
}

}  // namespace

DeviceModel::DeviceModel(QObject* parent) : QAbstractListModel(parent) {}

int DeviceModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : rows_.size(); }

int DeviceModel::rowOf(const QString& id) const {
  for (int i = 0; i < rows_.size(); ++i)
    if (rows_[i].id == id) return i;
  return -1;
}

QVariant DeviceModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const DeviceRow& d = rows_.at(index.row());
  const MemoryBreakdown& m = d.memory;
  switch (role) {
    case Qt::DisplayRole: {
      QString text = d.name.isEmpty() ? d.id : d.name;
      // Several engine processes: every rank has a "CPU"; the rank tells them apart.
      if (!d.host.isEmpty()) text = QStringLiteral("r%1: %2").arg(d.rank).arg(text);
      if (d.simulated && !text.contains(QLatin1String("simulated"))) text += QStringLiteral(" (simulated)");
      if (d.failed) text += QStringLiteral(" (failed)");
      return text;
    }
    case Qt::ToolTipRole: return deviceToolTip(d);
    case IdRole: return d.id;
    case NameRole: return d.name;
    case KindRole: return d.kind;
    case SimulatedRole: return d.simulated;
    case CapacityRole: return m.capacity;
    case WeightsRole: return m.weights;
    case KvUsedRole: return m.kvUsed;
    case KvReservedRole: return m.kvReserved;
    case ScratchRole: return m.scratch;
    case OtherRole: return m.other;
    case FreeRole: return m.freeBytes();
    case UsedFractionRole:
      return m.capacity > 0 ? static_cast<double>(m.usedBytes()) / static_cast<double>(m.capacity) : 0.0;
    case BandwidthRole: return d.bandwidthGbps;
    case ComputeCapabilityRole: return d.computeCapability;
    case OrdinalRole: return d.ordinal;
    case PeersRole: return d.peers;
    case FailedRole: return d.failed;
    case FailureRole: return d.failure;
    case RankRole: return d.rank;
    case HostRole: return d.host;
    default: return {};
  }
}

QHash<int, QByteArray> DeviceModel::roleNames() const {
  QHash<int, QByteArray> names = QAbstractListModel::roleNames();
  names.insert({{IdRole, "deviceId"}, {NameRole, "name"}, {KindRole, "kind"}, {SimulatedRole, "simulated"},
                {CapacityRole, "capacity"}, {WeightsRole, "weights"}, {KvUsedRole, "kvUsed"},
                {KvReservedRole, "kvReserved"}, {ScratchRole, "scratch"}, {OtherRole, "other"},
                {FreeRole, "free"}, {UsedFractionRole, "usedFraction"}, {BandwidthRole, "bandwidthGbps"},
                {ComputeCapabilityRole, "computeCapability"}, {OrdinalRole, "ordinal"}, {PeersRole, "peers"},
                {FailedRole, "failed"}, {FailureRole, "failure"}, {RankRole, "rank"}, {HostRole, "host"}});
  return names;
}

void DeviceModel::setDevices(const QJsonArray& devices) {
  QList<DeviceRow> next;
  for (const QJsonValue& v : devices) {
    const QJsonObject o = v.toObject();
    DeviceRow d;
    d.id = o.value(QLatin1String("id")).toString();
    if (d.id.isEmpty()) continue;
    const int old = rowOf(d.id);
    if (old >= 0) d.memory = rows_[old].memory;
    d.name = o.value(QLatin1String("name")).toString(d.id);
    d.kind = o.value(QLatin1String("kind")).toString();
    d.simulated = o.value(QLatin1String("simulated")).toBool(d.kind == QLatin1String("sim"));
    d.bandwidthGbps = o.value(QLatin1String("bandwidth_gbps")).toDouble();
    d.computeCapability = o.value(QLatin1String("compute_capability")).toString();
    d.ordinal = o.value(QLatin1String("ordinal")).toInt(-1);
    d.peerAccess = o.value(QLatin1String("caps")).toObject().value(QLatin1String("peer_access")).toBool(false);
    for (const QJsonValue& peer : o.value(QLatin1String("peers")).toArray())
      if (!peer.toString().isEmpty() && peer.toString() != d.id) d.peers.append(peer.toString());
    d.failed = o.value(QLatin1String("failed")).toBool(false);
    if (d.failed) d.failure = o.value(QLatin1String("failure")).toString();
    d.rank = o.value(QLatin1String("rank")).toInt(0);
    d.host = o.value(QLatin1String("host")).toString();
    d.memory.capacity = bytesOf(o.value(QLatin1String("bytes_total")));
    if (old < 0 && o.contains(QLatin1String("bytes_free"))) {
      // Before any status: what is not free is "other" (used by someone, not by a known part).
      const quint64 freeBytes = bytesOf(o.value(QLatin1String("bytes_free")));
      d.memory.free = freeBytes;
      d.memory.other = d.memory.capacity > freeBytes ? d.memory.capacity - freeBytes : 0;
    }
    next.append(d);
  }
  bool sameIds = next.size() == rows_.size();
  for (int i = 0; sameIds && i < next.size(); ++i) sameIds = next[i].id == rows_[i].id;
  if (sameIds) {
    rows_ = next;
    if (!rows_.isEmpty()) emit dataChanged(index(0), index(rows_.size() - 1));
    return;
  }
  beginResetModel();
  rows_ = next;
  endResetModel();
}

void DeviceModel::setStatus(const QJsonObject& status) {
  for (const QJsonValue& v : status.value(QLatin1String("memory")).toArray()) {
    const QJsonObject o = v.toObject();
    const int row = rowOf(o.value(QLatin1String("device")).toString());
    if (row < 0) continue;
    MemoryBreakdown& m = rows_[row].memory;
    m.weights = bytesOf(o.value(QLatin1String("weights")));
    m.kvReserved = bytesOf(o.value(QLatin1String("kv")));
    m.kvUsed = std::min(m.kvUsed, m.kvReserved);
    m.scratch = bytesOf(o.value(QLatin1String("scratch")));
    m.other = bytesOf(o.value(QLatin1String("overhead")));
    if (o.contains(QLatin1String("capacity"))) m.capacity = bytesOf(o.value(QLatin1String("capacity")));
    m.free = 0;  // derived from the capacity until a snapshot reports it
    emitRowChanged(row);
  }
  // A device the engine lost (a sticky error, a hang, an injected fault) is marked at once; only a
  // new device list (setDevices, e.g. after an engine restart) can bring it back.
  for (const QJsonValue& v : status.value(QLatin1String("lost_devices")).toArray()) {
    const QJsonObject o = v.toObject();
    const int row = rowOf(o.value(QLatin1String("device")).toString());
    if (row < 0 || rows_[row].failed) continue;
    rows_[row].failed = true;
    rows_[row].failure = o.value(QLatin1String("failure")).toString();
    emitRowChanged(row);
  }
}

void DeviceModel::applyMemorySnapshot(const QJsonObject& batch) {
  if (batch.contains(QLatin1String("lanes")) || batch.contains(QLatin1String("memory"))) {
    for (const QJsonValue& v : batch.value(QLatin1String("lanes")).toArray()) {
      const QJsonObject lane = v.toObject();
      laneNames_.insert(lane.value(QLatin1String("id")).toInt(), lane.value(QLatin1String("name")).toString());
    }
    for (const QJsonValue& v : batch.value(QLatin1String("memory")).toArray()) {
      const QJsonObject s = v.toObject();
      applyOne(laneNames_.value(s.value(QLatin1String("lane")).toInt(-1)), s);
    }
    return;
  }
  QString device = batch.value(QLatin1String("device")).toString();
  if (device.isEmpty()) device = batch.value(QLatin1String("lane_name")).toString();
  if (device.isEmpty()) device = laneNames_.value(batch.value(QLatin1String("lane")).toInt(-1));
  applyOne(device, batch);
}

void DeviceModel::applyOne(const QString& deviceId, const QJsonObject& s) {
  const int row = rowOf(deviceId);
  if (row < 0) return;
  const qint64 t = static_cast<qint64>(s.value(QLatin1String("time_ns")).toDouble(0));
  auto last = lastSnapshotNs_.find(deviceId);
  if (last != lastSnapshotNs_.end() && t < *last) return;  // an older snapshot than the one shown
  lastSnapshotNs_.insert(deviceId, t);
  MemoryBreakdown& m = rows_[row].memory;
  m.weights = bytesOf(s.value(QLatin1String("weights")));
  m.kvUsed = bytesOf(s.value(QLatin1String("kv_used")));
  m.kvReserved = std::max(m.kvUsed, bytesOf(s.value(QLatin1String("kv_reserved"))));
  m.scratch = bytesOf(s.value(QLatin1String("scratch")));
  m.other = bytesOf(s.value(QLatin1String("other")));
  m.free = bytesOf(s.value(QLatin1String("free")));
  if (s.contains(QLatin1String("total")) && bytesOf(s.value(QLatin1String("total"))) > 0)
    m.capacity = bytesOf(s.value(QLatin1String("total")));
  emitRowChanged(row);
}

void DeviceModel::emitRowChanged(int row) {
  const QModelIndex i = index(row);
  emit dataChanged(i, i);
}

}  // namespace strata::ui
