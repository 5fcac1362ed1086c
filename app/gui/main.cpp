// app/gui/main.cpp — `strata`, the desktop workstation: command line, theme, the Workstation (engine
// child or remote engine, conversations) and the main window; optionally a screenshot run.
// SIGTERM, SIGINT and SIGHUP end it like File ▸ Quit; a second instance attaches to the engine of
// the first (shared_engine.h) unless told --own-engine.
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QIcon>
#include <QTimer>

#include <cstdio>
#include <cstring>
#include <memory>

#include "ui/app/app_settings.h"
#include "ui/app/main_window.h"
#include "ui/app/quit_signals.h"
#include "ui/app/screenshot_script.h"
#include "ui/app/theme.h"
#include "ui/app/workstation.h"
#include "ui/chat/chat_controller.h"

namespace {

// The command line, described once: for the run, and for --help without a display.
struct Cli {
  QCommandLineParser parser;
  const QCommandLineOption model{{QStringLiteral("m"), QStringLiteral("model")}, QStringLiteral("GGUF model to load"), QStringLiteral("path")};
  const QCommandLineOption devices{QStringLiteral("devices"), QStringLiteral("--devices for the local engine, e.g. cpu,sim:gpu0:24GiB"), QStringLiteral("spec")};
  const QCommandLineOption ctx{QStringLiteral("ctx"), QStringLiteral("context length"), QStringLiteral("n")};
  const QCommandLineOption threads{QStringLiteral("threads"), QStringLiteral("engine CPU threads"), QStringLiteral("n")};
  const QCommandLineOption engine{QStringLiteral("engine"), QStringLiteral("path of strata-engine"), QStringLiteral("path")};
  const QCommandLineOption remote{QStringLiteral("remote"), QStringLiteral("attach to an engine at this URL"), QStringLiteral("url")};
  const QCommandLineOption key{QStringLiteral("api-key"), QStringLiteral("API key of the remote engine"), QStringLiteral("key")};
  const QCommandLineOption dataDir{QStringLiteral("data-dir"), QStringLiteral("folder of the conversation database (default: the user's data folder)"), QStringLiteral("dir")};
  const QCommandLineOption noSettings{QStringLiteral("no-settings"), QStringLiteral("ignore and do not change saved settings")};
  const QCommandLineOption shots{QStringLiteral("screenshot-script"), QStringLiteral("save screenshots into this folder and quit (also STRATA_SCREENSHOT_DIR)"), QStringLiteral("dir")};
  const QCommandLineOption prompt{QStringLiteral("prompt"), QStringLiteral("send this in a new chat once the engine is ready (and the prompt of the screenshot run)"), QStringLiteral("text"), QStringLiteral("Once upon a time")};
  const QCommandLineOption ownEngine{QStringLiteral("own-engine"), QStringLiteral("start an engine of our own even when another workstation of this user runs one")};

  Cli() {
    parser.setApplicationDescription(QStringLiteral("Strata: chat, place and profile LLMs across your devices."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addOptions({model, devices, ctx, threads, engine, remote, key, dataDir, noSettings, shots, prompt, ownEngine});
  }
};

void nameApplication() {
  QCoreApplication::setOrganizationName(QStringLiteral("Strata"));
  QCoreApplication::setApplicationName(QStringLiteral("Strata"));
  QCoreApplication::setApplicationVersion(QStringLiteral(STRATA_GUI_VERSION));
}

}  // namespace

int main(int argc, char** argv) {
  // --version answers without a display (the package test runs it from a scratch root, headless).
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--version") == 0 || std::strcmp(argv[i], "-v") == 0) {
      std::printf("strata %s\n", STRATA_GUI_VERSION);
      return 0;
    }
  }
  // --help answers without a display too (a terminal on a headless machine): a core application
  // prints it and exits before the GUI would try to open a display.
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "-?") ||
        !std::strcmp(argv[i], "--help-all")) {
      QCoreApplication core(argc, argv);
      nameApplication();
      Cli cli;
      cli.parser.process(core);  // prints the help and exits
      return 0;
    }
  }
  QApplication app(argc, argv);
  Q_INIT_RESOURCE(strata);  // resources/strata.qrc, compiled into the static strata_ui
  QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/strata.svg")));
  QGuiApplication::setDesktopFileName(QStringLiteral(STRATA_APP_ID));  // the installed .desktop entry
  QuitSignals quitSignals;  // from here on a signal waits for the event loop (connected below)
  nameApplication();

  Cli options;
  QCommandLineParser& cli = options.parser;
  const QCommandLineOption &model = options.model, &devices = options.devices, &ctx = options.ctx,
                           &threads = options.threads, &engine = options.engine, &remote = options.remote,
                           &key = options.key, &dataDir = options.dataDir, &noSettings = options.noSettings,
                           &shots = options.shots, &prompt = options.prompt, &ownEngine = options.ownEngine;
  cli.process(app);

  QString shotDir = cli.value(shots);
  if (shotDir.isEmpty()) shotDir = qEnvironmentVariable("STRATA_SCREENSHOT_DIR");
  const bool persist = !cli.isSet(noSettings) && shotDir.isEmpty();

  AppSettings settings = persist ? AppSettings::load() : AppSettings{};
  if (!persist) settings.defaultSampling = {};
  // Command-line options are for this run only: the saved settings change only in the window.
  RunOverrides run;
  if (cli.isSet(model)) run.model = QDir::current().absoluteFilePath(cli.value(model));
  if (cli.isSet(devices)) run.devices = cli.value(devices);
  if (cli.isSet(ctx)) run.ctx = cli.value(ctx).toInt();
  if (cli.isSet(threads)) run.threads = cli.value(threads).toInt();
  if (cli.isSet(engine)) run.enginePath = cli.value(engine);
  if (cli.isSet(remote)) {
    run.remoteUrl = cli.value(remote);
    run.remoteKey = cli.value(key);
  }
  theme::apply(app, settings.theme);

  Workstation ws(settings, persist);
  ws.setRunOverrides(run);
  ws.setShareEngine(shotDir.isEmpty() && !cli.isSet(ownEngine));
  const QString db = cli.isSet(dataDir) ? QDir(cli.value(dataDir)).filePath(QStringLiteral("strata.sqlite3")) : QString();
  ws.openStore(db);
  MainWindow window(&ws);
  QObject::connect(&quitSignals, &QuitSignals::received, &window, [&window](int sig) {
    static bool quitting = false;
    if (quitting) return;
    quitting = true;
    qInfo("strata: %s: quitting", qPrintable(QuitSignals::signalName(sig)));
    window.close();  // as File ▸ Quit: ends the reply in progress, saves the settings
    QApplication::closeAllWindows();
    QCoreApplication::quit();  // also leaves the event loop of a modal dialog; ~Workstation stops the engine
  });
  if (!shotDir.isEmpty()) window.resize(1280, 800);  // the size the issue checks readability at
  window.show();
  ws.start();
  ws.rescanModels();

  if (shotDir.isEmpty() && cli.isSet(prompt)) {
    const QString text = cli.value(prompt);
    auto once = std::make_shared<QMetaObject::Connection>();
    *once = QObject::connect(&ws, &Workstation::stateChanged, &ws, [&ws, text, once](Workstation::EngineState s) {
      if (s != Workstation::EngineState::Ready) return;
      QObject::disconnect(*once);
      ws.chat()->newConversation();
      ws.chat()->send(text);
    });
  }
  if (!shotDir.isEmpty()) {
    auto* script = new ScreenshotScript(&window, shotDir, cli.value(prompt), &window);
    QTimer::singleShot(0, script, &ScreenshotScript::start);
  }
  return app.exec();
}
