// bench/gui_gap_meter.h — measures how long the GUI thread's event loop goes without turning: a
// 5 ms precise timer on the GUI thread, and the gaps between its ticks (µs). Used by
// bench/gui_bench.cpp (which reports the gaps) and tests/ui/test_engine_gui.cpp (which bounds the
// worst one). Qt only; header-only, no moc.
//
// A gap is the GUI thread's own doing only for the part it was not waiting for a CPU: on a loaded
// machine the whole process can sit on the run queue for a long time without the GUI thread doing
// anything wrong. The kernel counts that wait per thread (run_delay in /proc/thread-self/schedstat),
// so it is taken out of each gap; where the file is missing the wall-clock gap counts whole.
#pragma once

#include <QElapsedTimer>
#include <QFile>
#include <QTimer>

#include <algorithm>
#include <vector>

class GuiGapMeter {
 public:
  explicit GuiGapMeter(QObject* context) {
    timer_.setTimerType(Qt::PreciseTimer);
    timer_.setInterval(5);
    QObject::connect(&timer_, &QTimer::timeout, context, [this] { tick(); });
    clock_.start();
    timer_.start();
  }

  // Gaps count only between begin() and end(); the first tick after begin() starts a new series.
  void begin() {
    measuring_ = true;
    last_ = -1;
  }
  void end() { measuring_ = false; }

  // Gaps seen so far (µs, run-queue wait left out), in the order they happened.
  const std::vector<qint64>& gapsUs() const { return gaps_; }
  qint64 worstUs() const { return gaps_.empty() ? 0 : *std::max_element(gaps_.begin(), gaps_.end()); }
  // The q-quantile (0..1) of the gaps, µs.
  qint64 quantileUs(double q) const {
    if (gaps_.empty()) return 0;
    std::vector<qint64> s = gaps_;
    std::sort(s.begin(), s.end());
    return s[std::min(s.size() - 1, static_cast<size_t>(q * static_cast<double>(s.size())))];
  }

 private:
  static qint64 queuedUs() {
    QFile f(QStringLiteral("/proc/thread-self/schedstat"));
    if (!f.open(QIODevice::ReadOnly)) return 0;
    const QList<QByteArray> parts = f.readAll().simplified().split(' ');
    return parts.size() >= 2 ? parts[1].toLongLong() / 1000 : 0;  // ns -> µs
  }

  void tick() {
    const qint64 now = clock_.nsecsElapsed() / 1000;  // µs
    const qint64 queued = queuedUs();
    if (measuring_ && last_ >= 0) gaps_.push_back((now - last_) - (queued - lastQueued_));
    last_ = now;
    lastQueued_ = queued;
  }

  QTimer timer_;
  QElapsedTimer clock_;
  qint64 last_ = -1, lastQueued_ = 0;
  bool measuring_ = false;
  std::vector<qint64> gaps_;
};
