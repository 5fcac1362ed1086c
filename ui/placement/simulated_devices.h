// ui/placement/simulated_devices.h — planning mode: the user declares simulated devices (name,
// memory, bandwidth) or picks common GPUs; the result is a --devices spec string for the engine and
// the same device JSON as /strata/v1/devices for planning offline. No HTTP.
#pragma once

#include <QJsonArray>
#include <QList>
#include <QString>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QTableWidget;

namespace strata::ui {

struct GpuPreset {
  QString model;         // "RTX 4090"
  quint64 bytes;         // memory
  double bandwidthGbps;  // GB/s (1e9 B/s)
  double tflops;         // dense FP16 tensor rate, 1e12 FLOP/s (approximate)
};
const QList<GpuPreset>& gpuPresets();

struct SimulatedDeviceSpec {
  QString id;            // "gpu0"; letters, digits, '-', '_'
  quint64 bytes = 0;
  double bandwidthGbps = 0;
  double tflops = 0;     // 0: not declared
  QString label;         // preset name, for display
};

// "24GiB", "512MiB", "1000B": the largest binary unit that divides exactly.
QString formatSpecBytes(quint64 bytes);
// "cpu,sim:gpu0:24GiB:bw=1008GB/s:tflops=82.6,..." (cpu first when includeCpu), the engine's
// --devices syntax. Empty string and *error set when an id is empty, not [A-Za-z0-9_-]+, "cpu",
// or used twice, or a device has no memory.
QString devicesSpec(const QList<SimulatedDeviceSpec>& devices, bool includeCpu, QString* error = nullptr);
// The same devices as /strata/v1/devices JSON (kind "sim", simulated true); the CPU with
// cpuBytes and cpuBandwidthGbps when includeCpu.
QJsonArray devicesJson(const QList<SimulatedDeviceSpec>& devices, bool includeCpu, quint64 cpuBytes = 64ull << 30,
                       double cpuBandwidthGbps = 50.0);

class SimulatedDevicesWidget : public QWidget {
  Q_OBJECT
 public:
  explicit SimulatedDevicesWidget(QWidget* parent = nullptr);

  QList<SimulatedDeviceSpec> devices() const;
  bool includeCpu() const;
  QString spec(QString* error = nullptr) const { return devicesSpec(devices(), includeCpu(), error); }

 public slots:
  void addPreset(int presetIndex);  // next free id gpuN
  void addDevice(const strata::ui::SimulatedDeviceSpec& device);
  void removeSelected();
  void clear();
  void declare();  // emits devicesDeclared + devicesJsonChanged, or declareFailed

 signals:
  void devicesDeclared(const QString& devicesSpec);    // for the shell: restart the engine with --devices
  void devicesJsonChanged(const QJsonArray& devices);  // for the editor: plan offline at once
  void declareFailed(const QString& reason);

 private:
  QString nextId() const;

  QTableWidget* table_;
  QComboBox* presets_;
  QCheckBox* cpu_;
};

}  // namespace strata::ui

Q_DECLARE_METATYPE(strata::ui::SimulatedDeviceSpec)
