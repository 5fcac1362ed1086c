// ui/profiler/profiler_series.cpp — ProfilerSeries: batch parsing into bounded chart series.
#include "ui/profiler/profiler_series.h"

#include <QJsonArray>

namespace strata::ui {

ProfilerSeries::ProfilerSeries(QObject* parent) : QObject(parent) {}

void ProfilerSeries::trim(QList<QPointF>& points) const {
  int n = 0;
  while (n < points.size() && points[n].x() < lastNowS_ - windowS_) ++n;
  points.remove(0, n);
}

void ProfilerSeries::appendBatch(const QJsonObject& batch) {
  for (const QJsonValue& v : batch.value(QLatin1String("lanes")).toArray()) {
    const QJsonObject l = v.toObject();
    const QString name = l.value(QLatin1String("name")).toString();
    laneLabels_.insert(l.value(QLatin1String("id")).toInt(),
                       l.value(QLatin1String("simulated")).toBool() ? name + QStringLiteral(" (simulated)") : name);
  }
  auto label = [&](int lane) { return laneLabels_.value(lane, QStringLiteral("lane %1").arg(lane)); };
  if (!batch.contains(QLatin1String("now_ns"))) return;
  const qint64 now = static_cast<qint64>(batch.value(QLatin1String("now_ns")).toDouble());
  if (originNs_ < 0) originNs_ = now;
  const double t = static_cast<double>(now - originNs_) / 1e9;
  lastNowS_ = t;

  if (batch.contains(QLatin1String("tokens_per_s")))
    tokensPerS_.append({t, batch.value(QLatin1String("tokens_per_s")).toDouble()});

  for (const QJsonValue& v : batch.value(QLatin1String("memory")).toArray()) {
    const QJsonObject m = v.toObject();
    const double used = m.value(QLatin1String("weights")).toDouble() +
                        std::max(m.value(QLatin1String("kv_reserved")).toDouble(), m.value(QLatin1String("kv_used")).toDouble()) +
                        m.value(QLatin1String("scratch")).toDouble() + m.value(QLatin1String("other")).toDouble();
    const double mt = m.contains(QLatin1String("time_ns"))
                          ? static_cast<double>(static_cast<qint64>(m.value(QLatin1String("time_ns")).toDouble()) - originNs_) / 1e9
                          : t;
    memory_[label(m.value(QLatin1String("lane")).toInt())].append({mt, used});
  }

  // Bytes per lane pair moved during (previous now, now]: GB/s over the interval.
  QMap<QString, double> bytes;
  for (const QJsonValue& v : batch.value(QLatin1String("events")).toArray()) {
    const QJsonObject e = v.toObject();
    const QString kind = e.value(QLatin1String("kind")).toString();
    if (kind != QLatin1String("transfer") && kind != QLatin1String("all-reduce")) continue;
    const int from = e.value(QLatin1String("lane")).toInt(), to = e.value(QLatin1String("peer_lane")).toInt(-1);
    const QString pair = to >= 0 ? label(from) + QStringLiteral(" → ") + label(to) : label(from) + QStringLiteral(" all-reduce");
    bytes[pair] += e.value(QLatin1String("bytes")).toDouble();
  }
  const double interval = prevNowNs_ >= 0 && now > prevNowNs_ ? static_cast<double>(now - prevNowNs_) : 0.0;
  for (auto it = links_.begin(); it != links_.end(); ++it)
    if (!bytes.contains(it.key()) && interval > 0) it->append({t, 0.0});  // idle links drop to 0
  for (auto it = bytes.begin(); it != bytes.end(); ++it)
    if (interval > 0) links_[it.key()].append({t, it.value() / interval});  // bytes per ns = GB/s
  prevNowNs_ = now;

  trim(tokensPerS_);
  for (auto& s : memory_) trim(s);
  for (auto& s : links_) trim(s);
  emit changed();
}

void ProfilerSeries::addReplyStats(double ttftMs, int tokens, double tokensPerS) {
  replies_.append({++replyCount_, ttftMs, tokens, tokensPerS});
  while (replies_.size() > kMaxReplies) replies_.removeFirst();
  emit changed();
}

void ProfilerSeries::clear() {
  laneLabels_.clear();
  tokensPerS_.clear();
  memory_.clear();
  links_.clear();
  replies_.clear();
  originNs_ = prevNowNs_ = -1;
  lastNowS_ = 0;
  replyCount_ = 0;
  emit changed();
}

}  // namespace strata::ui
