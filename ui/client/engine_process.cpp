// ui/client/engine_process.cpp — child process lifecycle: launch, readiness polling, crash restart
// with backoff, model and placement reload. Never blocks the GUI thread except in the destructor.
#include "ui/client/engine_process.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QFile>
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QRandomGenerator>
#include <QStandardPaths>
#include <QTcpServer>

#include "ui/client/engine_client.h"

namespace {
QString samePath(const QString& p) {
  const QFileInfo fi(p);
  const QString c = fi.canonicalFilePath();
  return c.isEmpty() ? fi.absoluteFilePath() : c;
}
}  // namespace

EngineProcess::EngineProcess(EngineClient* client, QObject* parent) : QObject(parent), client_(client) {
  pollTimer_.setInterval(100);
  connect(&pollTimer_, &QTimer::timeout, this, &EngineProcess::poll);
  restartTimer_.setSingleShot(true);
  connect(&restartTimer_, &QTimer::timeout, this, &EngineProcess::launch);
}

EngineProcess::~EngineProcess() {
  stopping_ = true;
  if (proc_) {
    proc_->disconnect(this);
    proc_->terminate();
    if (!proc_->waitForFinished(1500)) {
      proc_->kill();
      proc_->waitForFinished(1000);
    }
  }
}

QString EngineProcess::stateName(State s) {
  switch (s) {
    case State::Stopped: return QStringLiteral("stopped");
    case State::Starting: return QStringLiteral("starting");
    case State::Loading: return QStringLiteral("loading model");
    case State::Ready: return QStringLiteral("ready");
    case State::Crashed: return QStringLiteral("crashed, restarting");
  }
  return {};
}

qint64 EngineProcess::pid() const {
  return proc_ && proc_->state() != QProcess::NotRunning ? proc_->processId() : 0;
}

QString EngineProcess::findEngineBinary() {
  const QString env = qEnvironmentVariable("STRATA_ENGINE");
  if (!env.isEmpty() && QFileInfo(env).isExecutable()) return env;
  const QString dir = QCoreApplication::applicationDirPath();
  for (const QString& c : {dir + QStringLiteral("/strata-engine"), dir + QStringLiteral("/app/strata-engine"),
                           dir + QStringLiteral("/../app/strata-engine")}) {
    if (QFileInfo(c).isExecutable()) return QDir::cleanPath(c);
  }
  return QStandardPaths::findExecutable(QStringLiteral("strata-engine"));
}

quint16 EngineProcess::freeLoopbackPort() {
  QTcpServer probe;
  if (!probe.listen(QHostAddress::LocalHost, 0)) return 0;
  const quint16 port = probe.serverPort();
  probe.close();
  return port;
}

QString EngineProcess::randomKey() {
  QByteArray bytes(24, Qt::Uninitialized);
  QRandomGenerator::system()->generate(reinterpret_cast<quint32*>(bytes.data()),
                                       reinterpret_cast<quint32*>(bytes.data() + bytes.size()));
  return QString::fromLatin1(bytes.toHex());
}

QStringList EngineProcess::arguments() const {
  QStringList args{QStringLiteral("serve"), QStringLiteral("--host"), QStringLiteral("127.0.0.1")};
  if (!modelPath_.isEmpty()) args << QStringLiteral("--model") << modelPath_;
  if (!options_.devices.isEmpty()) args << QStringLiteral("--devices") << options_.devices;
  if (options_.ctx > 0) args << QStringLiteral("--ctx") << QString::number(options_.ctx);
  if (options_.threads > 0) args << QStringLiteral("--threads") << QString::number(options_.threads);
  if (!options_.draftModel.isEmpty()) args << QStringLiteral("--draft") << options_.draftModel;
  args << options_.extraArgs;
  return args;
}

void EngineProcess::setState(State s) {
  if (state_ == s) return;
  state_ = s;
  emit stateChanged(s);
}

void EngineProcess::start() {
  stopping_ = false;
  backoffMs_ = 250;
  lastFailure_.clear();
  if (proc_) return;
  launch();
}

void EngineProcess::stop() {
  stopping_ = true;
  restartTimer_.stop();
  pollTimer_.stop();
  if (proc_) {
    proc_->terminate();
    QTimer::singleShot(2000, proc_, [p = proc_] { p->kill(); });
  } else {
    setState(State::Stopped);
  }
}

void EngineProcess::restart() {
  lastFailure_.clear();  // asked for: not a failure of its own
  if (proc_) {
    stopping_ = false;
    proc_->kill();  // onFinished restarts it
  } else {
    start();
  }
}

void EngineProcess::launch() {
  if (proc_ || stopping_) return;
  const QString program = options_.program.isEmpty() ? findEngineBinary() : options_.program;
  if (program.isEmpty()) {
    lastError_ = tr("strata-engine was not found next to the application or on PATH");
    setState(State::Stopped);
    return;
  }
  const quint16 port = freeLoopbackPort();
  const QString key = randomKey();
  QStringList args = arguments();
  args << QStringLiteral("--port") << QString::number(port) << QStringLiteral("--api-key") << key;
  // The engine stops when this process dies, whatever the signal (it also watches its stdin pipe,
  // which QProcess keeps open for as long as we live).
  if (options_.exitWithParent)
    args << QStringLiteral("--parent-pid") << QString::number(QCoreApplication::applicationPid());

  proc_ = new QProcess(this);
  proc_->setProcessChannelMode(QProcess::MergedChannels);
  connect(proc_, &QProcess::readyRead, this, &EngineProcess::readOutput);
  connect(proc_, &QProcess::finished, this, &EngineProcess::onFinished);
  connect(proc_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e == QProcess::FailedToStart && proc_) {
      lastError_ = tr("could not start %1: %2").arg(proc_->program(), proc_->errorString());
      onFinished(-1, QProcess::CrashExit);
    }
  });
  reloadSent_ = false;
  reloadDone_ = false;
  pollInFlight_ = false;
  ++launches_;
  setState(State::Starting);
  client_->setEndpoint(QUrl(QStringLiteral("http://127.0.0.1:%1").arg(port)), key);
  proc_->start(program, args);
  startClock_.start();
  pollTimer_.start();
}

void EngineProcess::readOutput() {
  if (!proc_) return;
  const QString text = QString::fromUtf8(proc_->readAll());
  for (const QString& line : text.split('\n', Qt::SkipEmptyParts)) {
    output_.append(line);
    emit outputLine(line);
  }
  while (output_.size() > 200) output_.removeFirst();
}

void EngineProcess::poll() {
  if (!proc_) return;
  if (state_ == State::Starting && startClock_.elapsed() > options_.startTimeoutMs) {
    lastError_ = tr("the engine did not answer within %1 s").arg(options_.startTimeoutMs / 1000);
    proc_->kill();
    return;
  }
  if (pollInFlight_) return;
  pollInFlight_ = true;
  const int launchId = launches_;
  client_->send("GET", QStringLiteral("/strata/v1/status"), QJsonValue::Undefined, this,
                [this, launchId](const EngineResult& r) {
                  if (launchId != launches_) return;
                  pollInFlight_ = false;
                  if (r.ok()) onStatus(r.object());
                }, QString(), 5000);
}

void EngineProcess::onStatus(const QJsonObject& status) {
  if (!proc_ || state_ == State::Ready) return;
  const QString st = status.value(QStringLiteral("state")).toString();
  const QJsonObject model = status.value(QStringLiteral("model")).toObject();
  if (st == QLatin1String("loading")) {
    setState(State::Loading);
    return;
  }
  // Up, but the model it was started with does not fit its devices: ready with no model (the
  // status says why); reloading it would fail the same way.
  const QJsonValue startupError = status.value(QStringLiteral("startup")).toObject().value(QStringLiteral("error"));
  if (st == QLatin1String("empty") && startupError.isString()) reloadSent_ = reloadDone_ = true;
  if (!modelPath_.isEmpty() && !reloadSent_) {
    const bool sameModel = st == QLatin1String("ready") && !model.isEmpty() &&
                           samePath(model.value(QStringLiteral("path")).toString()) == samePath(modelPath_);
    const QJsonObject current = status.value(QStringLiteral("placement")).toObject();
    if (!sameModel) {
      reloadSent_ = true;
      setState(State::Loading);
      QJsonObject body{{QStringLiteral("path"), modelPath_}};
      if (!placement_.isEmpty()) body.insert(QStringLiteral("placement"), placement_);
      if (options_.ctx > 0) body.insert(QStringLiteral("n_ctx"), options_.ctx);
      client_->send("POST", QStringLiteral("/strata/v1/model/load"), body, this, [this](const EngineResult& r) {
        if (!r.ok()) lastError_ = tr("reloading the model failed: %1").arg(r.error);
        reloadDone_ = true;
      }, QStringLiteral("process-load"), 600000);
      return;
    }
    if (!placement_.isEmpty() && current != placement_) {
      reloadSent_ = true;
      setState(State::Loading);
      client_->send("PUT", QStringLiteral("/strata/v1/placement"), placement_, this, [this](const EngineResult& r) {
        if (!r.ok()) lastError_ = tr("restoring the placement failed: %1").arg(r.error);
        reloadDone_ = true;
      }, QStringLiteral("process-load"), 600000);
      return;
    }
  }
  if (reloadSent_ && !reloadDone_) return;  // the load or placement request is still under way
  pollTimer_.stop();
  upClock_.start();
  lastFailure_.clear();
  setState(State::Ready);
  emit ready(status);
}

QString EngineProcess::signalName(int signal) {
  switch (signal) {
    case 6: return QStringLiteral(" (SIGABRT)");
    case 9: return QStringLiteral(" (SIGKILL)");
    case 11: return QStringLiteral(" (SIGSEGV)");
    case 15: return QStringLiteral(" (SIGTERM)");
    case 4: return QStringLiteral(" (SIGILL)");
    case 7: return QStringLiteral(" (SIGBUS)");
    case 8: return QStringLiteral(" (SIGFPE)");
    default: return {};
  }
}

QString EngineProcess::writeCrashLog(const QString& what) const {
  QString dir = QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation);
  if (dir.isEmpty()) dir = QDir::tempPath();
  dir += QStringLiteral("/logs");
  if (!QDir().mkpath(dir)) return {};
  QFile f(dir + QStringLiteral("/engine-%1.log").arg(QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss-zzz"))));
  if (!f.open(QIODevice::WriteOnly | QIODevice::Text)) return {};
  f.write((what + QLatin1Char('\n') + output_.join(QLatin1Char('\n')) + QLatin1Char('\n')).toUtf8());
  return f.fileName();
}

void EngineProcess::onFinished(int exitCode, QProcess::ExitStatus status) {
  if (!proc_) return;
  pollTimer_.stop();
  QProcess* p = proc_;
  proc_ = nullptr;
  p->disconnect(this);
  p->deleteLater();
  if (stopping_) {
    setState(State::Stopped);
    return;
  }
  // What happened (the signal or the exit code: on Unix a crash's exit code is the signal), what
  // is kept, and where its output went — not its last line, which is rarely the reason.
  const QString what = status == QProcess::CrashExit ? tr("the engine was killed by signal %1%2").arg(exitCode).arg(signalName(exitCode))
                                                     : tr("the engine exited with code %1").arg(exitCode);
  const QString log = writeCrashLog(what);
  QString reason = what + tr("; your chats and the partial reply are kept, the model and placement come back on restart");
  if (!log.isEmpty()) reason += tr("; its output: %1").arg(log);
  // Two failures are "the same" when the cause and the last line agree (the log path differs).
  const QString failureKey = what + QLatin1Char('|') + (output_.isEmpty() ? QString() : output_.last());
  if (lastError_.isEmpty() || status == QProcess::CrashExit) lastError_ = reason;
  if (upClock_.isValid() && upClock_.elapsed() > 30000) backoffMs_ = 250;
  upClock_.invalidate();
  if (!lastFailure_.isEmpty() && lastFailure_ == failureKey) {
    lastError_ = reason;
    setState(State::Stopped);
    emit gaveUp(reason);
    return;
  }
  lastFailure_ = failureKey;
  ++restarts_;
  setState(State::Crashed);
  emit crashed(reason);
  restartTimer_.start(backoffMs_);
  backoffMs_ = qMin(backoffMs_ * 2, 8000);
}
