// ui/profiler/profiler_charts.cpp — ProfilerCharts: four QCustomPlot charts filled from ProfilerSeries.
#include "ui/profiler/profiler_charts.h"

#include <QTabWidget>

#include <algorithm>

#include <qcustomplot.h>

#include "ui/profiler/plot_palette.h"
#include "ui/profiler/profiler_series.h"

namespace strata::ui {

namespace {

QCustomPlot* makePlot(QTabWidget* tabs, const QString& title, const QString& xLabel, const QString& yLabel) {
  auto* plot = new QCustomPlot(tabs);
  plot->xAxis->setLabel(xLabel);
  plot->yAxis->setLabel(yLabel);
  plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot->axisRect()->setRangeZoom(Qt::Horizontal);
  plot->axisRect()->setRangeDrag(Qt::Horizontal);
  plot->legend->setVisible(false);
  followPalette(plot);
  tabs->addTab(plot, title);
  return plot;
}

QColor seriesColor(int i) { return QColor::fromHsv((i * 67 + 210) % 360, 180, 200); }

// One graph per named series, in map order; graphs are added or removed to match.
void fillGraphs(QCustomPlot* plot, const QMap<QString, QList<QPointF>>& series, double scale) {
  while (plot->graphCount() > series.size()) plot->removeGraph(plot->graphCount() - 1);
  int i = 0;
  for (auto it = series.begin(); it != series.end(); ++it, ++i) {
    if (i >= plot->graphCount()) plot->addGraph()->setPen(QPen(seriesColor(i), 1.5));
    QVector<double> x, y;
    x.reserve(it->size());
    y.reserve(it->size());
    for (const QPointF& p : *it) {
      x.append(p.x());
      y.append(p.y() * scale);
    }
    plot->graph(i)->setName(it.key());
    plot->graph(i)->setData(x, y, true);
  }
  plot->legend->setVisible(series.size() > 0);
}

}  // namespace

std::pair<QString, double> ProfilerCharts::linkUnit(double maxGbps) {
  if (maxGbps >= 1.0) return {QStringLiteral("GB/s"), 1.0};
  if (maxGbps >= 1e-3) return {QStringLiteral("MB/s"), 1e3};
  return {QStringLiteral("KB/s"), 1e6};
}

ProfilerCharts::ProfilerCharts(ProfilerSeries* series, QTabWidget* tabs, QObject* parent)
    : QObject(parent), series_(series), tabs_(tabs),
      tokens_(makePlot(tabs, tr("Tokens/s"), tr("s"), tr("tokens/s"))),
      ttft_(makePlot(tabs, tr("First token"), tr("reply"), tr("ms to first token"))),
      memory_(makePlot(tabs, tr("Memory"), tr("s"), tr("GiB used"))),
      links_(makePlot(tabs, tr("Links"), tr("s"), tr("GB/s"))) {
  tokens_->addGraph()->setPen(QPen(QColor(0x3b, 0x7d, 0xd8), 1.5));
  auto* bars = new QCPBars(ttft_->xAxis, ttft_->yAxis);
  bars->setBrush(QColor(0xe8, 0x7a, 0x1e));
  bars->setPen(Qt::NoPen);
  bars->setWidth(0.7);
  // Replies are counted: whole-number ticks only (the default ticker stepped by 0.5).
  QSharedPointer<QCPAxisTickerFixed> whole(new QCPAxisTickerFixed);
  whole->setTickStep(1.0);
  whole->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  ttft_->xAxis->setTicker(whole);
  connect(series_, &ProfilerSeries::changed, this, &ProfilerCharts::refresh);
  connect(tabs_, &QTabWidget::currentChanged, this, &ProfilerCharts::refresh);
}

void ProfilerCharts::refresh() {
  const double now = series_->nowSeconds();
  const double from = std::max(0.0, now - series_->windowSeconds());

  QVector<double> x, y;
  for (const QPointF& p : series_->tokensPerS()) {
    x.append(p.x());
    y.append(p.y());
  }
  tokens_->graph(0)->setData(x, y, true);
  tokens_->xAxis->setRange(from, std::max(now, 1.0));
  tokens_->yAxis->rescale();
  tokens_->yAxis->setRangeLower(0);

  auto* bars = qobject_cast<QCPBars*>(ttft_->plottable(0));
  QVector<double> idx, ms;
  for (const ReplyStats& r : series_->replies()) {
    idx.append(r.index);
    ms.append(r.ttftMs);
  }
  bars->setData(idx, ms, true);
  ttft_->rescaleAxes();
  ttft_->xAxis->setRange(idx.isEmpty() ? 0 : idx.first() - 1, idx.isEmpty() ? 10 : idx.last() + 1);
  ttft_->yAxis->setRangeLower(0);

  fillGraphs(memory_, series_->memoryUsed(), 1.0 / (1024.0 * 1024.0 * 1024.0));
  memory_->xAxis->setRange(from, std::max(now, 1.0));
  memory_->yAxis->rescale();
  memory_->yAxis->setRangeLower(0);

  // The unit follows the largest rate shown: 0.00025 GB/s reads 250 KB/s.
  double top = 0;
  for (const QList<QPointF>& points : series_->linkGbps())
    for (const QPointF& p : points) top = std::max(top, p.y());
  const auto [unit, scale] = linkUnit(top);
  links_->yAxis->setLabel(unit);
  fillGraphs(links_, series_->linkGbps(), scale);
  links_->xAxis->setRange(from, std::max(now, 1.0));
  links_->yAxis->rescale();
  links_->yAxis->setRangeLower(0);

  if (auto* visible = qobject_cast<QCustomPlot*>(tabs_->currentWidget())) visible->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace strata::ui
