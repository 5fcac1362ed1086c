// ui/app/screenshot_script.cpp — the screenshot steps, each waiting asynchronously for the last.
#include "ui/app/screenshot_script.h"

#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QPixmap>
#include <QTimer>
#include <cstdio>

#include "ui/app/main_window.h"
#include "ui/app/workstation.h"
#include "ui/chat/chat_controller.h"
#include "ui/client/engine_client.h"
#include "ui/placement/placement_editor.h"
#include "ui/placement/placement_model.h"
#include "ui/profiler/timeline_plot.h"

#include <qcustomplot.h>

ScreenshotScript::ScreenshotScript(MainWindow* window, const QString& outDir, const QString& prompt, QObject* parent)
    : QObject(parent), window_(window), outDir_(outDir), prompt_(prompt) {}

void ScreenshotScript::start() {
  QDir().mkpath(outDir_);
  // The pictures at 1280x800 (as the checks); at QT_SCALE_FACTOR 1.5 the same logical size
  // squeezed into the screen, named "-scale1.5".
  const double scale = qEnvironmentVariable("QT_SCALE_FACTOR", QStringLiteral("1")).toDouble();
  if (scale > 1.0) suffix_ = QStringLiteral("-scale%1").arg(scale);
  window_->resize(1280, 800);
  window_->fitOnScreen();
  Workstation* ws = window_->workstation();
  // The profiler at its default size while the reply streams: a few tokens after the first.
  connect(ws->chat(), &ChatController::firstToken, this, [this] {
    if (duringReplySaved_) return;
    duringReplySaved_ = true;
    QTimer::singleShot(400, this, [this] { save(window_->profilerDock(), QStringLiteral("profiler-reply.png")); });
  });
  connect(ws->chat(), &ChatController::replyFinished, this, [this] { replyDone_ = true; });
  connect(ws->chat(), &ChatController::replyFailed, this, [this](int, const QString& m) { fail(m); });
  connect(ws->client(), &EngineClient::placementApplied, this, [this] { applied_ = true; });
  connect(ws->client(), &EngineClient::traceBatch, this, [this] { ++traceBatches_; });
  connect(ws->client(), &EngineClient::devicesReceived, this, [this] { devicesSeen_ = true; });
  connect(ws->client(), &EngineClient::requestFailed, this, [this](const QString& op, const QString& m) {
    if (op == QLatin1String("apply placement")) {
      std::fprintf(stderr, "screenshots: split placement refused (%s); continuing\n", qPrintable(m));
      applied_ = true;
    }
  });
  step(0);
}

void ScreenshotScript::waitFor(std::function<bool()> done, int timeoutMs, int next, const QString& what) {
  auto clock = std::make_shared<QElapsedTimer>();
  clock->start();
  auto* timer = new QTimer(this);
  timer->setInterval(100);
  connect(timer, &QTimer::timeout, this, [this, timer, clock, done, timeoutMs, next, what] {
    if (done()) {
      timer->deleteLater();
      step(next);
    } else if (clock->elapsed() > timeoutMs) {
      timer->deleteLater();
      fail(QStringLiteral("timed out waiting for ") + what);
    }
  });
  timer->start();
}

void ScreenshotScript::step(int n) {
  Workstation* ws = window_->workstation();
  switch (n) {
    case 0:
      waitFor([this, ws] { return ws->state() == Workstation::EngineState::Ready || (!ws->modelProblem().isEmpty() && devicesSeen_); }, 120000, 5,
              QStringLiteral("the engine"));
      return;
    case 5:
      if (ws->modelProblem().isEmpty()) return step(1);
      // Devices too small for the model: the explanation and its ways out, then done.
      window_->showTab(MainWindow::Tab::Chat);
      QApplication::processEvents();
      QApplication::exit(save(window_, QStringLiteral("too-small-devices.png")) ? 0 : 1);
      return;
    case 1: {
      // Split the blocks over the first two accelerators (simulated GPUs): embedding on the first,
      // head on the second, so the timeline shows two lanes and the transfers between them.
      const QJsonObject status = ws->lastStatus();
      const int nLayers = status.value(QStringLiteral("model")).toObject().value(QStringLiteral("n_layers")).toInt();
      QStringList accel;
      for (const QJsonValue& d : status.value(QStringLiteral("memory")).toArray()) {
        const QString id = d.toObject().value(QStringLiteral("device")).toString();
        if (id != QLatin1String("cpu") && !accel.contains(id)) accel << id;
      }
      QJsonObject placement = status.value(QStringLiteral("placement")).toObject();
      if (accel.size() < 2 || nLayers < 2 || placement.isEmpty()) {
        applied_ = true;
      } else {
        const int cut = (nLayers + 1) / 2;
        placement.insert(QStringLiteral("embedding"), QJsonObject{{QStringLiteral("device"), accel[0]}});
        placement.insert(QStringLiteral("head"), QJsonObject{{QStringLiteral("device"), accel[1]}});
        placement.insert(QStringLiteral("layers"),
                         QJsonArray{QJsonObject{{QStringLiteral("layers"), QStringLiteral("0-%1").arg(cut - 1)},
                                                {QStringLiteral("device"), accel[0]}},
                                    QJsonObject{{QStringLiteral("layers"), QStringLiteral("%1-%2").arg(cut).arg(nLayers - 1)},
                                                {QStringLiteral("device"), accel[1]}}});
        ws->applyPlacement(placement);
      }
      // Then the trace stream must be flowing, so the reply's events reach the profiler.
      waitFor([this] { return applied_ && traceBatches_ >= 3; }, 60000, 2, QStringLiteral("the placement and trace stream"));
      return;
    }
    case 2: {
      QJsonObject sampling = ws->chat()->sampling();
      sampling.insert(QStringLiteral("temperature"), 0.0);
      sampling.insert(QStringLiteral("max_tokens"), 200);
      ws->chat()->setSampling(sampling);
      window_->showTab(MainWindow::Tab::Chat);
      ws->chat()->send(prompt_);
      waitFor([this] { return replyDone_; }, 120000, 3, QStringLiteral("the reply"));
      return;
    }
    case 3:
      QTimer::singleShot(250, this, [this] { step(4); });  // the last trace batches of the reply
      return;
    case 4: {
      // Freeze the profiler on the reply: no idle batches after it, the view spanning its events.
      window_->setProfilerPaused(true);
      strata::ui::TimelinePlot* plot = window_->timelinePlot();
      double lo = 1e300, hi = -1e300;
      for (int lane = 0; lane < 16; ++lane)
        for (const auto& span : plot->laneSpans(lane)) {
          lo = qMin(lo, span.first);
          hi = qMax(hi, span.second);
        }
      if (hi > lo) {
        plot->setFollowLatest(false);
        plot->plot()->xAxis->setRange(lo, lo + qMin(hi - lo, 60.0));  // about a dozen tokens
        plot->replotNow();
      }
      window_->showTab(MainWindow::Tab::Chat);
      QApplication::processEvents();
      bool ok = save(window_, QStringLiteral("chat.png"));
      window_->showTab(MainWindow::Tab::Placement);
      // Show a tensor-group lane as well: blocks can be dropped there to split their tensors.
      strata::ui::PlacementModel* pm = window_->placementEditor()->model();
      if (pm->laneOfDevice(QStringLiteral("gpu0")) >= 0 && pm->laneOfDevice(QStringLiteral("gpu1")) >= 0)
        pm->addGroupLane({QStringLiteral("gpu0"), QStringLiteral("gpu1")}, {2.0, 1.0});
      // The lanes' figures are the engine's answer: wait for it (bounded) before the picture.
      QElapsedTimer asked;
      asked.start();
      while (!pm->estimateCurrent() && asked.elapsed() < 10000) QApplication::processEvents(QEventLoop::AllEvents, 50);
      QApplication::processEvents();
      ok = save(window_, QStringLiteral("placement.png")) && ok;
      // With every block's parts as rows (attention, FFN part), each with its size.
      pm->setAllExpanded(true);
      QApplication::processEvents();
      ok = save(window_, QStringLiteral("placement-parts.png")) && ok;
      pm->setAllExpanded(false);
      window_->showTab(MainWindow::Tab::Chat);
      window_->resizeDocks({window_->profilerDock()}, {420}, Qt::Vertical);
      QApplication::processEvents();
      QTimer::singleShot(300, this, [this, ok] {
        const bool all = save(window_->profilerDock(), QStringLiteral("profiler.png")) && ok;
        QApplication::exit(all ? 0 : 1);
      });
      return;
    }
  }
}

bool ScreenshotScript::save(QWidget* w, const QString& name) {
  QString file = name;
  file.insert(file.lastIndexOf(QLatin1Char('.')), suffix_);
  const QString path = QDir(outDir_).filePath(file);
  const bool ok = w->grab().save(path);
  std::fprintf(stderr, "screenshots: %s %s\n", ok ? "wrote" : "could not write", qPrintable(path));
  return ok;
}

void ScreenshotScript::fail(const QString& why) {
  std::fprintf(stderr, "screenshots: %s\n", qPrintable(why));
  QApplication::exit(1);
}
