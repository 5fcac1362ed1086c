// ui/profiler/profiler_panel.cpp — ProfilerPanel layout, pause/resume, summary and export.
#include "ui/profiler/profiler_panel.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/profiler/profiler_charts.h"
#include "ui/profiler/profiler_series.h"
#include "ui/profiler/timeline_model.h"
#include "ui/profiler/timeline_plot.h"

namespace strata::ui {

namespace {
constexpr int kMaxHeldBatches = 3000;  // ~5 minutes at 10 batches/s; the oldest go first
}

ProfilerPanel::ProfilerPanel(QWidget* parent)
    : QWidget(parent), timeline_(new TimelineModel(this)), series_(new ProfilerSeries(this)),
      plot_(new TimelinePlot(this)), tabs_(new QTabWidget(this)), charts_(nullptr), summary_(new QLabel(this)),
      collapse_(new QToolButton(this)), pause_(new QToolButton(this)), body_(new QWidget(this)) {
  setObjectName(QStringLiteral("profilerPanel"));
  plot_->setModel(timeline_);
  tabs_->addTab(plot_, tr("Timeline"));
  charts_ = new ProfilerCharts(series_, tabs_, this);

  collapse_->setArrowType(Qt::DownArrow);
  collapse_->setAutoRaise(true);
  collapse_->setToolTip(tr("Collapse to one line"));
  connect(collapse_, &QToolButton::clicked, this, [this] { setCollapsed(!collapsed_); });
  pause_->setText(tr("Pause"));
  pause_->setCheckable(true);
  connect(pause_, &QToolButton::toggled, this, &ProfilerPanel::setPaused);
  auto* live = new QToolButton(this);
  live->setText(tr("Live"));
  live->setToolTip(tr("Follow the newest data again after zooming or panning"));
  connect(live, &QToolButton::clicked, this, [this] { plot_->setFollowLatest(true); });
  auto* exportButton = new QToolButton(this);
  exportButton->setText(tr("Export trace…"));
  connect(exportButton, &QToolButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Chrome trace"), QStringLiteral("strata-trace.json"),
                                                      tr("Chrome trace (*.json)"));
    if (path.isEmpty()) return;
    QString error;
    if (!exportChromeTrace(path, &error)) emit exportFailed(error);
  });

  auto* header = new QHBoxLayout;
  header->setContentsMargins(2, 0, 2, 0);
  header->addWidget(collapse_);
  header->addWidget(new QLabel(QStringLiteral("<b>%1</b>").arg(tr("Profiler")), this));
  header->addWidget(pause_);
  header->addWidget(live);
  header->addWidget(exportButton);
  header->addSpacing(8);
  header->addWidget(summary_, 1);

  auto* bodyLayout = new QVBoxLayout(body_);
  bodyLayout->setContentsMargins(0, 0, 0, 0);
  bodyLayout->addWidget(tabs_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(header);
  layout->addWidget(body_, 1);
  updateSummary();
}

void ProfilerPanel::appendBatch(const QJsonObject& batch) {
  if (paused_) {
    held_.append(batch);
    while (held_.size() > kMaxHeldBatches) held_.removeFirst();
    updateSummary();
    return;
  }
  apply(batch);
}

void ProfilerPanel::apply(const QJsonObject& batch) {
  timeline_->appendBatch(batch);
  series_->appendBatch(batch);
  updateSummary();
}

void ProfilerPanel::setStreamingTtft(double ms) {
  streamingTtftMs_ = ms;
  updateSummary();
}

void ProfilerPanel::addReplyStats(double ttftMs, int tokens, double tokensPerS) {
  streamingTtftMs_ = -1;
  series_->addReplyStats(ttftMs, tokens, tokensPerS);
  updateSummary();
}

void ProfilerPanel::setPaused(bool paused) {
  if (paused_ == paused) return;
  paused_ = paused;
  {
    QSignalBlocker block(pause_);
    pause_->setChecked(paused);
  }
  pause_->setText(paused ? tr("Resume") : tr("Pause"));
  if (!paused) {
    const QList<QJsonObject> held = std::exchange(held_, {});
    for (const QJsonObject& b : held) apply(b);
  }
  updateSummary();
  emit pausedChanged(paused);
}

void ProfilerPanel::setCollapsed(bool collapsed) {
  if (collapsed_ == collapsed) return;
  collapsed_ = collapsed;
  body_->setVisible(!collapsed);
  collapse_->setArrowType(collapsed ? Qt::RightArrow : Qt::DownArrow);
  emit collapsedChanged(collapsed);
}

void ProfilerPanel::setWindowSeconds(double seconds) {
  timeline_->setWindowNs(static_cast<qint64>(seconds * 1e9));
  series_->setWindowSeconds(std::max(seconds, 60.0));
}

void ProfilerPanel::clear() {
  held_.clear();
  timeline_->clear();
  series_->clear();
  updateSummary();
}

QString ProfilerPanel::summaryText() const {
  QStringList parts;
  parts << QStringLiteral("tok/s %1").arg(timeline_->latestTokensPerS(), 0, 'f', 1);
  // The reply in progress's first token as soon as it came, else the last finished reply's.
  const double ttft = streamingTtftMs_ >= 0 ? streamingTtftMs_ : series_->replies().isEmpty() ? -1 : series_->lastTtftMs();
  parts << (ttft < 0 ? QStringLiteral("TTFT –") : QStringLiteral("TTFT %1 ms").arg(ttft, 0, 'f', 0));
  QStringList bubbles;
  const QMap<int, double> b = timeline_->bubblePercent();
  for (auto it = b.begin(); it != b.end(); ++it)
    bubbles << QStringLiteral("%1 %2%").arg(timeline_->laneLabel(it.key())).arg(it.value(), 0, 'f', 0);
  if (!bubbles.isEmpty()) parts << QStringLiteral("bubble ") + bubbles.join(QStringLiteral(", "));
  if (paused_) parts << QStringLiteral("paused (%1 batches held)").arg(held_.size());
  return parts.join(QStringLiteral(" · "));
}

void ProfilerPanel::updateSummary() { summary_->setText(summaryText()); }

bool ProfilerPanel::exportChromeTrace(const QString& path, QString* error) {
  if (!timeline_->writeChromeTrace(path, error)) return false;
  emit traceExported(path);
  return true;
}

}  // namespace strata::ui
