// ui/devices/device_delegate.cpp — DeviceDelegate painting (reads DeviceModel roles only).
#include "ui/devices/device_delegate.h"

#include <QApplication>
#include <QPainter>

#include "ui/devices/device_model.h"
#include "ui/devices/memory_bar.h"
#include "ui/theme/contrast.h"

namespace strata::ui {

namespace {
constexpr int kMargin = 4;
constexpr int kBarHeight = 14;
}  // namespace

DeviceDelegate::DeviceDelegate(QObject* parent) : QStyledItemDelegate(parent) {}

QRect DeviceDelegate::barRect(const QRect& row, const QFontMetrics& fm) {
  return QRect(row.left() + kMargin, row.top() + kMargin + fm.height() + 2, row.width() - 2 * kMargin, kBarHeight);
}

QString DeviceDelegate::title(const QString& id, QString name, quint64 capacity, bool simulated) {
  if (simulated) {
    name.remove(QStringLiteral(" (simulated)"));
    if (name.startsWith(QStringLiteral("sim-") + id)) name.clear();  // "sim-gpu0 32 MiB": nothing new
  }
  return name.isEmpty() ? QStringLiteral("%1  %2").arg(id, formatBytes(capacity))
                        : QStringLiteral("%1  %2  %3").arg(id, name, formatBytes(capacity));
}

QSize DeviceDelegate::sizeHint(const QStyleOptionViewItem& option, const QModelIndex&) const {
  const QFontMetrics fm(option.font);
  return {220, 2 * kMargin + 2 * fm.height() + kBarHeight + 6};
}

void DeviceDelegate::paint(QPainter* p, const QStyleOptionViewItem& option, const QModelIndex& index) const {
  p->save();
  const QFontMetrics fm(option.font);
  const QPalette& pal = option.palette;
  if (option.state & QStyle::State_Selected) p->fillRect(option.rect, pal.color(QPalette::Highlight).lighter(170));

  MemoryBreakdown m;
  m.capacity = index.data(DeviceModel::CapacityRole).toULongLong();
  m.weights = index.data(DeviceModel::WeightsRole).toULongLong();
  m.kvUsed = index.data(DeviceModel::KvUsedRole).toULongLong();
  m.kvReserved = index.data(DeviceModel::KvReservedRole).toULongLong();
  m.scratch = index.data(DeviceModel::ScratchRole).toULongLong();
  m.other = index.data(DeviceModel::OtherRole).toULongLong();
  m.free = index.data(DeviceModel::FreeRole).toULongLong();
  const bool simulated = index.data(DeviceModel::SimulatedRole).toBool();
  const bool failed = index.data(DeviceModel::FailedRole).toBool();
  const QString cc = index.data(DeviceModel::ComputeCapabilityRole).toString();

  // Line 1: id, name, capacity; a tag at the right: "lost", "simulated", or a real GPU's compute
  // capability ("cc 9.0"; its peers are in the tooltip).
  const QRect line1(option.rect.left() + kMargin, option.rect.top() + kMargin, option.rect.width() - 2 * kMargin,
                    fm.height());
  const QString title = DeviceDelegate::title(index.data(DeviceModel::IdRole).toString(),
                                              index.data(DeviceModel::NameRole).toString(), m.capacity, simulated);
  QString tag;
  QColor tagColor(0x9a, 0x5b, 0x00);
  if (failed) {
    tag = QStringLiteral("lost");
    tagColor = QColor(0xc0, 0x20, 0x20);
  } else if (simulated) {
    tag = QStringLiteral("simulated");
  } else if (!cc.isEmpty()) {
    tag = QStringLiteral("cc %1").arg(cc);
    tagColor = pal.color(QPalette::PlaceholderText);
  }
  const int tagWidth = tag.isEmpty() ? 0 : fm.horizontalAdvance(tag) + 8;
  p->setPen(pal.color(QPalette::Text));
  p->drawText(line1.adjusted(0, 0, -tagWidth, 0), Qt::AlignLeft | Qt::AlignVCenter,
              fm.elidedText(title, Qt::ElideRight, line1.width() - tagWidth));
  if (!tag.isEmpty()) {
    const QRect tagRect(line1.right() - tagWidth + 1, line1.top(), tagWidth, line1.height());
    p->setPen(readableOn(tagColor, pal.color(QPalette::Base)));
    p->drawText(tagRect, Qt::AlignRight | Qt::AlignVCenter, tag);
  }

  // Line 2: the bar.
  const QRect bar = barRect(option.rect, fm);
  paintMemoryBar(*p, bar, m, simulated);

  // Line 3: used / capacity and percentage, or why the device failed.
  const QRect line3(bar.left(), bar.bottom() + 3, bar.width(), fm.height());
  if (failed) {
    const QString failure = index.data(DeviceModel::FailureRole).toString();
    p->setPen(readableOn(QColor(0xc0, 0x20, 0x20), pal.color(QPalette::Base)));
    p->drawText(line3, Qt::AlignLeft | Qt::AlignVCenter,
                fm.elidedText(QStringLiteral("lost: %1").arg(failure), Qt::ElideRight, line3.width()));
    p->restore();
    return;
  }
  const double fraction = index.data(DeviceModel::UsedFractionRole).toDouble();
  const QString used = QStringLiteral("%1 / %2  %3%  ·  KV %4 of %5  ·  free %6")
                           .arg(formatBytes(m.usedBytes()), formatBytes(m.capacity))
                           .arg(qRound(fraction * 100.0))
                           .arg(formatBytes(m.kvUsed), formatBytes(m.kvReserved), formatBytes(m.freeBytes()));
  p->setPen(readableOn(m.shortfall() > 0 ? QColor(0xc0, 0x20, 0x20) : pal.color(QPalette::PlaceholderText),
                       pal.color(QPalette::Base)));
  p->drawText(line3, Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(used, Qt::ElideRight, line3.width()));
  p->restore();
}

}  // namespace strata::ui
