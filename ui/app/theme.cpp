// ui/app/theme.cpp — palettes; the platform's own palette is captured before any change.
#include "ui/app/theme.h"

#include <QApplication>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>

namespace {
QPalette& systemPalette() {
  static QPalette p = QApplication::palette();
  return p;
}

QPalette darkPalette() {
  QPalette p;
  const QColor window(0x2b, 0x2d, 0x31), base(0x1e, 0x1f, 0x22), text(0xe6, 0xe6, 0xe6);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, QColor(0x33, 0x35, 0x3a));
  p.setColor(QPalette::ToolTipBase, base);
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, window);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, Qt::red);
  p.setColor(QPalette::Link, QColor(0x6c, 0xb6, 0xff));
  p.setColor(QPalette::Highlight, QColor(0x3d, 0x7e, 0xdb));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::PlaceholderText, QColor(0x8a, 0x8d, 0x93));
  for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, role, QColor(0x80, 0x83, 0x89));
  return p;
}
}  // namespace

namespace theme {
void apply(QApplication& app, const QString& mode) {
  systemPalette();  // captured on first use
  app.setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
  if (mode == QLatin1String("dark")) app.setPalette(darkPalette());
  else if (mode == QLatin1String("light")) app.setPalette(app.style()->standardPalette());
  else app.setPalette(systemPalette());
}

bool isDark() { return QApplication::palette().color(QPalette::Window).lightness() < 128; }
}  // namespace theme
