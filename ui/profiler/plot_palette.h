// ui/profiler/plot_palette.h — QCustomPlot in the widget palette: background, axes, tick labels,
// grid and legend from the palette in use, re-applied whenever the palette changes (light ↔ dark).
#pragma once

class QCustomPlot;
class QPalette;

namespace strata::ui {

// Colours the plot from `palette` (Base background, Text axes and labels, Mid grid) and replots.
void applyPlotPalette(QCustomPlot* plot, const QPalette& palette);
// applyPlotPalette now and on every later palette change of the plot.
void followPalette(QCustomPlot* plot);

}  // namespace strata::ui
