// ui/placement/simulated_devices.cpp — presets, the --devices spec writer and the declare widget.
#include "ui/placement/simulated_devices.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonObject>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QSet>
#include <QTableWidget>
#include <QVBoxLayout>

namespace strata::ui {

namespace {
constexpr quint64 GiB = 1ull << 30;
enum Column { IdColumn, MemoryColumn, BandwidthColumn, TflopsColumn, LabelColumn, ColumnCount };
}  // namespace

const QList<GpuPreset>& gpuPresets() {
  static const QList<GpuPreset> presets = {
      {"RTX 4090", 24 * GiB, 1008, 165}, {"RTX 4080", 16 * GiB, 717, 97},   {"RTX 3090", 24 * GiB, 936, 71},
      {"RTX 3060", 12 * GiB, 360, 25},   {"RTX 4060 Ti 16 GB", 16 * GiB, 288, 44},
      {"L4", 24 * GiB, 300, 121},        {"A100 80 GB", 80 * GiB, 2039, 312},
      {"H100 SXM", 80 * GiB, 3350, 989}, {"H200", 141 * GiB, 4800, 989}};
  return presets;
}

QString formatSpecBytes(quint64 bytes) {
  if (bytes > 0 && bytes % GiB == 0) return QStringLiteral("%1GiB").arg(bytes / GiB);
  if (bytes > 0 && bytes % (1ull << 20) == 0) return QStringLiteral("%1MiB").arg(bytes >> 20);
  return QStringLiteral("%1B").arg(bytes);
}

QString devicesSpec(const QList<SimulatedDeviceSpec>& devices, bool includeCpu, QString* error) {
  static const QRegularExpression idPattern(QStringLiteral("^[A-Za-z0-9_-]+$"));
  QStringList parts;
  if (includeCpu) parts << QStringLiteral("cpu");
  QSet<QString> seen;
  for (const SimulatedDeviceSpec& d : devices) {
    QString why;
    if (!idPattern.match(d.id).hasMatch()) why = QStringLiteral("device name '%1' must be letters, digits, '-' or '_'").arg(d.id);
    else if (d.id == QLatin1String("cpu") || seen.contains(d.id)) why = QStringLiteral("device name '%1' is used twice").arg(d.id);
    else if (d.bytes == 0) why = QStringLiteral("device '%1' needs a memory size").arg(d.id);
    if (!why.isEmpty()) {
      if (error) *error = why;
      return {};
    }
    seen.insert(d.id);
    QString entry = QStringLiteral("sim:%1:%2").arg(d.id, formatSpecBytes(d.bytes));
    if (d.bandwidthGbps > 0) entry += QStringLiteral(":bw=%1GB/s").arg(d.bandwidthGbps, 0, 'g', 10);
    if (d.tflops > 0) entry += QStringLiteral(":tflops=%1").arg(d.tflops, 0, 'g', 10);
    parts << entry;
  }
  if (parts.isEmpty()) {
    if (error) *error = QStringLiteral("declare at least one device");
    return {};
  }
  if (error) error->clear();
  return parts.join(QLatin1Char(','));
}

QJsonArray devicesJson(const QList<SimulatedDeviceSpec>& devices, bool includeCpu, quint64 cpuBytes,
                       double cpuBandwidthGbps) {
  QJsonArray out;
  if (includeCpu)
    out.append(QJsonObject{{"id", "cpu"}, {"kind", "cpu"}, {"name", "CPU"}, {"simulated", false},
                           {"bytes_total", static_cast<double>(cpuBytes)}, {"bytes_free", static_cast<double>(cpuBytes)},
                           {"bandwidth_gbps", cpuBandwidthGbps}});
  for (const SimulatedDeviceSpec& d : devices) {
    const QString name = QStringLiteral("sim-%1 %2%3 (simulated)")
                             .arg(d.id, QString::number(static_cast<double>(d.bytes) / GiB, 'g', 4), QStringLiteral(" GiB"));
    out.append(QJsonObject{{"id", d.id}, {"kind", "sim"}, {"name", d.label.isEmpty() ? name : d.label + " — " + name},
                           {"simulated", true}, {"bytes_total", static_cast<double>(d.bytes)},
                           {"bytes_free", static_cast<double>(d.bytes)}, {"bandwidth_gbps", d.bandwidthGbps},
                           {"tflops", d.tflops}});
  }
  return out;
}

SimulatedDevicesWidget::SimulatedDevicesWidget(QWidget* parent)
    : QWidget(parent), table_(new QTableWidget(0, ColumnCount, this)), presets_(new QComboBox(this)),
      cpu_(new QCheckBox(tr("include the CPU"), this)) {
  table_->setHorizontalHeaderLabels({tr("name"), tr("memory GiB"), tr("bandwidth GB/s"), tr("TFLOPS"), tr("model")});
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->hide();
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  cpu_->setChecked(true);
  for (const GpuPreset& p : gpuPresets())
    presets_->addItem(QStringLiteral("%1 · %2 GiB · %3 GB/s").arg(p.model).arg(p.bytes / GiB).arg(p.bandwidthGbps));

  auto* addPresetButton = new QPushButton(tr("Add GPU"), this);
  auto* addCustom = new QPushButton(tr("Add custom"), this);
  auto* remove = new QPushButton(tr("Remove"), this);
  auto* use = new QPushButton(tr("Plan with these devices"), this);
  use->setObjectName(QStringLiteral("declareButton"));
  connect(addPresetButton, &QPushButton::clicked, this, [this] { addPreset(presets_->currentIndex()); });
  connect(addCustom, &QPushButton::clicked, this, [this] { addDevice({nextId(), 16 * GiB, 500, 0, tr("custom")}); });
  connect(remove, &QPushButton::clicked, this, &SimulatedDevicesWidget::removeSelected);
  connect(use, &QPushButton::clicked, this, &SimulatedDevicesWidget::declare);

  auto* row = new QHBoxLayout;
  row->addWidget(new QLabel(tr("Simulated devices:"), this));
  row->addWidget(presets_, 1);
  row->addWidget(addPresetButton);
  row->addWidget(addCustom);
  row->addWidget(remove);
  auto* bottom = new QHBoxLayout;
  bottom->addWidget(cpu_);
  bottom->addStretch(1);
  bottom->addWidget(use);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(row);
  layout->addWidget(table_);
  layout->addLayout(bottom);
}

QString SimulatedDevicesWidget::nextId() const {
  QSet<QString> used;
  for (const SimulatedDeviceSpec& d : devices()) used.insert(d.id);
  for (int i = 0;; ++i)
    if (!used.contains(QStringLiteral("gpu%1").arg(i))) return QStringLiteral("gpu%1").arg(i);
}

void SimulatedDevicesWidget::addPreset(int index) {
  if (index < 0 || index >= gpuPresets().size()) return;
  const GpuPreset& p = gpuPresets()[index];
  addDevice({nextId(), p.bytes, p.bandwidthGbps, p.tflops, p.model});
}

void SimulatedDevicesWidget::addDevice(const SimulatedDeviceSpec& d) {
  const int row = table_->rowCount();
  table_->insertRow(row);
  table_->setItem(row, IdColumn, new QTableWidgetItem(d.id));
  table_->setItem(row, MemoryColumn, new QTableWidgetItem(QString::number(static_cast<double>(d.bytes) / GiB, 'g', 10)));
  table_->setItem(row, BandwidthColumn, new QTableWidgetItem(QString::number(d.bandwidthGbps, 'g', 10)));
  table_->setItem(row, TflopsColumn, new QTableWidgetItem(QString::number(d.tflops, 'g', 10)));
  table_->setItem(row, LabelColumn, new QTableWidgetItem(d.label));
}

void SimulatedDevicesWidget::removeSelected() {
  const QList<QTableWidgetSelectionRange> ranges = table_->selectedRanges();
  for (auto it = ranges.rbegin(); it != ranges.rend(); ++it)
    for (int r = it->bottomRow(); r >= it->topRow(); --r) table_->removeRow(r);
}

void SimulatedDevicesWidget::clear() { table_->setRowCount(0); }

QList<SimulatedDeviceSpec> SimulatedDevicesWidget::devices() const {
  QList<SimulatedDeviceSpec> out;
  for (int r = 0; r < table_->rowCount(); ++r) {
    auto text = [&](int c) { return table_->item(r, c) ? table_->item(r, c)->text().trimmed() : QString(); };
    SimulatedDeviceSpec d;
    d.id = text(IdColumn);
    const double gib = text(MemoryColumn).toDouble();
    d.bytes = gib > 0 ? static_cast<quint64>(gib * static_cast<double>(GiB) + 0.5) : 0;
    d.bandwidthGbps = text(BandwidthColumn).toDouble();
    d.tflops = text(TflopsColumn).toDouble();
    d.label = text(LabelColumn);
    out.append(d);
  }
  return out;
}

bool SimulatedDevicesWidget::includeCpu() const { return cpu_->isChecked(); }

void SimulatedDevicesWidget::declare() {
  QString error;
  const QString s = spec(&error);
  if (s.isEmpty()) {
    emit declareFailed(error);
    return;
  }
  emit devicesJsonChanged(devicesJson(devices(), includeCpu()));
  emit devicesDeclared(s);
}

}  // namespace strata::ui
