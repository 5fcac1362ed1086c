// ui/devices/device_model.h — one row per engine device with its live memory use, fed with the
// JSON of /strata/v1/devices, /strata/v1/status and trace-stream batches. GUI thread only; no HTTP.
#pragma once

#include <QAbstractListModel>
#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QStringList>

#include "ui/devices/memory_bar.h"

namespace strata::ui {

struct DeviceRow {
  QString id;             // as used in placements: "cpu", "gpu0", "cuda0"
  QString name;           // human: "NVIDIA H200", "sim-gpu0 24 GiB (simulated)"
  QString kind;           // "cpu" | "sim" | "cuda"
  bool simulated = false;
  double bandwidthGbps = 0;
  MemoryBreakdown memory;  // capacity and use, bytes
  // Real GPUs only (empty / -1 elsewhere):
  QString computeCapability;  // "9.0"
  int ordinal = -1;           // the device's number in its backend (CUDA ordinal)
  bool peerAccess = false;    // caps.peer_access: copies straight to its backend's other devices (GPUs)
  QStringList peers;          // ids of the devices whose memory this one reaches directly
  bool failed = false;        // met a sticky error; the engine no longer uses it
  QString failure;            // why
  // Under mpirun (several engine processes): the rank owning the device and its host ("" in one
  // process, where every device is rank 0's). The id then carries the rank too ("r1:cpu").
  int rank = 0;
  QString host;
};

class DeviceModel : public QAbstractListModel {
  Q_OBJECT
 public:
  enum Roles {
    IdRole = Qt::UserRole + 1,
    NameRole,
    KindRole,
    SimulatedRole,
    CapacityRole,      // quint64 bytes
    WeightsRole,       // quint64 bytes
    KvUsedRole,
    KvReservedRole,
    ScratchRole,
    OtherRole,
    FreeRole,          // quint64 bytes (reported, else capacity - used)
    UsedFractionRole,  // double 0..1 (may exceed 1 when over capacity)
    BandwidthRole,     // double GB/s
    ComputeCapabilityRole,  // QString "9.0"; "" for devices that are not CUDA devices
    OrdinalRole,            // int CUDA device number, -1 elsewhere
    PeersRole,              // QStringList: ids of the devices with peer access from this one
    FailedRole,             // bool
    FailureRole,            // QString: why it failed ("" unless failed)
    RankRole,               // int: the engine process (mpirun rank) owning the device; 0 in one process
    HostRole,               // QString: that process's host name; "" in one process
  };
  Q_ENUM(Roles)

  explicit DeviceModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QHash<int, QByteArray> roleNames() const override;

  const DeviceRow& device(int row) const { return rows_.at(row); }
  int rowOf(const QString& id) const;  // -1 when unknown

 public slots:
  // /strata/v1/devices "devices": [{id, kind, name, simulated, bytes_total, bytes_free, bandwidth_gbps,
  // compute_capability, ordinal, peers, failed, failure, ...}].
  // Replaces the rows (kept rows keep their memory figures); a device list of the same ids updates in place.
  void setDevices(const QJsonArray& devices);
  // /strata/v1/status: its "memory": [{device, weights, kv, scratch, overhead, total, capacity}].
  // kv counts as reserved; KV used is kept from the last trace snapshot (capped at reserved).
  // Its "lost_devices": [{device, failure}] marks those rows failed (FailedRole, FailureRole).
  void setStatus(const QJsonObject& status);
  // A trace-stream batch ({lanes:[{id,name,simulated}], memory:[{lane, weights, kv_used, kv_reserved,
  // scratch, other, free, total}]}) or one memory entry with a "device" (or "lane" + "lane_name") key.
  // The newest snapshot per lane wins; lanes map to devices by name. Unknown devices are ignored.
  void applyMemorySnapshot(const QJsonObject& batchOrSnapshot);

 private:
  void applyOne(const QString& deviceId, const QJsonObject& snapshot);
  void emitRowChanged(int row);

  QList<DeviceRow> rows_;
  QHash<int, QString> laneNames_;  // trace lane id -> lane name (= device id)
  QHash<QString, qint64> lastSnapshotNs_;
};

}  // namespace strata::ui
