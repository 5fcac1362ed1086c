// ui/app/fault_dialog.h — Engine ▸ Inject fault…: picks a simulated device and a fault (lost now or
// after N ops, hung after N ops, out of memory, slow) and gives the body of
// POST /strata/v1/devices/ID/fault (docs/api.md). Makes the engine's re-planning demonstrable
// without hardware. GUI thread only; no HTTP (the caller sends it).
#pragma once

#include <QDialog>
#include <QJsonObject>
#include <QStringList>

class QComboBox;
class QDoubleSpinBox;
class QLabel;

class FaultDialog : public QDialog {
  Q_OBJECT
 public:
  // devices: ids of the simulated devices that are not lost (the engine refuses the others).
  explicit FaultDialog(const QStringList& devices, QWidget* parent = nullptr);

  QString device() const;
  // {"kind":"lost"} | {"kind":"lost","after_ops":N} | {"kind":"hang","after_ops":N} |
  // {"kind":"oom","bytes":B} | {"kind":"slow","factor":F}
  QJsonObject fault() const;

  enum class Kind { LostNow, LostAfterOps, HangAfterOps, OutOfMemory, Slow };
  void setKind(Kind kind);
  void setAmount(double amount);  // ops, MiB or factor, as the kind says

 private:
  void kindChanged();

  QComboBox* device_;
  QComboBox* kind_;
  QDoubleSpinBox* amount_;
  QLabel* amountLabel_;
};
