// bench/gui_bench.cpp — how responsive the workstation's GUI thread stays while replies stream:
// starts the real window with its `strata-engine serve` child, streams replies for a while and
// reports the gaps between ticks of a 5 ms timer on the GUI thread (worst, p99, p50, in ms; time
// the thread waited for a CPU left out, see gui_gap_meter.h). Not run by CTest: the figure depends
// on the machine and its load; tests/ui/test_engine_gui.cpp only bounds it at 1 s.
//
//   gui_bench --model M.gguf [--engine path/strata-engine] [--seconds 10] [--tokens 400] [--threads 1]
#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTimer>

#include <cstdio>

#include "bench/gui_gap_meter.h"
#include "ui/app/app_settings.h"
#include "ui/app/main_window.h"
#include "ui/app/workstation.h"
#include "ui/chat/chat_controller.h"

namespace {
// Runs the event loop until `done` or `timeoutMs`; true when `done` held.
template <typename F>
bool waitUntil(F done, int timeoutMs) {
  QElapsedTimer t;
  t.start();
  while (!done()) {
    if (t.elapsed() > timeoutMs) return false;
    QEventLoop loop;
    QTimer::singleShot(10, &loop, &QEventLoop::quit);
    loop.exec();
  }
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QCommandLineParser cli;
  cli.setApplicationDescription(QStringLiteral("Gaps of the workstation's GUI thread while replies stream"));
  cli.addHelpOption();
  const QCommandLineOption model({QStringLiteral("m"), QStringLiteral("model")}, QStringLiteral("GGUF model"), QStringLiteral("path"));
  const QCommandLineOption engine(QStringLiteral("engine"), QStringLiteral("strata-engine to start (default: found as the GUI finds it)"), QStringLiteral("path"));
  const QCommandLineOption seconds(QStringLiteral("seconds"), QStringLiteral("seconds of streaming to watch"), QStringLiteral("s"), QStringLiteral("10"));
  const QCommandLineOption tokens(QStringLiteral("tokens"), QStringLiteral("max_tokens per reply"), QStringLiteral("n"), QStringLiteral("400"));
  const QCommandLineOption threads(QStringLiteral("threads"), QStringLiteral("engine CPU threads"), QStringLiteral("n"), QStringLiteral("1"));
  cli.addOptions({model, engine, seconds, tokens, threads});
  cli.process(app);
  if (!cli.isSet(model)) {
    std::fprintf(stderr, "gui_bench: --model is required\n");
    return 2;
  }

  AppSettings s;
  if (cli.isSet(engine)) s.enginePath = cli.value(engine);
  s.lastModel = cli.value(model);
  s.threads = cli.value(threads).toInt();
  s.defaultSampling = QJsonObject{{"temperature", 0.8}, {"max_tokens", cli.value(tokens).toInt()}};
  QTemporaryDir dir;
  Workstation ws(s, /*persist=*/false);
  ws.openStore(dir.filePath(QStringLiteral("bench.sqlite3")));
  MainWindow window(&ws);
  window.show();
  ws.start();
  if (!waitUntil([&] { return ws.state() == Workstation::EngineState::Ready; }, 120000)) {
    std::fprintf(stderr, "gui_bench: the engine did not become ready: %s\n", qPrintable(ws.stateText()));
    return 1;
  }

  GuiGapMeter meter(&app);
  const qint64 watchMs = static_cast<qint64>(cli.value(seconds).toDouble() * 1000);
  qint64 watchedMs = 0;
  int replies = 0;
  while (watchedMs < watchMs) {
    ws.chat()->newConversation();
    QElapsedTimer streaming;
    meter.begin();
    streaming.start();
    ws.chat()->send(QStringLiteral("Once upon a time there was a dragon"));
    if (!waitUntil([&] { return !ws.chat()->isStreaming(); }, 300000)) {
      std::fprintf(stderr, "gui_bench: a reply did not finish\n");
      return 1;
    }
    meter.end();
    watchedMs += streaming.elapsed();
    ++replies;
  }
  std::printf("gui_bench: %d replies, %.1f s of streaming, %zu ticks of 5 ms: gap worst %.1f ms, p99 %.1f ms, "
              "p50 %.1f ms (run-queue wait left out)\n",
              replies, watchedMs / 1000.0, meter.gapsUs().size(), meter.worstUs() / 1000.0,
              meter.quantileUs(0.99) / 1000.0, meter.quantileUs(0.5) / 1000.0);
  return 0;
}
