// ui/profiler/profiler_panel.h — the profiler dock: a one-line summary (tok/s, TTFT, bubble % per
// lane) that expands to the timeline and the chart tabs; pause/resume and Chrome-trace export of the
// buffered events. Takes trace-stream batches and reply stats through slots; never talks HTTP.
#pragma once

#include <QJsonObject>
#include <QList>
#include <QWidget>

class QLabel;
class QTabWidget;
class QToolButton;

namespace strata::ui {

class ProfilerCharts;
class ProfilerSeries;
class TimelineModel;
class TimelinePlot;

class ProfilerPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ProfilerPanel(QWidget* parent = nullptr);

  TimelineModel* timelineModel() const { return timeline_; }
  ProfilerSeries* series() const { return series_; }
  TimelinePlot* timelinePlot() const { return plot_; }
  ProfilerCharts* charts() const { return charts_; }
  bool isPaused() const { return paused_; }
  bool isCollapsed() const { return collapsed_; }
  int heldBatches() const { return static_cast<int>(held_.size()); }
  QString summaryText() const;  // "tok/s 41.3 · TTFT 180 ms · bubble gpu0 12%, gpu1 38%"

  // Writes the buffered events as Chrome trace JSON (Perfetto / chrome://tracing).
  bool exportChromeTrace(const QString& path, QString* error = nullptr);

 public slots:
  void appendBatch(const QJsonObject& batch);  // a trace-stream batch (held while paused)
  void addReplyStats(double ttftMs, int tokens, double tokensPerS);
  void setStreamingTtft(double ms);            // the reply in progress got its first token (until addReplyStats)
  void setPaused(bool paused);                 // resume applies the held batches
  void setCollapsed(bool collapsed);
  void setWindowSeconds(double seconds);       // how much history the timeline keeps (default 30 s)
  void clear();

 signals:
  void pausedChanged(bool paused);
  void collapsedChanged(bool collapsed);
  void traceExported(const QString& path);
  void exportFailed(const QString& reason);

 private:
  void apply(const QJsonObject& batch);
  void updateSummary();

  TimelineModel* timeline_;
  ProfilerSeries* series_;
  TimelinePlot* plot_;
  QTabWidget* tabs_;
  ProfilerCharts* charts_;
  QLabel* summary_;
  QToolButton* collapse_;
  QToolButton* pause_;
  QWidget* body_;
  QList<QJsonObject> held_;
  bool paused_ = false;
  bool collapsed_ = false;
  double streamingTtftMs_ = -1;  // the reply in progress's time to first token; -1: none
};

}  // namespace strata::ui
