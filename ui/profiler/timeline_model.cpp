// ui/profiler/timeline_model.cpp — TimelineModel: batch parsing, ordered insertion, bounding,
// bubble percentages and the Chrome trace export.
#include "ui/profiler/timeline_model.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSet>

#include <algorithm>
#include <iterator>

namespace strata::ui {

namespace {

qint64 int64Of(const QJsonValue& v, qint64 fallback = 0) {
  return v.isDouble() ? static_cast<qint64>(v.toDouble()) : fallback;
}

// Kinds by the engine's enum order, for batches that send numbers.
QString kindName(const QJsonValue& v) {
  static const char* names[] = {"compute", "transfer", "all-reduce", "tokenize", "sample",
                                "detokenize", "embed", "head", "idle", "replan",
                                "draft", "draft-accepted", "draft-rejected"};
  if (v.isString()) return v.toString();
  const int k = v.toInt(0);
  return QString::fromLatin1(k >= 0 && k < static_cast<int>(std::size(names)) ? names[k] : "compute");
}

// "412 ms", "1.23 s": how long a re-plan took.
QString formatDurationNsShort(qint64 ns) {
  if (ns >= 1'000'000'000) return QStringLiteral("%1 s").arg(static_cast<double>(ns) / 1e9, 0, 'f', 2);
  return QStringLiteral("%1 ms").arg(static_cast<double>(ns) / 1e6, 0, 'f', ns >= 10'000'000 ? 0 : 1);
}
}  // namespace

QString TraceLane::label() const {
  if (simulated && lost) return name + QStringLiteral(" (simulated, lost)");
  if (lost) return name + QStringLiteral(" (lost)");
  return simulated ? name + QStringLiteral(" (simulated)") : name;
}

TimelineModel::TimelineModel(QObject* parent) : QAbstractListModel(parent) {}

int TimelineModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : spans_.size(); }

int TimelineModel::laneRow(int laneId) const {
  for (int i = 0; i < lanes_.size(); ++i)
    if (lanes_[i].id == laneId) return i;
  return -1;
}

QString TimelineModel::laneLabel(int laneId) const {
  const int row = laneRow(laneId);
  return row >= 0 ? lanes_[row].label() : QStringLiteral("lane %1").arg(laneId);
}

QVariant TimelineModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const TraceSpan& s = spans_.at(index.row());
  const double gbps = s.durationNs > 0 && s.bytes > 0 ? static_cast<double>(s.bytes) / static_cast<double>(s.durationNs) : 0.0;
  switch (role) {
    case Qt::DisplayRole:
      return QStringLiteral("%1 %2%3 %4 ms")
          .arg(laneLabel(s.lane), s.kind, s.layer >= 0 ? QStringLiteral(" blk %1").arg(s.layer) : QString())
          .arg(static_cast<double>(s.durationNs) / 1e6, 0, 'f', 3);
    case LaneRole: return s.lane;
    case LaneRowRole: return laneRow(s.lane);
    case LaneNameRole: return laneLabel(s.lane);
    case KindRole: return s.kind;
    case LayerRole: return s.layer;
    case SeqRole: return s.seq;
    case TokenRole: return s.token;
    case StartNsRole: return s.startNs;
    case DurationNsRole: return s.durationNs;
    case BytesRole: return s.bytes;
    case PeerLaneRole: return s.peerLane;
    case NTokensRole: return s.nTokens;
    case StartMsRole: return static_cast<double>(s.startNs - originNs_) / 1e6;
    case DurationMsRole: return static_cast<double>(s.durationNs) / 1e6;
    case GbpsRole: return gbps;  // bytes per ns = GB/s
    default: return {};
  }
}

QHash<int, QByteArray> TimelineModel::roleNames() const {
  QHash<int, QByteArray> r = QAbstractListModel::roleNames();
  r.insert({{LaneRole, "lane"}, {LaneRowRole, "laneRow"}, {LaneNameRole, "laneName"}, {KindRole, "kind"},
            {LayerRole, "layer"}, {SeqRole, "seq"}, {TokenRole, "token"}, {StartNsRole, "startNs"},
            {DurationNsRole, "durationNs"}, {BytesRole, "bytes"}, {PeerLaneRole, "peerLane"},
            {NTokensRole, "nTokens"}, {StartMsRole, "startMs"}, {DurationMsRole, "durationMs"}, {GbpsRole, "gbps"}});
  return r;
}

void TimelineModel::setWindowNs(qint64 windowNs) {
  windowNs_ = std::max<qint64>(windowNs, 1);
  trim();
}

void TimelineModel::addLane(int id, const QString& name, bool simulated) {
  const int row = laneRow(id);
  if (row >= 0) {
    if (lanes_[row].name == name && lanes_[row].simulated == simulated) return;
    lanes_[row].name = name;
    lanes_[row].simulated = simulated;
  } else {
    auto at = std::lower_bound(lanes_.begin(), lanes_.end(), id, [](const TraceLane& l, int v) { return l.id < v; });
    bool lost = false;
    for (const TraceFault& f : faults_) lost = lost || f.lost.contains(name);
    lanes_.insert(at, TraceLane{id, name, simulated, lost});
  }
  emit lanesChanged();
}

void TimelineModel::appendBatch(const QJsonObject& batch) {
  for (const QJsonValue& v : batch.value(QLatin1String("lanes")).toArray()) {
    const QJsonObject l = v.toObject();
    const int id = l.value(QLatin1String("id")).toInt();
    addLane(id, l.value(QLatin1String("name")).toString(QStringLiteral("lane %1").arg(id)),
            l.value(QLatin1String("simulated")).toBool());
  }
  QList<TraceSpan> incoming;
  for (const QJsonValue& v : batch.value(QLatin1String("events")).toArray()) {
    const QJsonObject e = v.toObject();
    TraceSpan s;
    s.lane = e.value(QLatin1String("lane")).toInt();
    s.kind = kindName(e.value(QLatin1String("kind")));
    s.layer = e.value(QLatin1String("layer")).toInt(-1);
    s.seq = e.value(QLatin1String("seq")).toInt(-1);
    s.token = int64Of(e.value(QLatin1String("token")), -1);
    s.startNs = int64Of(e.value(QLatin1String("start_ns")));
    s.durationNs = std::max<qint64>(0, int64Of(e.value(QLatin1String("duration_ns"))));
    s.bytes = static_cast<quint64>(std::max<qint64>(0, int64Of(e.value(QLatin1String("bytes")))));
    s.peerLane = e.value(QLatin1String("peer_lane")).toInt(-1);
    s.nTokens = e.value(QLatin1String("n_tokens")).toInt(1);
    if (laneRow(s.lane) < 0) addLane(s.lane, QStringLiteral("lane %1").arg(s.lane), false);
    incoming.append(s);
  }
  std::stable_sort(incoming.begin(), incoming.end(), [](const TraceSpan& a, const TraceSpan& b) { return a.startNs < b.startNs; });
  if (originNs_ < 0) {
    if (!incoming.isEmpty()) originNs_ = incoming.first().startNs;
    else if (batch.contains(QLatin1String("now_ns"))) originNs_ = int64Of(batch.value(QLatin1String("now_ns")));
  }
  const auto byStart = [](const TraceSpan& a, const TraceSpan& b) { return a.startNs < b.startNs; };
  if (!incoming.isEmpty() && (spans_.isEmpty() || incoming.first().startNs >= spans_.last().startNs)) {
    beginInsertRows({}, spans_.size(), spans_.size() + incoming.size() - 1);
    spans_.append(incoming);
    endInsertRows();
  } else {
    for (const TraceSpan& s : incoming) {  // late events: each at its place
      const int at = static_cast<int>(std::upper_bound(spans_.begin(), spans_.end(), s, byStart) - spans_.begin());
      beginInsertRows({}, at, at);
      spans_.insert(at, s);
      endInsertRows();
    }
  }
  for (const TraceSpan& s : incoming) latestEventNs_ = std::max(latestEventNs_, s.endNs());
  latestNs_ = std::max(latestNs_, latestEventNs_);
  latestNs_ = std::max(latestNs_, int64Of(batch.value(QLatin1String("now_ns"))));
  if (batch.contains(QLatin1String("tokens_per_s"))) tokensPerS_ = batch.value(QLatin1String("tokens_per_s")).toDouble();
  trim();
  emit batchAppended();
}

void TimelineModel::appendReplan(const QJsonObject& record) {
  TraceFault f;
  const qint64 endNs = int64Of(record.value(QLatin1String("time_ns")));
  // The same record comes from the trace stream and from /status (whichever is first): once.
  if (seenReplanNs_.contains(endNs)) return;
  seenReplanNs_.insert(endNs);
  f.durationNs = static_cast<qint64>(record.value(QLatin1String("ms")).toDouble() * 1e6);
  f.startNs = endNs - f.durationNs;
  f.ok = record.value(QLatin1String("ok")).toBool(true);
  for (const QJsonValue& v : record.value(QLatin1String("lost")).toArray()) f.lost << v.toString();
  QStringList onto;  // the devices of the new placement
  for (const QJsonValue& d : record.value(QLatin1String("devices")).toArray()) onto << d.toString();
  QStringList what;
  if (!f.lost.isEmpty()) what << tr("%1 lost").arg(f.lost.join(QStringLiteral(", ")));
  QStringList full;
  for (const QJsonValue& v : record.value(QLatin1String("full")).toArray()) full << v.toString();
  if (!full.isEmpty()) what << tr("%1 out of memory").arg(full.join(QStringLiteral(", ")));
  if (what.isEmpty()) what << tr("a device lost");
  const QString lost = what.join(QStringLiteral(", "));
  if (f.ok) {
    f.text = tr("%1 · re-planned in %2 · %n block(s) moved", nullptr,
                record.value(QLatin1String("moved_blocks")).toInt())
                 .arg(lost, formatDurationNsShort(f.durationNs));
    if (!onto.isEmpty()) f.text += tr(" · now %1").arg(onto.join(QStringLiteral(" + ")));
  } else {
    f.text = tr("%1 · no placement fits what is left: %2").arg(lost, record.value(QLatin1String("error")).toString());
  }
  // Older than the window (a /status record of long ago): the lanes are marked, nothing drawn.
  if (endNs >= latestEventNs_ - windowNs_)
    faults_.insert(std::upper_bound(faults_.begin(), faults_.end(), f.startNs,
                                    [](qint64 v, const TraceFault& x) { return v < x.startNs; }),
                   f);
  bool lanesMarked = false;
  for (TraceLane& lane : lanes_) {
    if (f.lost.contains(lane.name) && !lane.lost) {
      lane.lost = true;
      lanesMarked = true;
    }
  }
  latestNs_ = std::max(latestNs_, endNs);
  latestEventNs_ = std::max(latestEventNs_, endNs);
  if (originNs_ < 0) originNs_ = f.startNs;
  if (lanesMarked) emit lanesChanged();
  emit batchAppended();
}

void TimelineModel::trim() {
  // The window ends at the newest event, not at "now": a quiet engine's idle batches do not
  // push the last reply out.
  const qint64 cutoff = latestEventNs_ - windowNs_;
  while (!faults_.isEmpty() && faults_.first().endNs() < cutoff) faults_.removeFirst();
  int n = 0;
  while (n < spans_.size() && spans_[n].startNs < cutoff) ++n;
  if (n == 0) return;
  beginRemoveRows({}, 0, n - 1);
  spans_.erase(spans_.begin(), spans_.begin() + n);
  endRemoveRows();
}

void TimelineModel::clear() {
  beginResetModel();
  spans_.clear();
  faults_.clear();
  seenReplanNs_.clear();
  originNs_ = -1;
  latestNs_ = 0;
  latestEventNs_ = 0;
  tokensPerS_ = 0;
  endResetModel();
}

namespace {
using Interval = QPair<qint64, qint64>;
// Sorted, merged [start, end) intervals.
QList<Interval> merged(QList<Interval> v) {
  std::sort(v.begin(), v.end());
  QList<Interval> out;
  for (const Interval& i : v) {
    if (i.second <= i.first) continue;
    if (!out.isEmpty() && i.first <= out.last().second) out.last().second = std::max(out.last().second, i.second);
    else out.append(i);
  }
  return out;
}
qint64 total(const QList<Interval>& v) {
  qint64 t = 0;
  for (const Interval& i : v) t += i.second - i.first;
  return t;
}
// |a ∩ b| for merged lists.
qint64 overlap(const QList<Interval>& a, const QList<Interval>& b) {
  qint64 t = 0;
  int j = 0;
  for (const Interval& i : a) {
    while (j < b.size() && b[j].second <= i.first) ++j;
    for (int k = j; k < b.size() && b[k].first < i.second; ++k)
      t += std::min(i.second, b[k].second) - std::max(i.first, b[k].first);
  }
  return t;
}
}  // namespace

QMap<int, double> TimelineModel::bubblePercent() const {
  QMap<int, double> out;
  QList<Interval> anywhere;
  QMap<int, QList<Interval>> device;
  QSet<int> seen;
  for (const TraceSpan& s : spans_) {
    seen.insert(s.lane);
    if (!s.busy()) continue;
    anywhere.append({s.startNs, s.endNs()});
    if (s.kind != QLatin1String("transfer")) device[s.lane].append({s.startNs, s.endNs()});
  }
  const QList<Interval> inFlight = merged(anywhere);
  const qint64 window = total(inFlight);
  for (const TraceLane& lane : lanes_) {
    // A lost device does no more work: its idle time is not a pipeline bubble.
    if (lane.name == QLatin1String("host") || lane.lost || !seen.contains(lane.id)) continue;
    const qint64 busy = overlap(merged(device.value(lane.id)), inFlight);
    out.insert(lane.id, window > 0 ? 100.0 * static_cast<double>(window - busy) / static_cast<double>(window) : 0.0);
  }
  return out;
}

QJsonObject TimelineModel::toChromeTrace() const {
  QJsonArray events;
  for (const TraceLane& l : lanes_)
    events.append(QJsonObject{{"ph", "M"}, {"pid", 1}, {"tid", l.id}, {"name", "thread_name"},
                              {"args", QJsonObject{{"name", l.label()}}}});
  const qint64 origin = std::max<qint64>(originNs_, 0);
  for (const TraceSpan& s : spans_) {
    QJsonObject args{{"token", static_cast<double>(s.token)}, {"seq", s.seq}, {"n_tokens", s.nTokens}};
    if (s.layer >= 0) args.insert("layer", s.layer);
    if (s.bytes > 0) args.insert("bytes", static_cast<double>(s.bytes));
    if (s.peerLane >= 0) args.insert("to", laneLabel(s.peerLane));
    const QString name = s.layer >= 0 ? QStringLiteral("%1 blk %2").arg(s.kind).arg(s.layer) : s.kind;
    events.append(QJsonObject{{"ph", "X"}, {"pid", 1}, {"tid", s.lane}, {"name", name}, {"cat", s.kind},
                              {"ts", static_cast<double>(s.startNs - origin) / 1e3},
                              {"dur", static_cast<double>(s.durationNs) / 1e3}, {"args", args}});
  }
  return QJsonObject{{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

bool TimelineModel::writeChromeTrace(const QString& path, QString* error) const {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
    if (error) *error = QStringLiteral("cannot write '%1': %2").arg(path, f.errorString());
    return false;
  }
  f.write(QJsonDocument(toChromeTrace()).toJson(QJsonDocument::Compact));
  return true;
}

}  // namespace strata::ui
