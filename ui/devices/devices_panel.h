// ui/devices/devices_panel.h — the Devices dock: a list of devices with live memory bars and a legend.
// Owns a DeviceModel; takes engine JSON through its slots and never talks HTTP.
#pragma once

#include <QJsonArray>
#include <QJsonObject>
#include <QWidget>

class QListView;

namespace strata::ui {

class DeviceModel;

class DevicesPanel : public QWidget {
  Q_OBJECT
 public:
  explicit DevicesPanel(QWidget* parent = nullptr);

  DeviceModel* model() const { return model_; }
  QListView* view() const { return view_; }

 public slots:
  void setDevices(const QJsonArray& devices);              // /strata/v1/devices "devices"
  void setStatus(const QJsonObject& status);               // /strata/v1/status
  void applyMemorySnapshot(const QJsonObject& batch);      // a trace-stream batch

 signals:
  void deviceActivated(const QString& deviceId);  // double-click on a row

 private:
  DeviceModel* model_;
  QListView* view_;
};

}  // namespace strata::ui
