// ui/devices/memory_bar.cpp — the stacked memory bar and its legend (painting only, no model).
// Qt Gui/Widgets only.
#include "ui/devices/memory_bar.h"

#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <array>

namespace strata::ui {

quint64 MemoryBreakdown::usedBytes() const {
  return weights + std::max(kvReserved, kvUsed) + scratch + other;
}

quint64 MemoryBreakdown::freeBytes() const {
  if (free > 0) return free;
  const quint64 used = usedBytes();
  return capacity > used ? capacity - used : 0;
}

quint64 MemoryBreakdown::shortfall() const {
  const quint64 used = usedBytes();
  return capacity > 0 && used > capacity ? used - capacity : 0;
}

QColor memorySegmentColor(MemorySegment segment) {
  switch (segment) {
    case MemorySegment::Weights: return QColor(0x3b, 0x7d, 0xd8);     // blue
    case MemorySegment::KvUsed: return QColor(0xe8, 0x7a, 0x1e);      // orange
    case MemorySegment::KvReserved: return QColor(0xf5, 0xc4, 0x8c);  // light orange
    case MemorySegment::Scratch: return QColor(0x8e, 0x5c, 0xc9);     // purple
    case MemorySegment::Other: return QColor(0x80, 0x80, 0x80);       // grey
    case MemorySegment::Free: return QColor(0xdf, 0xe6, 0xdf);        // pale green-grey
  }
  return Qt::black;
}

QString memorySegmentName(MemorySegment segment) {
  switch (segment) {
    case MemorySegment::Weights: return QStringLiteral("weights");
    case MemorySegment::KvUsed: return QStringLiteral("KV used");
    case MemorySegment::KvReserved: return QStringLiteral("KV reserved");
    case MemorySegment::Scratch: return QStringLiteral("scratch");
    case MemorySegment::Other: return QStringLiteral("other");
    case MemorySegment::Free: return QStringLiteral("free");
  }
  return {};
}

void paintMemoryBar(QPainter& painter, const QRectF& rect, const MemoryBreakdown& m, bool simulated) {
  const quint64 kvUsed = std::min(m.kvUsed, std::max(m.kvReserved, m.kvUsed));
  const quint64 kvSpare = m.kvReserved > kvUsed ? m.kvReserved - kvUsed : 0;
  const std::array<quint64, kMemorySegmentCount> bytes = {m.weights, kvUsed, kvSpare, m.scratch, m.other,
                                                          m.freeBytes()};
  quint64 sum = 0;
  for (quint64 b : bytes) sum += b;
  const double scale = static_cast<double>(std::max(sum, m.capacity));

  painter.save();
  painter.setPen(Qt::NoPen);
  painter.fillRect(rect, memorySegmentColor(MemorySegment::Free).lighter(104));
  if (scale > 0) {
    double x = rect.left();
    for (int i = 0; i < kMemorySegmentCount; ++i) {
      if (bytes[static_cast<size_t>(i)] == 0) continue;
      const double w = rect.width() * static_cast<double>(bytes[static_cast<size_t>(i)]) / scale;
      painter.fillRect(QRectF(x, rect.top(), w, rect.height()), memorySegmentColor(static_cast<MemorySegment>(i)));
      x += w;
    }
  }
  if (simulated) {
    QBrush hatch(QColor(0, 0, 0, 70), Qt::BDiagPattern);
    painter.fillRect(rect, hatch);
  }
  const bool overflow = m.shortfall() > 0;
  painter.setBrush(Qt::NoBrush);
  painter.setPen(QPen(overflow ? QColor(0xd0, 0x20, 0x20) : QColor(0x60, 0x60, 0x60), overflow ? 2.0 : 1.0));
  painter.drawRect(rect.adjusted(0.5, 0.5, -0.5, -0.5));
  painter.restore();
}

QString formatBytes(quint64 bytes) {
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return QStringLiteral("%1 B").arg(bytes);
  double v = static_cast<double>(bytes) / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 3) {
    v /= 1024.0;
    ++u;
  }
  return QStringLiteral("%1 %2").arg(v, 0, 'f', 1).arg(QLatin1String(units[u]));
}

namespace {

struct LegendEntry {
  QColor colour;
  bool hatched;
  QString text;
};

QList<LegendEntry> legendEntries() {
  QList<LegendEntry> out;
  for (int i = 0; i < kMemorySegmentCount; ++i) {
    const auto s = static_cast<MemorySegment>(i);
    out.append({memorySegmentColor(s), false, memorySegmentName(s)});
  }
  out.append({memorySegmentColor(MemorySegment::Free), true, QStringLiteral("simulated")});
  return out;
}

// Top-left of each entry when laid out in `width`; returns the number of lines.
int layoutLegend(const QFontMetrics& fm, int width, QList<QPoint>* at) {
  const int lineHeight = fm.height() + 4;
  int x = 0, line = 0;
  for (const LegendEntry& e : legendEntries()) {
    const int w = fm.height() + fm.horizontalAdvance(e.text) + 10;
    if (x > 0 && x + w > width) {
      x = 0;
      ++line;
    }
    if (at) at->append(QPoint(x, line * lineHeight));
    x += w;
  }
  return line + 1;
}

}  // namespace

MemoryLegend::MemoryLegend(QWidget* parent) : QWidget(parent) {
  QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Fixed);
  policy.setHeightForWidth(true);
  setSizePolicy(policy);
}

QSize MemoryLegend::sizeHint() const {
  const QFontMetrics fm(font());
  int oneLine = 0;
  for (const LegendEntry& e : legendEntries()) oneLine += fm.height() + fm.horizontalAdvance(e.text) + 10;
  return {oneLine, fm.height() + 4};
}

int MemoryLegend::heightForWidth(int width) const {
  const QFontMetrics fm(font());
  return layoutLegend(fm, width, nullptr) * (fm.height() + 4);
}

void MemoryLegend::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  const int h = heightForWidth(width());
  if (h != height()) setFixedHeight(h);
}

void MemoryLegend::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QFontMetrics fm(font());
  const int box = fm.height() - 4;
  QList<QPoint> at;
  layoutLegend(fm, width(), &at);
  const QList<LegendEntry> entries = legendEntries();
  for (int i = 0; i < entries.size(); ++i) {
    const LegendEntry& e = entries[i];
    const QRect r(at[i].x(), at[i].y() + 4, box, box);
    p.fillRect(r, e.colour);
    if (e.hatched) p.fillRect(r, QBrush(QColor(0, 0, 0, 110), Qt::BDiagPattern));
    p.setPen(palette().color(QPalette::Mid));
    p.drawRect(r.adjusted(0, 0, -1, -1));
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(QRect(r.right() + 4, at[i].y(), fm.horizontalAdvance(e.text) + 2, fm.height() + 4), Qt::AlignVCenter, e.text);
  }
}

}  // namespace strata::ui
