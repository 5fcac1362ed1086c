// ui/profiler/timeline_plot.h — the live timeline (QCustomPlot): one row per lane, compute spans
// coloured by layer, transfers and all-reduces in their own colours, idle gaps left empty (explicit
// idle spans pale); wheel zooms and drag pans the time axis; hover shows a span's details.
// Reads a TimelineModel; qcustomplot.h is included only by the .cpp.
#pragma once

#include <QColor>
#include <QList>
#include <QPair>
#include <QWidget>

class QCustomPlot;

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
  QList<QPair<double, double>> laneSpans(int laneRow) const;
  int spanCount() const;
  QString tooltipAt(double xMs, double laneRow) const;  // empty when no span is there

  static QColor spanColor(const TraceSpan& span);

 public slots:
  void rebuild();  // re-reads the model and queues a replot
  void replotNow();  // immediate replot (tests, screenshots)

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void showTooltip(QMouseEvent* event);

  QCustomPlot* plot_;
  SpanLayer* spans_;
  TimelineModel* model_ = nullptr;
  bool follow_ = true;
  double visibleMs_ = 500;
};

}  // namespace strata::ui
