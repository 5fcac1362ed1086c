// ui/app/quit_signals.h — SIGTERM, SIGINT and SIGHUP as a Qt signal on the GUI thread, so that
// they end the workstation like File ▸ Quit. The handler only writes the signal number to a socket
// pair (async-signal-safe); a QSocketNotifier reads it in the event loop. Qt and POSIX only.
#pragma once

#include <QObject>

class QSocketNotifier;

class QuitSignals : public QObject {
  Q_OBJECT
 public:
  // Installs the handlers (one instance per process). Each handler is one-shot: a second
  // signal of the same kind, while the orderly quit is under way, ends the process at once.
  explicit QuitSignals(QObject* parent = nullptr);
  ~QuitSignals() override;  // puts back the default actions

  static QString signalName(int signalNumber);  // "SIGTERM"

 signals:
  void received(int signalNumber);  // on the GUI thread

 private:
  void readSignal();
  QSocketNotifier* notifier_ = nullptr;
};
