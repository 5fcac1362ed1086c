// app/engine_cli/parent_watch.cpp — parent-death detection for `strata-engine serve --parent-pid`:
// prctl(PR_SET_PDEATHSIG) plus a polling thread (parent pid, /proc state, stdin pipe EOF).
#include "app/engine_cli/parent_watch.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace strata::cli {

bool process_alive(pid_t pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  // kill() succeeds on a zombie; /proc/PID/stat says "PID (comm) STATE ...".
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "r");
  if (!f) return ::kill(pid, 0) == 0 || errno != ESRCH;
  char buf[512];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* close_paren = std::strrchr(buf, ')');  // comm may itself contain ')' or spaces
  if (!close_paren || close_paren[1] != ' ') return true;
  const char state = close_paren[2];
  return state != 'Z' && state != 'X' && state != 'x';
}

bool die_with_parent(pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() == parent) return true;
  // Either the parent died before prctl (we were re-parented) or a wrapper sits in between.
  return process_alive(parent);
}

ParentWatch::ParentWatch(pid_t parent, int interval_ms)
    : parent_(parent), initial_ppid_(::getppid()), interval_ms_(interval_ms) {
  struct stat st {};
  watch_stdin_ = ::fstat(STDIN_FILENO, &st) == 0 && S_ISFIFO(st.st_mode);
  thread_ = std::thread([this] { run(); });
}

ParentWatch::~ParentWatch() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

bool ParentWatch::parent_gone() {
  if (::getppid() != initial_ppid_) return true;
  return !process_alive(parent_);
}

void ParentWatch::run() {
  while (!stop_.load()) {
    const char* why = nullptr;
    if (watch_stdin_) {
      pollfd p{STDIN_FILENO, POLLIN, 0};
      const int r = ::poll(&p, 1, interval_ms_);
      if (r > 0) {
        if (p.revents & POLLIN) {
          char buf[4096];
          const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);  // anything written is ignored
          if (n == 0) why = "its pipe closed";
        } else if (p.revents & (POLLHUP | POLLERR)) {
          why = "its pipe closed";
        }
      }
    } else {
      ::poll(nullptr, 0, interval_ms_);
    }
    if (!why && !stop_.load() && parent_gone()) why = "it exited";
    if (why) {
      std::fprintf(stderr, "strata-engine serve: the workstation (pid %d) is gone (%s): stopping\n",
                   static_cast<int>(parent_), why);
      std::fflush(stderr);
      ::kill(::getpid(), SIGTERM);
      return;
    }
  }
}

bool stop_signal_pending(const sigset_t& set) {
  sigset_t pending;
  sigemptyset(&pending);
  if (sigpending(&pending) != 0) return false;
  for (int sig = 1; sig < NSIG; ++sig)
    if (sigismember(&set, sig) == 1 && sigismember(&pending, sig) == 1) return true;
  return false;
}

}  // namespace strata::cli
