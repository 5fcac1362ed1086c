// ui/devices/devices_panel.cpp — DevicesPanel layout and slot forwarding.
#include "ui/devices/devices_panel.h"

#include <QLabel>
#include <QListView>
#include <QVBoxLayout>

#include "ui/devices/device_delegate.h"
#include "ui/devices/device_model.h"
#include "ui/devices/memory_bar.h"

namespace strata::ui {

DevicesPanel::DevicesPanel(QWidget* parent)
    : QWidget(parent), model_(new DeviceModel(this)), view_(new QListView(this)) {
  setObjectName(QStringLiteral("devicesPanel"));
  view_->setModel(model_);
  view_->setItemDelegate(new DeviceDelegate(view_));
  view_->setUniformItemSizes(true);
  view_->setSelectionMode(QAbstractItemView::SingleSelection);
  view_->setVerticalScrollMode(QAbstractItemView::ScrollPerPixel);
  auto* legend = new MemoryLegend(this);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(view_, 1);
  layout->addWidget(legend);
  connect(view_, &QListView::doubleClicked, this, [this](const QModelIndex& i) {
    emit deviceActivated(i.data(DeviceModel::IdRole).toString());
  });
}

void DevicesPanel::setDevices(const QJsonArray& devices) { model_->setDevices(devices); }
void DevicesPanel::setStatus(const QJsonObject& status) { model_->setStatus(status); }
void DevicesPanel::applyMemorySnapshot(const QJsonObject& batch) { model_->applyMemorySnapshot(batch); }

}  // namespace strata::ui
