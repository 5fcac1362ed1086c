// ui/theme/contrast.cpp — WCAG 2 luminance and contrast; lightness search for readable colours.
#include "ui/theme/contrast.h"

#include <QtMath>

namespace strata::ui {

namespace {
double channel(double v) { return v <= 0.04045 ? v / 12.92 : qPow((v + 0.055) / 1.055, 2.4); }
}  // namespace

double relativeLuminance(const QColor& c) {
  const QColor rgb = c.toRgb();
  return 0.2126 * channel(rgb.redF()) + 0.7152 * channel(rgb.greenF()) + 0.0722 * channel(rgb.blueF());
}

double contrastRatio(const QColor& a, const QColor& b) {
  const double la = relativeLuminance(a), lb = relativeLuminance(b);
  return (qMax(la, lb) + 0.05) / (qMin(la, lb) + 0.05);
}

QColor textOn(const QColor& background) {
  return contrastRatio(Qt::black, background) >= contrastRatio(Qt::white, background) ? QColor(Qt::black) : QColor(Qt::white);
}

QColor readableOn(const QColor& preferred, const QColor& background, double minRatio) {
  if (contrastRatio(preferred, background) >= minRatio) return preferred;
  const bool darkBackground = relativeLuminance(background) < 0.18;
  QColor c = preferred.toHsl();
  // Step the lightness away from the background's until it reads (at the end: white or black).
  for (int step = 0; step < 20; ++step) {
    const float l = c.lightnessF();
    c.setHslF(qMax(0.0f, c.hslHueF()), c.hslSaturationF(), darkBackground ? qMin(1.0f, l + 0.05f) : qMax(0.0f, l - 0.05f));
    if (contrastRatio(c, background) >= minRatio) return c.toRgb();
  }
  return textOn(background);
}

}  // namespace strata::ui
