// ui/profiler/timeline_plot.h — the live timeline (QCustomPlot): one row per lane, compute spans
// coloured by layer, idle gaps left empty (explicit idle spans pale); transfers and all-reduces on
// link rows of their own below the lanes (one per sender → receiver pair), never thinner than 6 px,
// with a flow arrow from the sender's lane to the receiver's; a legend per event kind; wheel zooms
// and drag pans the time axis; hover shows a span's details (bytes, time and GB/s of a transfer).
// Reads a TimelineModel; qcustomplot.h is included only by the .cpp.
#pragma once

#include <QColor>
#include <QList>
#include <QPair>
#include <QStringList>
#include <QWidget>

class QCustomPlot;
class QLabel;

namespace strata::ui {

class TimelineModel;
struct TraceSpan;
class SpanLayer;

class TimelinePlot : public QWidget {
  Q_OBJECT
 public:
  explicit TimelinePlot(QWidget* parent = nullptr);
  ~TimelinePlot() override;

  void setModel(TimelineModel* model);
  QCustomPlot* plot() const { return plot_; }

  // Follow the newest data, showing the last visibleMs (default 500 ms); zooming or panning by hand
  // stops following until setFollowLatest(true).
  void setFollowLatest(bool follow);
  bool followLatest() const { return follow_; }
  void setVisibleMs(double ms);

  // What is drawn, for tests and the tooltip: spans of one lane row as [start, end) in ms since
  // the model's origin, in start order.
  // Rows 0..lanes-1 are the model's lanes; then linkRowLabels() (e.g. "gpu0 → gpu1").
  QList<QPair<double, double>> laneSpans(int laneRow) const;
  QStringList linkRowLabels() const { return linkRows_; }
  QLabel* legend() const { return legend_; }
  static QList<QPair<QString, QColor>> legendEntries();  // one per event kind, in legend order
  int spanCount() const;
  int rowCount() const;          // lanes and link rows drawn
  double rowHeightPx() const;    // the height of one row as last laid out
  QPair<double, double> visibleRangeMs() const;  // the time axis' range, ms since the origin
  QString tooltipAt(double xMs, double laneRow) const;  // empty when no span or fault is there
  // Fault bands drawn (TimelineModel::faults()): [start, end) in ms since the origin, and the text.
  QList<QPair<QPair<double, double>, QString>> faultBands() const;

  static QColor spanColor(const TraceSpan& span);

 public slots:
  void rebuild();  // re-reads the model and queues a replot
  void replotNow();  // immediate replot (tests, screenshots)

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
  // The legend goes when the lanes would not keep their minimum height with it (a short dock at
  // QT_SCALE_FACTOR 1.5 drew it over the last lane); the colours stay in each span's tooltip.
  void resizeEvent(QResizeEvent* event) override;

 private:
  void showTooltip(QMouseEvent* event);
  void updateLegend();

  QCustomPlot* plot_;
  SpanLayer* spans_;
  TimelineModel* model_ = nullptr;
  QLabel* legend_ = nullptr;
  QStringList linkRows_;
  bool follow_ = true;
  double visibleMs_ = 500;
};

// "850 ns", "12.5 µs", "3.210 ms".
QString formatDurationNs(qint64 ns);

}  // namespace strata::ui
