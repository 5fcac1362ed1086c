// ui/app/quit_signals.cpp — the self-pipe: signal handler -> socketpair -> QSocketNotifier.
#include "ui/app/quit_signals.h"

#include <QSocketNotifier>

#include <cerrno>
#include <csignal>

#include <sys/socket.h>
#include <unistd.h>

namespace {
int g_fds[2] = {-1, -1};  // [0] written by the handler, [1] read by the notifier
constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP};

void onSignal(int sig) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(sig);
  const ssize_t n = ::write(g_fds[0], &byte, 1);  // non-blocking: never waits in a handler
  (void)n;
  errno = saved;
}
}  // namespace

QuitSignals::QuitSignals(QObject* parent) : QObject(parent) {
  if (g_fds[0] >= 0) return;  // another instance owns the handlers
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, g_fds) != 0) {
    g_fds[0] = g_fds[1] = -1;
    qWarning("strata: no socket pair for signal handling: %s", qPrintable(qt_error_string(errno)));
    return;
  }
  notifier_ = new QSocketNotifier(g_fds[1], QSocketNotifier::Read, this);
  connect(notifier_, &QSocketNotifier::activated, this, &QuitSignals::readSignal);
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_RESETHAND;
  for (int sig : kSignals) ::sigaction(sig, &sa, nullptr);
}

QuitSignals::~QuitSignals() {
  if (!notifier_) return;
  for (int sig : kSignals) ::signal(sig, SIG_DFL);
  delete notifier_;
  notifier_ = nullptr;
  ::close(g_fds[0]);
  ::close(g_fds[1]);
  g_fds[0] = g_fds[1] = -1;
}

QString QuitSignals::signalName(int signalNumber) {
  switch (signalNumber) {
    case SIGTERM: return QStringLiteral("SIGTERM");
    case SIGINT: return QStringLiteral("SIGINT");
    case SIGHUP: return QStringLiteral("SIGHUP");
  }
  return QStringLiteral("signal %1").arg(signalNumber);
}

void QuitSignals::readSignal() {
  unsigned char buf[16];
  ssize_t n;
  while ((n = ::read(g_fds[1], buf, sizeof buf)) > 0)
    for (ssize_t i = 0; i < n; ++i) emit received(buf[i]);
}
