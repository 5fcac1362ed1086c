// resources/render_icon.cpp — build-time tool: renders the SVG application icon to a square PNG
// of the given size (hicolor theme sizes). Qt Gui + Svg only; runs headless (offscreen platform).
//
//   strata_render_icon strata.svg 48 out/48x48/apps/strata.png
#include <QDir>
#include <QFileInfo>
#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <QSvgRenderer>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s icon.svg SIZE out.png\n", argv[0]);
    return 2;
  }
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QGuiApplication app(argc, argv);
  const int size = std::atoi(argv[2]);
  if (size <= 0 || size > 4096) {
    std::fprintf(stderr, "render_icon: bad size '%s'\n", argv[2]);
    return 2;
  }
  QSvgRenderer svg(QString::fromLocal8Bit(argv[1]));
  if (!svg.isValid()) {
    std::fprintf(stderr, "render_icon: cannot read SVG '%s'\n", argv[1]);
    return 1;
  }
  QImage image(size, size, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::transparent);
  {
    QPainter p(&image);
    p.setRenderHint(QPainter::Antialiasing);
    svg.render(&p, QRectF(0, 0, size, size));
  }
  const QString out = QString::fromLocal8Bit(argv[3]);
  QDir().mkpath(QFileInfo(out).absolutePath());
  if (!image.save(out, "PNG")) {
    std::fprintf(stderr, "render_icon: cannot write '%s'\n", argv[3]);
    return 1;
  }
  return 0;
}
