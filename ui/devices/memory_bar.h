// ui/devices/memory_bar.h — paints one device's stacked memory bar (weights, KV used, KV reserved,
// scratch, other, free) and its legend; shared by the devices panel and the placement editor. Qt Gui only.
#pragma once

#include <QColor>
#include <QRectF>
#include <QString>
#include <QWidget>

class QPainter;

namespace strata::ui {

// Bytes of one device, as the bar shows them. kvReserved includes kvUsed.
struct MemoryBreakdown {
  quint64 capacity = 0;    // bytes the device may use (0: unknown, the bar scales to the sum)
  quint64 weights = 0;
  quint64 kvUsed = 0;      // KV cache bytes holding live tokens
  quint64 kvReserved = 0;  // KV cache bytes allocated (used + spare)
  quint64 scratch = 0;
  quint64 other = 0;       // runtime overhead and anything else
  quint64 free = 0;        // free bytes as reported; see freeBytes()

  quint64 usedBytes() const;   // weights + max(kvReserved, kvUsed) + scratch + other
  // Reported free when set, else capacity - used (0 when used exceeds the capacity).
  quint64 freeBytes() const;
  quint64 shortfall() const;   // used - capacity when over a known capacity, else 0
};

// The segments of the bar, left to right.
enum class MemorySegment { Weights, KvUsed, KvReserved, Scratch, Other, Free };
inline constexpr int kMemorySegmentCount = 6;

QColor memorySegmentColor(MemorySegment segment);
QString memorySegmentName(MemorySegment segment);  // "weights", "KV used", ...

// Paints the bar into `rect`: segments in proportion to the capacity (or the sum when larger),
// simulated devices overlaid with a diagonal hatch, an overflowing device outlined in red.
void paintMemoryBar(QPainter& painter, const QRectF& rect, const MemoryBreakdown& memory, bool simulated);

// "22.6 GiB", "180.5 MiB", "12 B": binary units, one decimal (as the engine's format_bytes).
QString formatBytes(quint64 bytes);

// Colour swatches with the segment names, plus "hatched: simulated"; wraps when narrow.
class MemoryLegend : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryLegend(QWidget* parent = nullptr);
  QSize sizeHint() const override;
  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;  // wraps onto more lines when narrow

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;  // takes the wrapped height
};

}  // namespace strata::ui
