// ui/client/engine_process.h — the local engine as a child process: starts `strata-engine serve`
// on a free loopback port with a random API key, waits until it answers, restarts it after a crash
// and then reloads the model and placement it had — unless it fails the same way twice in a row
// without becoming ready in between: then it stays stopped and says why (gaveUp). An engine that is up
// but could not place its model (status "startup" error) is ready with no model, not reloaded. The
// child is tied to this process: it stops when this process dies, even by SIGKILL. Everything is
// asynchronous (GUI thread).
#pragma once

#include <QElapsedTimer>
#include <QJsonObject>
#include <QObject>
#include <QProcess>
#include <QStringList>
#include <QTimer>
#include <QUrl>

class EngineClient;

class EngineProcess : public QObject {
  Q_OBJECT
 public:
  enum class State { Stopped, Starting, Loading, Ready, Crashed };
  Q_ENUM(State)

  struct Options {
    QString program;        // strata-engine; empty: found by findEngineBinary()
    QString devices;        // --devices, e.g. "cpu,sim:gpu0:24GiB"; empty: the engine's default
    int ctx = 0;            // --ctx; 0: the model's
    int threads = 0;        // --threads; 0: the engine's default
    QString draftModel;     // --draft: speculative decoding's draft model (GGUF); empty: none
    QStringList extraArgs;  // appended as they are
    int startTimeoutMs = 60000;
    bool exitWithParent = true;  // --parent-pid: the engine does not outlive this process
  };

  // Uses `client` (pointing it at the child) to wait for readiness and to reload.
  EngineProcess(EngineClient* client, QObject* parent = nullptr);
  ~EngineProcess() override;

  void setOptions(const Options& options) { options_ = options; }
  Options options() const { return options_; }

  // What to bring back after a restart. setModel is remembered; a placement applied through the
  // GUI is remembered with setPlacement (null: the engine's automatic one).
  void setModel(const QString& path) { modelPath_ = path; }
  QString modelPath() const { return modelPath_; }
  void setPlacement(const QJsonObject& placement) { placement_ = placement; }
  QJsonObject placement() const { return placement_; }

  void start();
  void stop();                       // deliberate: no restart
  void restart();
  State state() const { return state_; }
  static QString stateName(State s);
  qint64 pid() const;                // 0 when not running
  int restartCount() const { return restarts_; }
  int launchCount() const { return launches_; }
  QString lastError() const { return lastError_; }
  QString recentOutput() const { return output_.join('\n'); }
  QStringList arguments() const;     // of the next start, for display and tests
  // " (SIGSEGV)" for 11, ... ; "" for a number without a common name.
  static QString signalName(int signal);

  // strata-engine next to this executable, in the build tree, then on PATH.
  static QString findEngineBinary();
  static quint16 freeLoopbackPort();
  static QString randomKey();

 signals:
  void stateChanged(EngineProcess::State state);
  void ready(const QJsonObject& status);   // answered and (when a model was set) the model is back
  void crashed(const QString& reason);     // a restart follows
  void gaveUp(const QString& reason);      // the second identical failure in a row: no more restarts
  void outputLine(const QString& line);    // stderr/stdout of the child, line by line

 private:
  void setState(State s);
  void launch();
  void poll();
  void onStatus(const QJsonObject& status);
  void onFinished(int exitCode, QProcess::ExitStatus status);
  // The engine's recent output, after `what`, in <app data>/logs/engine-<time>.log; its path ("" on failure).
  QString writeCrashLog(const QString& what) const;
  void readOutput();

  EngineClient* client_;
  Options options_;
  QString modelPath_;
  QJsonObject placement_;
  QProcess* proc_ = nullptr;
  State state_ = State::Stopped;
  QTimer pollTimer_;
  QTimer restartTimer_;
  QElapsedTimer startClock_;
  QElapsedTimer upClock_;
  bool reloadSent_ = false;
  bool reloadDone_ = false;
  bool pollInFlight_ = false;
  int launches_ = 0;
  bool stopping_ = false;
  int restarts_ = 0;
  int backoffMs_ = 250;
  QString lastFailure_;  // the reason of the last exit since the engine was last ready
  QString lastError_;
  QStringList output_;  // last lines
};
