// tests/ui/test_workstation_lifetime.cpp — the `strata` executable as a process (offscreen) with its
// `strata-engine serve` child and stories260K: SIGKILL of the workstation takes its engine along
// within 2 s; SIGTERM ends it like File ▸ Quit (exit 0, the chat stored complete, engine and runtime
// file gone); a second workstation attaches to the first one's engine instead of starting its own
// and leaves it running when it quits, or starts its own when the first quits; one that cannot
// attach says why and starts its own.
// Each test has its own XDG_RUNTIME_DIR; every wait polls against a deadline.
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSignalSpy>
#include <QRandomGenerator>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>

#include <functional>
#include <memory>

#include <signal.h>
#include <sys/stat.h>

#include "ui/app/quit_signals.h"
#include "ui/storage/conversation_store.h"

namespace {
QString engineBinary() { return qEnvironmentVariable("STRATA_ENGINE", QStringLiteral(STRATA_ENGINE_BINARY)); }
QString modelPath() { return QStringLiteral(STRATA_SHARED_MODELS_DIR "/stories260K.gguf"); }
const QString kPrompt = QStringLiteral("Once upon a time");

struct ProcInfo {
  qint64 ppid = 0;
  char state = 0;
  QString comm;
};

// /proc/PID/stat: "PID (comm) STATE PPID ..."; state 0 when there is no such process.
ProcInfo procInfo(qint64 pid) {
  QFile f(QStringLiteral("/proc/%1/stat").arg(pid));
  ProcInfo p;
  if (!f.open(QIODevice::ReadOnly)) return p;
  const QByteArray s = f.readAll();
  const int open = s.indexOf('('), close = s.lastIndexOf(')');
  if (open < 0 || close < 0 || close + 2 >= s.size()) return p;
  p.comm = QString::fromUtf8(s.mid(open + 1, close - open - 1));
  const QList<QByteArray> rest = s.mid(close + 2).split(' ');
  p.state = rest.value(0).isEmpty() ? 0 : rest.value(0).at(0);
  p.ppid = rest.value(1).toLongLong();
  return p;
}

bool alive(qint64 pid) {
  const char st = procInfo(pid).state;
  return st != 0 && st != 'Z' && st != 'X';
}

// Live strata-engine processes whose parent is `pid`.
QList<qint64> enginesOf(qint64 pid) {
  QList<qint64> out;
  const QStringList entries = QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
  for (const QString& e : entries) {
    bool ok = false;
    const qint64 child = e.toLongLong(&ok);
    if (!ok) continue;
    const ProcInfo p = procInfo(child);
    if (p.ppid == pid && p.comm == QLatin1String("strata-engine") && p.state != 'Z') out.append(child);
  }
  return out;
}

bool waitFor(const std::function<bool()>& done, int timeoutMs) {
  QElapsedTimer t;
  t.start();
  while (!done()) {
    if (t.elapsed() > timeoutMs) return false;
    QTest::qWait(20);
  }
  return true;
}

QJsonObject readJson(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readAll()).object();
}

// Rows of `sql` in a store that another process may be writing (read-only connection).
int countRows(const QString& dbPath, const QString& sql) {
  const QString name = QStringLiteral("peek-%1").arg(QRandomGenerator::global()->generate());
  int n = -1;
  {
    QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
    db.setDatabaseName(dbPath);
    db.setConnectOptions(QStringLiteral("QSQLITE_OPEN_READONLY;QSQLITE_BUSY_TIMEOUT=200"));
    if (db.open()) {
      QSqlQuery q(db);
      if (q.exec(sql) && q.next()) n = q.value(0).toInt();
    }
  }
  QSqlDatabase::removeDatabase(name);
  return n;
}
}  // namespace

class TestWorkstationLifetime : public QObject {
  Q_OBJECT
  QTemporaryDir root_;
  int dirs_ = 0;
  std::vector<std::unique_ptr<QProcess>> guis_;
  QList<qint64> engines_;  // killed at cleanup if a failed test left them running

  QString newDir() {
    const QString d = root_.filePath(QString::number(++dirs_));
    QDir().mkpath(d);
    QFile::setPermissions(d, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
    return d;
  }

  // `strata` with its own data folder and the given runtime folder.
  QProcess* startGui(const QString& runtimeDir, const QString& dataDir, const QStringList& extra = {}) {
    auto p = std::make_unique<QProcess>();
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("XDG_RUNTIME_DIR"), runtimeDir);
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), dataDir + QStringLiteral("/config"));
    env.insert(QStringLiteral("XDG_DATA_HOME"), dataDir + QStringLiteral("/data"));
    env.insert(QStringLiteral("XDG_CACHE_HOME"), dataDir + QStringLiteral("/cache"));
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    p->setProcessEnvironment(env);
    p->setProcessChannelMode(QProcess::MergedChannels);
    QStringList args{QStringLiteral("--no-settings"), QStringLiteral("--data-dir"), dataDir,
                     QStringLiteral("--engine"), engineBinary(), QStringLiteral("--model"), modelPath(),
                     QStringLiteral("--threads"), QStringLiteral("1")};
    p->start(QStringLiteral(STRATA_GUI_BINARY), args + extra);
    guis_.push_back(std::move(p));
    return guis_.back().get();
  }

  static QString runtimeFile(const QString& runtimeDir) { return runtimeDir + QStringLiteral("/strata-engine.json"); }
  static QString dbOf(const QString& dataDir) { return dataDir + QStringLiteral("/strata.sqlite3"); }
  static QString output(QProcess* p) { return QString::fromUtf8(p->peek(1 << 20)); }

  // Waits until the workstation lists its engine as ready; returns the engine's pid (0: it did not).
  qint64 waitPublished(QProcess* gui, const QString& runtimeDir) {
    qint64 engine = 0;
    waitFor([&] {
      const QJsonObject o = readJson(runtimeFile(runtimeDir));
      if (o.value(QStringLiteral("owner_pid")).toInteger() != gui->processId()) return false;
      engine = o.value(QStringLiteral("engine_pid")).toInteger();
      return engine > 0;
    }, 20000);
    if (engine > 0) engines_.append(engine);
    return engine;
  }

  static bool quit(QProcess* gui, int sig) {
    ::kill(static_cast<pid_t>(gui->processId()), sig);
    return waitFor([gui] { return gui->state() == QProcess::NotRunning; }, 10000);
  }

 private slots:
  void initTestCase() {
    QVERIFY(root_.isValid());
    if (!QFileInfo::exists(modelPath())) QFAIL("stories260K.gguf missing from the shared models folder");
    QVERIFY2(QFileInfo(QStringLiteral(STRATA_GUI_BINARY)).isExecutable(), STRATA_GUI_BINARY);
  }

  void cleanup() {
    for (auto& p : guis_) {
      if (p->state() != QProcess::NotRunning) {
        p->kill();
        p->waitForFinished(5000);
      }
    }
    guis_.clear();
    for (qint64 pid : std::as_const(engines_))
      if (alive(pid) && procInfo(pid).comm == QLatin1String("strata-engine")) ::kill(static_cast<pid_t>(pid), SIGKILL);
    engines_.clear();
  }

  // In this process: each of the three signals arrives once, on the GUI thread, as received().
  void quitSignalsArriveInTheEventLoop() {
    QuitSignals signals_;
    QSignalSpy spy(&signals_, &QuitSignals::received);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) QCOMPARE(::raise(sig), 0);
    QVERIFY(waitFor([&] { return spy.size() == 3; }, 5000));
    QCOMPARE(spy.at(0).at(0).toInt(), SIGTERM);
    QCOMPARE(spy.at(1).at(0).toInt(), SIGINT);
    QCOMPARE(spy.at(2).at(0).toInt(), SIGHUP);
    QCOMPARE(QuitSignals::signalName(SIGHUP), QStringLiteral("SIGHUP"));
  }

  void sigkillTakesTheEngineAlong() {
    const QString run = newDir(), data = newDir();
    QProcess* gui = startGui(run, data);
    const qint64 engine = waitPublished(gui, run);
    QVERIFY2(engine > 0, qPrintable(output(gui)));
    QCOMPARE(procInfo(engine).ppid, gui->processId());
    struct stat st {};
    QCOMPARE(::stat(QFile::encodeName(runtimeFile(run)).constData(), &st), 0);
    QCOMPARE(st.st_mode & 0777, 0600u);  // it holds the API key

    QElapsedTimer sinceKill;
    sinceKill.start();
    ::kill(static_cast<pid_t>(gui->processId()), SIGKILL);
    QVERIFY2(waitFor([&] { return !alive(engine); }, 2000),
             qPrintable(QStringLiteral("engine %1 still running %2 ms after SIGKILL of the workstation")
                            .arg(engine).arg(sinceKill.elapsed())));
  }

  void sigtermQuitsLikeFileQuit() {
    const QString run = newDir(), data = newDir();
    QProcess* gui = startGui(run, data, {QStringLiteral("--prompt"), kPrompt});
    const qint64 engine = waitPublished(gui, run);
    QVERIFY2(engine > 0, qPrintable(output(gui)));
    // The reply row exists from the moment the reply starts: quit while it streams or just after.
    QVERIFY2(waitFor([&] { return countRows(dbOf(data), QStringLiteral("SELECT COUNT(*) FROM messages WHERE role = 'assistant'")) > 0; }, 20000),
             qPrintable(output(gui)));

    QVERIFY2(quit(gui, SIGTERM), qPrintable(output(gui)));
    QCOMPARE(gui->exitStatus(), QProcess::NormalExit);  // not killed by the signal
    QCOMPARE(gui->exitCode(), 0);
    QVERIFY2(output(gui).contains(QStringLiteral("SIGTERM: quitting")), qPrintable(output(gui)));
    QVERIFY2(waitFor([&] { return !alive(engine); }, 2000), "the engine outlived its workstation");
    QVERIFY(!QFile::exists(runtimeFile(run)));

    ConversationStore store;
    QVERIFY(store.open(dbOf(data)));
    const QList<StoredConversation> all = store.conversations();
    QCOMPARE(all.size(), 1);
    const QList<StoredMessage> messages = store.messages(all.first().id);
    QCOMPARE(messages.size(), 2);
    QCOMPARE(messages[0].content, kPrompt);
    QCOMPARE(messages[1].role, QStringLiteral("assistant"));
    QVERIFY2(messages[1].complete, qPrintable(messages[1].finishReason));  // ended and stored, not cut off
    QVERIFY(!messages[1].finishReason.isEmpty());
  }

  void secondInstanceAttaches() {
    const QString run = newDir(), dataA = newDir(), dataB = newDir();
    QProcess* a = startGui(run, dataA);
    const qint64 engine = waitPublished(a, run);
    QVERIFY2(engine > 0, qPrintable(output(a)));

    QProcess* b = startGui(run, dataB, {QStringLiteral("--prompt"), kPrompt});
    QVERIFY2(waitFor([&] { return output(b).contains(QStringLiteral("attached to the engine of")); }, 20000), qPrintable(output(b)));
    QVERIFY2(output(b).contains(QStringLiteral("(pid %1)").arg(a->processId())), qPrintable(output(b)));
    // Its chat goes through the first workstation's engine.
    QVERIFY2(waitFor([&] { return countRows(dbOf(dataB), QStringLiteral("SELECT COUNT(*) FROM messages WHERE role = 'assistant' AND complete = 1 AND content <> ''")) > 0; }, 20000),
             qPrintable(output(b)));
    QVERIFY2(enginesOf(b->processId()).isEmpty(), "the second workstation started an engine");
    QCOMPARE(enginesOf(a->processId()), QList<qint64>{engine});
    QCOMPARE(readJson(runtimeFile(run)).value(QStringLiteral("owner_pid")).toInteger(), a->processId());

    // The second one quits: the engine and its listing stay for the first.
    QVERIFY(quit(b, SIGTERM));
    QCOMPARE(b->exitCode(), 0);
    QVERIFY(alive(engine));
    QCOMPARE(readJson(runtimeFile(run)).value(QStringLiteral("owner_pid")).toInteger(), a->processId());

    QVERIFY(quit(a, SIGTERM));
    QCOMPARE(a->exitCode(), 0);
    QVERIFY(waitFor([&] { return !alive(engine); }, 2000));
    QVERIFY(!QFile::exists(runtimeFile(run)));
  }

  // The first one quits while the second uses its engine: the second starts and lists its own.
  void secondTakesOverWhenTheFirstQuits() {
    const QString run = newDir(), dataA = newDir(), dataB = newDir();
    QProcess* a = startGui(run, dataA);
    const qint64 engineA = waitPublished(a, run);
    QVERIFY2(engineA > 0, qPrintable(output(a)));
    QProcess* b = startGui(run, dataB);
    QVERIFY2(waitFor([&] { return output(b).contains(QStringLiteral("attached to the engine of")); }, 20000), qPrintable(output(b)));

    QVERIFY(quit(a, SIGTERM));
    QVERIFY(waitFor([&] { return !alive(engineA); }, 2000));
    const qint64 engineB = waitPublished(b, run);
    QVERIFY2(engineB > 0, qPrintable(output(b)));
    QCOMPARE(enginesOf(b->processId()), QList<qint64>{engineB});
    QVERIFY(quit(b, SIGTERM));
    QVERIFY(waitFor([&] { return !alive(engineB); }, 2000));
  }

  void cannotAttachSaysWhyAndStartsItsOwn() {
    const QString run = newDir(), data = newDir();
    // Listed by a live process (this test) at a port where nothing answers.
    QTcpServer probe;
    QVERIFY(probe.listen(QHostAddress::LocalHost, 0));
    const quint16 port = probe.serverPort();
    probe.close();
    QFile f(runtimeFile(run));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QJsonDocument(QJsonObject{{"url", QStringLiteral("http://127.0.0.1:%1").arg(port)},
                                      {"api_key", "k"},
                                      {"engine_pid", 1},
                                      {"owner_pid", QCoreApplication::applicationPid()}})
                .toJson());
    f.close();

    QProcess* gui = startGui(run, data);
    QVERIFY2(waitFor([&] { return output(gui).contains(QStringLiteral("does not answer")); }, 20000), qPrintable(output(gui)));
    QVERIFY2(output(gui).contains(QStringLiteral("127.0.0.1:%1").arg(port)), qPrintable(output(gui)));
    QVERIFY2(waitFor([&] { return enginesOf(gui->processId()).size() == 1; }, 20000), qPrintable(output(gui)));
    // The live owner's listing is not overwritten.
    QCOMPARE(readJson(runtimeFile(run)).value(QStringLiteral("owner_pid")).toInteger(), QCoreApplication::applicationPid());
    const qint64 engine = enginesOf(gui->processId()).value(0);
    engines_.append(engine);
    QVERIFY(quit(gui, SIGTERM));
    QVERIFY(waitFor([&] { return !alive(engine); }, 2000));
  }
};

QTEST_MAIN(TestWorkstationLifetime)
#include "test_workstation_lifetime.moc"
