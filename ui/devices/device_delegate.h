// ui/devices/device_delegate.h — draws one DeviceModel row: name line ("simulated" tag for simulated
// devices), the stacked memory bar (hatched when simulated) and "used / capacity  NN%". Painting only.
#pragma once

#include <QStyledItemDelegate>

namespace strata::ui {

class DeviceDelegate : public QStyledItemDelegate {
  Q_OBJECT
 public:
  explicit DeviceDelegate(QObject* parent = nullptr);

  void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
  QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;

  // Where paint() puts the bar inside a row's rectangle (tests sample its pixels).
  static QRect barRect(const QRect& rowRect, const QFontMetrics& fm);
};

}  // namespace strata::ui
