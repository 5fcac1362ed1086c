// ui/profiler/profiler_charts.h — the profiler's chart tabs (QCustomPlot): tokens/s over time, time
// to first token per reply, memory per device over time, link bandwidth over time. Reads a
// ProfilerSeries; qcustomplot.h is included only by the .cpp.
#pragma once

#include <QObject>
#include <QString>

#include <utility>

class QCustomPlot;
class QTabWidget;

namespace strata::ui {

class ProfilerSeries;

class ProfilerCharts : public QObject {
  Q_OBJECT
 public:
  // Adds four tabs to `tabs`, fed from `series`.
  ProfilerCharts(ProfilerSeries* series, QTabWidget* tabs, QObject* parent = nullptr);

  QCustomPlot* tokensPlot() const { return tokens_; }
  QCustomPlot* ttftPlot() const { return ttft_; }
  QCustomPlot* memoryPlot() const { return memory_; }
  QCustomPlot* linkPlot() const { return links_; }
  // The Links chart's unit for a largest rate of maxGbps: GB/s from 1, MB/s from 0.001, else KB/s,
  // and the factor from GB/s to it.
  static std::pair<QString, double> linkUnit(double maxGbps);

 public slots:
  void refresh();  // re-reads the series into the plots; replots (queued) the visible one

 private:
  ProfilerSeries* series_;
  QTabWidget* tabs_;
  QCustomPlot* tokens_;
  QCustomPlot* ttft_;
  QCustomPlot* memory_;
  QCustomPlot* links_;
};

}  // namespace strata::ui
