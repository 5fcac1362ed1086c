// ui/devices/device_delegate.h — draws one DeviceModel row: name line with a tag ("simulated" for
// simulated devices, "failed" in red, else a real GPU's "cc 9.0"), the stacked memory bar (hatched when
// simulated) and "used / capacity  NN%" (for a failed device: "failed: <reason>"). Painting only;
// the tooltip (ToolTipRole) carries peer access and the failure in full.
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
  // A row's first line: "id  name  capacity". A simulated device's name repeats the id, the size and
  // "(simulated)" (the tag at the right says it): then "gpu0  32.0 MiB", which a narrow dock shows whole.
  static QString title(const QString& id, QString name, quint64 capacity, bool simulated);
};

}  // namespace strata::ui
