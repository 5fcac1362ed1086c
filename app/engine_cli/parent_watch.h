// app/engine_cli/parent_watch.h — ties `strata-engine serve --parent-pid N` to the workstation that
// started it: when that process dies, this one gets SIGTERM and stops as if it had been sent one.
// Linux (prctl, /proc); depends on nothing of the engine.
#pragma once

#include <atomic>
#include <csignal>
#include <thread>

#include <sys/types.h>

namespace strata::cli {

// True while `pid` names a live process (not a zombie waiting to be reaped).
bool process_alive(pid_t pid);

// Arms PR_SET_PDEATHSIG(SIGTERM) for this process, then checks the race the prctl call leaves
// open: a parent that died before it. Returns false when `parent` is already gone. When the
// immediate parent is not `parent` (a wrapper script between the workstation and the engine),
// the check falls back to whether `parent` is alive.
bool die_with_parent(pid_t parent);

// Second line of defence, one thread: PDEATHSIG follows the parent *thread* that forked us (and
// the immediate parent only), so every `interval_ms` this checks whether our parent changed,
// whether `parent` is still alive, and — when stdin is a pipe, as the workstation's QProcess
// gives it — whether that pipe reached EOF (its write end dies with the workstation). When one
// of them says the workstation is gone, it prints one line to stderr and sends SIGTERM to this
// process: the same shutdown as a SIGTERM from outside. Stopped and joined by the destructor.
class ParentWatch {
 public:
  explicit ParentWatch(pid_t parent, int interval_ms = 200);
  ~ParentWatch();
  ParentWatch(const ParentWatch&) = delete;
  ParentWatch& operator=(const ParentWatch&) = delete;

 private:
  bool parent_gone();
  void run();

  pid_t parent_;
  pid_t initial_ppid_;
  int interval_ms_;
  bool watch_stdin_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// True when one of `set`'s signals is pending (blocked, not yet taken by sigwait): lets a
// long start-up (model load) give up early when it was asked to stop.
bool stop_signal_pending(const sigset_t& set);

}  // namespace strata::cli
