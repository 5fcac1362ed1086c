// ui/placement/gpu_offload.cpp — the GPU-offload arithmetic of gpu_offload.h.
#include "ui/placement/gpu_offload.h"

#include <algorithm>

#include <QCoreApplication>
#include <QStringList>

namespace strata::ui {

namespace {
bool isHostCpu(const DeviceSpec& d) { return d.kind == QLatin1String("cpu") || (d.kind.isEmpty() && d.id == QLatin1String("cpu")); }
}  // namespace

QList<DeviceSpec> accelerators(const QList<DeviceSpec>& devices) {
  QList<DeviceSpec> out;
  for (const DeviceSpec& d : devices)
    if (!isHostCpu(d)) out << d;
  return out;
}

int offloadedBlocks(const PlacementData& p, const QList<DeviceSpec>& devices) {
  QStringList ids;
  for (const DeviceSpec& d : accelerators(devices)) ids << d.id;
  int n = 0;
  for (const LayerTarget& t : p.layers)
    if (std::any_of(t.devices.begin(), t.devices.end(), [&](const QString& id) { return ids.contains(id); })) ++n;
  return n;
}

PlacementData offloadPlacement(const PlacementData& base, const QList<DeviceSpec>& devices, int n) {
  const QList<DeviceSpec> accel = accelerators(devices);
  const auto cpu = std::find_if(devices.begin(), devices.end(), isHostCpu);
  if (accel.isEmpty() || cpu == devices.end()) return base;
  const int total = base.layerCount();
  n = std::clamp(n, 0, total);
  double capacity = 0;
  for (const DeviceSpec& d : accel) capacity += double(d.capacity);
  PlacementData p = base;
  const int firstOff = total - n;
  for (int i = 0; i < total; ++i) {
    LayerTarget t;
    if (i < firstOff) {
      t.devices = {cpu->id};
    } else {
      const int b = i - firstOff;
      double cum = 0;
      int k = 0;
      for (; k < accel.size(); ++k) {
        cum += capacity > 0 ? double(accel[k].capacity) / capacity : 1.0 / double(accel.size());
        if (cum > double(b) / double(n) + 1e-12) break;
      }
      t.devices = {accel[std::min<int>(k, int(accel.size()) - 1)].id};
    }
    p.layers[i] = t;
  }
  const bool all = n == total && total > 0;
  p.embeddingDevice = all ? p.layers.first().devices.first() : cpu->id;
  p.headDevice = all ? p.layers.last().devices.first() : cpu->id;
  return p;
}

QString cpuFallbackNotice(const PlacementData& p, const QList<DeviceSpec>& devices) {
  const QList<DeviceSpec> accel = accelerators(devices);
  const int total = p.layerCount();
  if (accel.isEmpty() || total == 0) return {};
  const int off = offloadedBlocks(p, devices);
  if (off == total) return {};
  QStringList names;
  for (const DeviceSpec& d : accel) names << d.id;
  const QString gpus = names.join(QStringLiteral(", "));
  if (off == 0)
    return QCoreApplication::translate("GpuOffload", "The model runs on the CPU: no block is on %1. A smaller "
                                                     "context or quantization may fit them (Placement tab).")
        .arg(gpus);
  return QCoreApplication::translate("GpuOffload", "%1 of %2 blocks run on the CPU and %3 on %4. A smaller context "
                                                   "or quantization may fit more on the GPUs (Placement tab, GPU offload).")
      .arg(total - off)
      .arg(total)
      .arg(off)
      .arg(gpus);
}

}  // namespace strata::ui
