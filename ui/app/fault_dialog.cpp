// ui/app/fault_dialog.cpp — the fault injection dialog's widgets and the fault JSON.
#include "ui/app/fault_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>

FaultDialog::FaultDialog(const QStringList& devices, QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Inject a fault"));
  device_ = new QComboBox(this);
  device_->setObjectName(QStringLiteral("faultDevice"));
  device_->addItems(devices);
  kind_ = new QComboBox(this);
  kind_->setObjectName(QStringLiteral("faultKind"));
  kind_->addItem(tr("lost, now"), int(Kind::LostNow));
  kind_->addItem(tr("lost after a number of its ops"), int(Kind::LostAfterOps));
  kind_->addItem(tr("stops answering after a number of its ops (hang)"), int(Kind::HangAfterOps));
  kind_->addItem(tr("out of memory: allocations fail beyond"), int(Kind::OutOfMemory));
  kind_->addItem(tr("slow (a straggler)"), int(Kind::Slow));
  amount_ = new QDoubleSpinBox(this);
  amount_->setObjectName(QStringLiteral("faultAmount"));
  amountLabel_ = new QLabel(this);
  auto* explain = new QLabel(tr("Only simulated devices take faults. The engine re-plans onto the devices left and "
                                "carries on; the timeline and the reply show what happened."),
                             this);
  explain->setWordWrap(true);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("Inject"));
  buttons->button(QDialogButtonBox::Ok)->setEnabled(!devices.isEmpty());
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(kind_, &QComboBox::currentIndexChanged, this, &FaultDialog::kindChanged);

  auto* form = new QFormLayout(this);
  form->addRow(explain);
  if (devices.isEmpty()) form->addRow(new QLabel(tr("No simulated device is running (Settings ▸ Devices, e.g. "
                                                    "cpu,sim:gpu0:8GiB,sim:gpu1:8GiB)."),
                                                 this));
  form->addRow(tr("Device:"), device_);
  form->addRow(tr("Fault:"), kind_);
  form->addRow(amountLabel_, amount_);
  form->addRow(buttons);
  kindChanged();
}

QString FaultDialog::device() const { return device_->currentText(); }

void FaultDialog::setKind(Kind kind) { kind_->setCurrentIndex(kind_->findData(int(kind))); }

void FaultDialog::setAmount(double amount) { amount_->setValue(amount); }

void FaultDialog::kindChanged() {
  const auto kind = Kind(kind_->currentData().toInt());
  amount_->setEnabled(kind != Kind::LostNow);
  amountLabel_->setEnabled(kind != Kind::LostNow);
  switch (kind) {
    case Kind::LostNow:
      amountLabel_->setText(tr("Amount:"));
      break;
    case Kind::LostAfterOps:
    case Kind::HangAfterOps:
      amountLabel_->setText(tr("After ops:"));
      amount_->setDecimals(0);
      amount_->setRange(1, 1e9);
      amount_->setSuffix(QString());
      amount_->setValue(200);
      break;
    case Kind::OutOfMemory:
      amountLabel_->setText(tr("More memory allowed:"));
      amount_->setDecimals(0);
      amount_->setRange(0, 1 << 20);
      amount_->setSuffix(tr(" MiB"));
      amount_->setValue(0);
      break;
    case Kind::Slow:
      amountLabel_->setText(tr("Slower by:"));
      amount_->setDecimals(1);
      amount_->setRange(1, 1000);
      amount_->setSuffix(QStringLiteral(" ×"));
      amount_->setValue(3);
      break;
  }
}

QJsonObject FaultDialog::fault() const {
  switch (Kind(kind_->currentData().toInt())) {
    case Kind::LostNow: return {{QStringLiteral("kind"), QStringLiteral("lost")}};
    case Kind::LostAfterOps:
      return {{QStringLiteral("kind"), QStringLiteral("lost")}, {QStringLiteral("after_ops"), qint64(amount_->value())}};
    case Kind::HangAfterOps:
      return {{QStringLiteral("kind"), QStringLiteral("hang")}, {QStringLiteral("after_ops"), qint64(amount_->value())}};
    case Kind::OutOfMemory:
      return {{QStringLiteral("kind"), QStringLiteral("oom")}, {QStringLiteral("bytes"), qint64(amount_->value()) << 20}};
    case Kind::Slow: return {{QStringLiteral("kind"), QStringLiteral("slow")}, {QStringLiteral("factor"), amount_->value()}};
  }
  return {};
}
