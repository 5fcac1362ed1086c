// ui/profiler/plot_palette.cpp — palette → QCustomPlot colours; an event filter follows changes.
#include "ui/profiler/plot_palette.h"

#include <QEvent>
#include <QPalette>

#include <qcustomplot.h>

namespace strata::ui {

namespace {
class PaletteFollower : public QObject {
 public:
  explicit PaletteFollower(QCustomPlot* plot) : QObject(plot), plot_(plot) {}
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (watched == plot_ && event->type() == QEvent::PaletteChange) applyPlotPalette(plot_, plot_->palette());
    return false;
  }

 private:
  QCustomPlot* plot_;
};
}  // namespace

void applyPlotPalette(QCustomPlot* plot, const QPalette& pal) {
  const QColor text = pal.color(QPalette::Text);
  QColor grid = pal.color(QPalette::Mid);
  grid.setAlpha(110);
  plot->setBackground(pal.brush(QPalette::Base));
  for (QCPAxisRect* rect : plot->axisRects()) {
    rect->setBackground(pal.brush(QPalette::Base));
    for (QCPAxis* axis : rect->axes()) {
      axis->setBasePen(QPen(text, 1));
      axis->setTickPen(QPen(text, 1));
      axis->setSubTickPen(QPen(text, 1));
      axis->setTickLabelColor(text);
      axis->setLabelColor(text);
      axis->grid()->setPen(QPen(grid, 1, Qt::DotLine));
      axis->grid()->setZeroLinePen(QPen(grid, 1));
    }
  }
  if (plot->legend) {
    plot->legend->setBrush(pal.brush(QPalette::Base));
    plot->legend->setTextColor(text);
    plot->legend->setBorderPen(QPen(pal.color(QPalette::Mid)));
  }
  for (QCPLayoutElement* e : plot->plotLayout()->elements(true))
    if (auto* title = qobject_cast<QCPTextElement*>(e)) title->setTextColor(text);
  plot->replot(QCustomPlot::rpQueuedReplot);
}

void followPalette(QCustomPlot* plot) {
  applyPlotPalette(plot, plot->palette());
  plot->installEventFilter(new PaletteFollower(plot));
}

}  // namespace strata::ui
