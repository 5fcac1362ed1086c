// tests/ui/test_theme_contrast.cpp — every part of the window stays readable in the light and the
// dark theme, switched live after the part was shown (issue 14, item 4): on rendered pixels, the
// text contrasts with its background at least 4.5:1 (WCAG AA), and plots take the theme's
// background instead of staying white. Also the contrast helpers themselves.
#include <QApplication>
#include <QHash>
#include <QImage>
#include <QLabel>
#include <QTest>
#include <QTextBrowser>
#include <QVBoxLayout>


#include "ui/app/engine_problem_panel.h"
#include "ui/app/theme.h"
#include "ui/chat/message_widget.h"
#include "ui/placement/placement_editor.h"
#include "ui/placement/placement_model.h"
#include "ui/placement/placement_view.h"
#include "ui/profiler/timeline_plot.h"
#include "ui/storage/conversation_store.h"
#include "ui/theme/contrast.h"

using namespace strata::ui;

namespace {

struct Reading {
  QColor background;  // the most common colour
  double best = 1.0;  // the highest contrast of any pixel with it
};

Reading read(const QImage& image) {
  QHash<QRgb, int> counts;
  const QImage img = image.convertToFormat(QImage::Format_RGB32);
  for (int y = 0; y < img.height(); ++y)
    for (int x = 0; x < img.width(); ++x) ++counts[img.pixel(x, y)];
  QRgb bg = 0;
  int most = -1;
  for (auto it = counts.begin(); it != counts.end(); ++it)
    if (it.value() > most) most = it.value(), bg = it.key();
  Reading r;
  r.background = QColor(bg);
  for (auto it = counts.begin(); it != counts.end(); ++it)
    r.best = qMax(r.best, contrastRatio(QColor(it.key()), r.background));
  return r;
}

// What a part looks like, rendered inside a host window (so transparent parts show what is behind).
QImage grabIn(QWidget* host, QWidget* part) { return host->grab(QRect(part->mapTo(host, QPoint(0, 0)), part->size())).toImage(); }

QJsonObject modelInfo() {
  return QJsonObject{{"name", "toy"}, {"n_layers", 4}, {"layer_bytes", 1000}, {"embedding_bytes", 500},
                     {"head_bytes", 600}, {"kv_bytes_per_token", 2}, {"n_embd", 8}, {"scratch_bytes", 50}};
}
QJsonArray devices() {
  return QJsonArray{QJsonObject{{"id", "cpu"}, {"kind", "cpu"}, {"bytes_total", 100000}, {"bandwidth_gbps", 50}},
                    QJsonObject{{"id", "gpu0"}, {"kind", "sim"}, {"simulated", true}, {"bytes_total", 3000}, {"bandwidth_gbps", 1000}}};
}

}  // namespace

class TestThemeContrast : public QObject {
  Q_OBJECT

 private slots:
  void contrastHelpers() {
    QCOMPARE(qRound(contrastRatio(Qt::black, Qt::white) * 10), 210);
    QCOMPARE(contrastRatio(QColor(0x77, 0x77, 0x77), QColor(0x77, 0x77, 0x77)), 1.0);
    QCOMPARE(textOn(QColor(0xf5, 0xe6, 0xb0)), QColor(Qt::black));  // pastel tile
    QCOMPARE(textOn(QColor(0x20, 0x20, 0x40)), QColor(Qt::white));
    const QColor darkGrey(0x2b, 0x2d, 0x31);
    QVERIFY(contrastRatio(QColor(0xc0, 0x20, 0x20), darkGrey) < 4.5);
    QVERIFY(contrastRatio(readableOn(QColor(0xc0, 0x20, 0x20), darkGrey), darkGrey) >= 4.5);
    QVERIFY(contrastRatio(readableOn(QColor(0xff, 0xd0, 0x40), Qt::white), Qt::white) >= 4.5);
  }

  void partsReadInBothThemes_data() {
    QTest::addColumn<QString>("theme");
    QTest::addColumn<QString>("part");
    for (const char* t : {"light", "dark"})
      for (const char* p : {"message", "placement tile", "placement error", "timeline plot", "problem panel"})
        QTest::newRow(qPrintable(QStringLiteral("%1 %2").arg(QLatin1String(t), QLatin1String(p)))) << QString::fromLatin1(t)
                                                                                                     << QString::fromLatin1(p);
  }
  void partsReadInBothThemes() {
    QFETCH(QString, theme);
    QFETCH(QString, part);
    // Shown in the other theme first: the switch happens while it is on screen.
    theme::apply(*qApp, theme == QLatin1String("dark") ? QStringLiteral("light") : QStringLiteral("dark"));
    QWidget host;
    host.setAutoFillBackground(true);
    auto* layout = new QVBoxLayout(&host);
    host.resize(700, 420);
    QWidget* measured = nullptr;
    MessageWidget* message = nullptr;
    PlacementEditor* editor = nullptr;
    TimelinePlot* plot = nullptr;
    if (part == QLatin1String("message")) {
      message = new MessageWidget(&host);
      StoredMessage m;
      m.role = QStringLiteral("assistant");
      m.content = QStringLiteral("Once upon a time **there was** a dragon.");
      m.tokens = 9;
      message->setMessage(m, false, true);
      layout->addWidget(message);
      measured = message->findChild<QTextBrowser*>(QStringLiteral("messageText"));
    } else if (part == QLatin1String("placement tile") || part == QLatin1String("placement error")) {
      editor = new PlacementEditor(&host);
      editor->setDevices(devices());
      editor->setModelInfo(modelInfo());
      layout->addWidget(editor);
    } else if (part == QLatin1String("timeline plot")) {
      plot = new TimelinePlot(&host);
      layout->addWidget(plot);
      measured = plot;
    } else {
      auto* panel = new EngineProblemPanel(&host);
      panel->setProblem(QStringLiteral("stories260K is not loaded: device 'gpu0': needs 1.2 MiB, has 64 KiB"));
      layout->addWidget(panel);
      measured = panel->textLabel();
    }
    layout->addStretch(1);
    host.show();
    QVERIFY(QTest::qWaitForWindowExposed(&host));

    theme::apply(*qApp, theme);  // live
    QCoreApplication::processEvents();
    const bool dark = theme == QLatin1String("dark");
    QCOMPARE(theme::isDark(), dark);

    if (editor) {
      PlacementView* view = editor->view();
      if (part == QLatin1String("placement error")) {
        editor->showError(QStringLiteral("placement names device 'gpu9', which is not among: cpu, gpu0"));
        QLabel* shown = nullptr;
        for (QLabel* l : editor->findChildren<QLabel*>())
          if (l->text().contains(QStringLiteral("gpu9"))) shown = l;
        QVERIFY(shown);
        measured = shown;
        // Colours set after the switch must follow a later switch too.
        theme::apply(*qApp, dark ? QStringLiteral("light") : QStringLiteral("dark"));
        theme::apply(*qApp, theme);
        QCoreApplication::processEvents();
      } else {
        // The embedding tile in the model column: a pastel cell with its name.
        const QRect cell = view->visualRect(editor->model()->index(0, 0));
        QVERIFY(cell.isValid());
        const QImage image = view->viewport()->grab(cell).toImage();
        const Reading r = read(image);
        QVERIFY2(r.best >= 4.5, qPrintable(QStringLiteral("tile text contrast %1 on %2").arg(r.best).arg(r.background.name())));
        return;
      }
    }
    if (plot) {
      plot->replotNow();
      const Reading r = read(grabIn(&host, measured));
      QVERIFY2(dark ? relativeLuminance(r.background) < 0.1 : relativeLuminance(r.background) > 0.6,
               qPrintable(QStringLiteral("plot background %1 in the %2 theme").arg(r.background.name(), theme)));
      QVERIFY2(r.best >= 4.5, qPrintable(QStringLiteral("axis text contrast %1").arg(r.best)));
      return;
    }
    QVERIFY(measured);
    const Reading r = read(grabIn(&host, measured));
    QVERIFY2(r.best >= 4.5, qPrintable(QStringLiteral("%1: text contrast %2 on %3 in the %4 theme")
                                           .arg(part).arg(r.best).arg(r.background.name(), theme)));
    if (message) {  // the message keeps the theme's own text colour
      const QColor text = host.palette().color(QPalette::WindowText);
      QVERIFY(contrastRatio(text, r.background) >= 4.5);
    }
  }

  void cleanupTestCase() { theme::apply(*qApp, QStringLiteral("light")); }
};

QTEST_MAIN(TestThemeContrast)
#include "test_theme_contrast.moc"
