// ui/profiler/profiler_series.h — bounded time series behind the profiler's charts: tokens/s, time
// to first token per reply, memory per device and link bandwidth per lane pair, fed with the same
// trace-stream batches as the timeline. Plain data on the GUI thread; no HTTP, no plotting.
#pragma once

#include <QJsonObject>
#include <QList>
#include <QMap>
#include <QObject>
#include <QPointF>

namespace strata::ui {

struct ReplyStats {
  int index = 0;           // 1, 2, ... since the start
  double ttftMs = 0;
  int tokens = 0;
  double tokensPerS = 0;
};

class ProfilerSeries : public QObject {
  Q_OBJECT
 public:
  explicit ProfilerSeries(QObject* parent = nullptr);

  // Points are (seconds since the first batch's now_ns, value); older than windowS are dropped.
  void setWindowSeconds(double seconds) { windowS_ = seconds; }
  double windowSeconds() const { return windowS_; }

  const QList<QPointF>& tokensPerS() const { return tokensPerS_; }
  // Per lane label ("gpu0 (simulated)"): used bytes (weights + KV reserved + scratch + other).
  const QMap<QString, QList<QPointF>>& memoryUsed() const { return memory_; }
  // Per "from → to": GB/s moved by transfers and all-reduces during each batch interval.
  const QMap<QString, QList<QPointF>>& linkGbps() const { return links_; }
  const QList<ReplyStats>& replies() const { return replies_; }  // the last kMaxReplies
  double lastTtftMs() const { return replies_.isEmpty() ? 0.0 : replies_.last().ttftMs; }
  double nowSeconds() const { return lastNowS_; }

  static constexpr int kMaxReplies = 200;

 public slots:
  void appendBatch(const QJsonObject& batch);
  void addReplyStats(double ttftMs, int tokens, double tokensPerS);
  void clear();

 signals:
  void changed();

 private:
  void trim(QList<QPointF>& points) const;

  QMap<int, QString> laneLabels_;
  QList<QPointF> tokensPerS_;
  QMap<QString, QList<QPointF>> memory_;
  QMap<QString, QList<QPointF>> links_;
  QList<ReplyStats> replies_;
  qint64 originNs_ = -1;
  qint64 prevNowNs_ = -1;
  double lastNowS_ = 0;
  double windowS_ = 120;
  int replyCount_ = 0;
};

}  // namespace strata::ui
