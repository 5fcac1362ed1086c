// ui/theme/contrast.h — WCAG 2 contrast between colours, and text colours chosen for it, so that
// every widget, delegate and plot stays readable in the light and the dark palette. Qt only.
#pragma once

#include <QColor>

namespace strata::ui {

// WCAG 2 relative luminance of an sRGB colour (0 black .. 1 white).
double relativeLuminance(const QColor& c);
// (L1 + 0.05) / (L2 + 0.05) with L1 the lighter: 1 (same) .. 21 (black on white).
double contrastRatio(const QColor& a, const QColor& b);
// Black or white, whichever contrasts more with `background`.
QColor textOn(const QColor& background);
// `preferred` (e.g. a warning red) made lighter or darker, keeping its hue, until it contrasts at
// least `minRatio` with `background` (WCAG AA for text: 4.5).
QColor readableOn(const QColor& preferred, const QColor& background, double minRatio = 4.5);

}  // namespace strata::ui
