// ui/profiler/timeline_model.h — the profiler's buffer of trace spans (one row per event, ordered by
// start), fed with trace-stream batches (docs/api.md, /strata/v1/trace/stream), bounded to the last
// N seconds; lanes, bubble percentages and a Chrome trace of what it holds. GUI thread only; no HTTP.
#pragma once

#include <QAbstractListModel>
#include <QJsonObject>
#include <QList>
#include <QMap>
#include <QSet>

namespace strata::ui {

struct TraceSpan {
  int lane = 0;           // engine lane id
  QString kind;           // "compute", "transfer", "all-reduce", "tokenize", "sample", "detokenize", "embed", "head", "idle"
  int layer = -1;         // block index, -1 when none
  int seq = -1;
  qint64 token = -1;
  qint64 startNs = 0;     // engine steady clock, ns since its recorder epoch
  qint64 durationNs = 0;
  quint64 bytes = 0;      // transfers and all-reduces
  int peerLane = -1;      // transfer destination
  int nTokens = 1;
  qint64 endNs() const { return startNs + durationNs; }
  bool busy() const { return kind != QLatin1String("idle"); }
};

struct TraceLane {
  int id = 0;
  QString name;           // "gpu0", "cpu", "host"
  bool simulated = false;
  bool lost = false;      // the engine lost this device (a re-plan record named it)
  QString label() const;  // "gpu0 (simulated)", "gpu1 (simulated, lost)"
};

// A fault and the re-plan that followed (the trace stream's strata.replan record), drawn across
// every lane of the timeline.
struct TraceFault {
  qint64 startNs = 0;     // re-planning began (engine clock, as spans)
  qint64 durationNs = 0;  // planning and re-placing
  QStringList lost;       // device ids
  bool ok = true;         // false: nothing fitted what was left
  QString text;           // "gpu1 lost · re-planned in 412 ms · 11 blocks moved · now gpu0 + cpu"
  qint64 endNs() const { return startNs + durationNs; }
};

class TimelineModel : public QAbstractListModel {
  Q_OBJECT
 public:
  enum Roles {
    LaneRole = Qt::UserRole + 1,  // engine lane id
    LaneRowRole,       // row of the lane in lanes() (display order)
    LaneNameRole,
    KindRole,
    LayerRole,
    SeqRole,
    TokenRole,
    StartNsRole,       // qint64
    DurationNsRole,    // qint64
    BytesRole,         // quint64
    PeerLaneRole,
    NTokensRole,
    StartMsRole,       // double, ms since originNs()
    DurationMsRole,    // double
    GbpsRole,          // double, bytes / duration (transfers, all-reduces), 0 otherwise
  };
  Q_ENUM(Roles)

  explicit TimelineModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QHash<int, QByteArray> roleNames() const override;

  // Keeps events that start within windowNs of the newest time seen (now_ns or the latest end).
  void setWindowNs(qint64 windowNs);
  qint64 windowNs() const { return windowNs_; }

  const TraceSpan& span(int row) const { return spans_.at(row); }
  const QList<TraceLane>& lanes() const { return lanes_; }  // ordered by lane id
  int laneRow(int laneId) const;                             // -1 when unknown
  QString laneLabel(int laneId) const;
  qint64 originNs() const { return originNs_; }  // the first start (or now_ns) ever seen: x = 0 ms
  qint64 latestNs() const { return latestNs_; }
  // The end of the newest span or fault (0: none yet). Idle batches move latestNs() on, not this:
  // the last reply's events stay in the window (and in view) after it ends.
  qint64 latestEventNs() const { return latestEventNs_; }
  double latestTokensPerS() const { return tokensPerS_; }

  // Bubble of each device lane (every lane but "host" that has events), in percent: the time the
  // device sits idle while work is in flight elsewhere, over the time work is in flight anywhere.
  // In flight: the union of every lane's busy spans (compute, transfers, all-reduces, host work)
  // within the buffered window. The device is busy during its own spans except transfers (the copy
  // runs on the link) and idle spans. A device busy whenever anything runs has 0%; time when
  // nothing runs at all (between replies) counts for no one. (docs/profiler.md)
  QMap<int, double> bubblePercent() const;

  // Faults in the buffered window, oldest first.
  const QList<TraceFault>& faults() const { return faults_; }

  // Chrome trace-event JSON of the buffer: {"traceEvents":[thread_name metadata, "X" spans with
  // ts/dur in microseconds since originNs(), args {layer, token, seq, bytes, peer}], "displayTimeUnit":"ms"}.
  QJsonObject toChromeTrace() const;
  bool writeChromeTrace(const QString& path, QString* error = nullptr) const;

 public slots:
  // {"lanes":[{id,name,simulated}], "events":[{lane, kind, layer, seq, token, start_ns, duration_ns,
  //  bytes, peer_lane, n_tokens}], "memory":[...], "tokens_per_s":x, "now_ns":t}. Events may come
  // out of order; they are inserted by start time. Memory is not kept here (ProfilerSeries).
  void appendBatch(const QJsonObject& batch);
  // A strata.replan record {time_ns (when it ended), ok, lost, full, excluded, devices (of the new
  // placement), moved_blocks, ms, placement, error}, from the trace stream or /status "replans": adds a TraceFault (once per
  // record) and marks the lost lanes.
  void appendReplan(const QJsonObject& record);
  void clear();

 signals:
  void lanesChanged();
  void batchAppended();

 private:
  void addLane(int id, const QString& name, bool simulated);
  void trim();

  QList<TraceSpan> spans_;  // ordered by startNs
  QList<TraceLane> lanes_;
  QList<TraceFault> faults_;  // by startNs
  QSet<qint64> seenReplanNs_;  // time_ns of every record taken (records come by two paths)
  qint64 windowNs_ = 30'000'000'000;
  qint64 originNs_ = -1;
  qint64 latestNs_ = 0;
  qint64 latestEventNs_ = 0;
  double tokensPerS_ = 0;
};

}  // namespace strata::ui
