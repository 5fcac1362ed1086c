// ui/profiler/timeline_plot.cpp — TimelinePlot and SpanLayer, a QCustomPlot plottable that draws all
// spans in one pass (one item per span would be too slow at 10 batches a second).
#include "ui/profiler/timeline_plot.h"

#include <QLabel>
#include <QResizeEvent>
#include <QMouseEvent>
#include <QToolTip>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include "ui/devices/memory_bar.h"
#include "ui/profiler/plot_palette.h"
#include "ui/profiler/timeline_model.h"

namespace strata::ui {

namespace {
constexpr double kRowHeight = 0.7;     // of a lane's unit height
constexpr double kMinLinkPx = 6.0;     // transfers and all-reduces are never drawn thinner
constexpr int kMinRowPx = 22;          // a lane's least height: its label (18 px) and some air

bool isLink(const TraceSpan& s) { return s.kind == QLatin1String("transfer") || s.kind == QLatin1String("all-reduce"); }
}  // namespace

QString formatDurationNs(qint64 ns) {
  if (ns >= 1'000'000) return QStringLiteral("%1 ms").arg(static_cast<double>(ns) / 1e6, 0, 'f', 3);
  if (ns >= 1'000) return QStringLiteral("%1 µs").arg(static_cast<double>(ns) / 1e3, 0, 'f', 1);
  return QStringLiteral("%1 ns").arg(ns);
}

// Spans in plot coordinates: key = ms, value = lane row.
class SpanLayer : public QCPAbstractPlottable {
 public:
  struct Item {
    double x0, x1;  // ms
    int row;
    QColor color;
    bool idle;
    int modelRow;
    double minPx = 1.0;  // drawn width at least this many pixels
    int fromRow = -1;    // transfers: a flow arrow from the sender's lane row...
    int toRow = -1;      // ...to the receiver's
  };
  SpanLayer(QCPAxis* key, QCPAxis* value) : QCPAbstractPlottable(key, value) {}

  QList<Item> items;           // start order
  QList<bool> simulatedRows;   // hatched lane backgrounds
  struct Fault {
    double x0, x1;  // ms: re-planning began, ended
    QString text;   // drawn at the top of the band
    bool ok;
  };
  QList<Fault> faults;

  double selectTest(const QPointF&, bool, QVariant*) const override { return -1; }
  QCPRange getKeyRange(bool& found, QCP::SignDomain) const override {
    found = !items.isEmpty();
    if (!found) return {};
    double lo = items.first().x0, hi = items.first().x1;
    for (const Item& i : items) {
      lo = std::min(lo, i.x0);
      hi = std::max(hi, i.x1);
    }
    return {lo, hi};
  }
  QCPRange getValueRange(bool& found, QCP::SignDomain, const QCPRange&) const override {
    found = true;
    return {-0.5, std::max<double>(simulatedRows.size(), 1) - 0.5};
  }

 protected:
  void draw(QCPPainter* painter) override {
    QCPAxis* k = mKeyAxis.data();
    QCPAxis* v = mValueAxis.data();
    if (!k || !v) return;
    const QCPRange visible = k->range();
    const double left = k->coordToPixel(visible.lower), right = k->coordToPixel(visible.upper);
    for (int r = 0; r < simulatedRows.size(); ++r) {
      if (!simulatedRows[r]) continue;
      const double y0 = v->coordToPixel(r - 0.5), y1 = v->coordToPixel(r + 0.5);
      painter->fillRect(QRectF(QPointF(left, std::min(y0, y1)), QPointF(right, std::max(y0, y1))),
                        QBrush(QColor(0, 0, 0, 28), Qt::BDiagPattern));
    }
    painter->setPen(Qt::NoPen);
    for (const Item& i : items) {
      if (i.x1 < visible.lower || i.x0 > visible.upper) continue;
      const double px0 = k->coordToPixel(i.x0);
      const double px1 = std::max(k->coordToPixel(i.x1), px0 + i.minPx);  // never thinner than minPx
      const double py0 = v->coordToPixel(i.row - kRowHeight / 2), py1 = v->coordToPixel(i.row + kRowHeight / 2);
      const QRectF rect(QPointF(px0, std::min(py0, py1)), QPointF(px1, std::max(py0, py1)));
      painter->fillRect(rect, i.idle ? QBrush(i.color, Qt::Dense5Pattern) : QBrush(i.color));
    }
    // Faults: a band over every lane for the re-planning, a line where the device was found lost,
    // and what happened, at the top.
    for (const Fault& f : faults) {
      if (f.x1 < visible.lower || f.x0 > visible.upper) continue;
      const QColor c = f.ok ? QColor(0xc0, 0x20, 0xc0) : QColor(0xc0, 0x20, 0x20);
      const double px0 = k->coordToPixel(f.x0), px1 = std::max(k->coordToPixel(f.x1), px0 + 2);
      const double top = std::min(v->coordToPixel(v->range().lower), v->coordToPixel(v->range().upper));
      const double bottom = std::max(v->coordToPixel(v->range().lower), v->coordToPixel(v->range().upper));
      QColor band = c;
      band.setAlpha(40);
      painter->fillRect(QRectF(QPointF(px0, top), QPointF(px1, bottom)), band);
      painter->setPen(QPen(c, 2));
      painter->drawLine(QPointF(px0, top), QPointF(px0, bottom));
      painter->setPen(c);
      painter->drawText(QRectF(QPointF(px0 + 4, top + 2), QPointF(right, top + 2 + painter->fontMetrics().height())),
                        Qt::AlignLeft | Qt::AlignTop, f.text);
    }
    painter->setPen(Qt::NoPen);
    // Flow arrows of transfers: sender's lane → receiver's lane, at the transfer's start.
    painter->setRenderHint(QPainter::Antialiasing, true);
    for (const Item& i : items) {
      if (i.fromRow < 0 || i.toRow < 0 || i.x1 < visible.lower || i.x0 > visible.upper) continue;
      const double x = k->coordToPixel(i.x0) + i.minPx / 2;
      const double y0 = v->coordToPixel(i.fromRow), y1 = v->coordToPixel(i.toRow);
      QColor c = i.color;
      c.setAlpha(170);
      painter->setPen(QPen(c, 1.5));
      painter->drawLine(QPointF(x, y0), QPointF(x, y1));
      const double dir = y1 > y0 ? 1.0 : -1.0;
      QPolygonF head;
      head << QPointF(x, y1) << QPointF(x - 4, y1 - dir * 7) << QPointF(x + 4, y1 - dir * 7);
      painter->setBrush(c);
      painter->drawPolygon(head);
      painter->setBrush(Qt::NoBrush);
    }
  }
  void drawLegendIcon(QCPPainter* painter, const QRectF& rect) const override {  // unused: TimelinePlot has its own legend
    painter->fillRect(rect, QColor(0x3b, 0x7d, 0xd8));
  }
};

TimelinePlot::TimelinePlot(QWidget* parent) : QWidget(parent), plot_(new QCustomPlot(this)) {
  spans_ = new SpanLayer(plot_->xAxis, plot_->yAxis);
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot_->axisRect()->setRangeDrag(Qt::Horizontal);
  plot_->axisRect()->setRangeZoom(Qt::Horizontal);
  plot_->xAxis->setLabel(tr("ms"));
  plot_->yAxis->setRangeReversed(true);
  plot_->yAxis->grid()->setVisible(false);
  plot_->yAxis->setTicker(QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText));
  plot_->xAxis->setRange(0, visibleMs_);
  plot_->setMouseTracking(true);
  plot_->installEventFilter(this);
  followPalette(plot_);
  connect(plot_, &QCustomPlot::mouseMove, this, &TimelinePlot::showTooltip);
  legend_ = new QLabel(this);
  legend_->setObjectName(QStringLiteral("timelineLegend"));
  legend_->setWordWrap(true);
  updateLegend();
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  layout->addWidget(plot_, 1);
  layout->addWidget(legend_);
}

TimelinePlot::~TimelinePlot() = default;

void TimelinePlot::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  const int legendHeight = legend_->heightForWidth(width()) + 2;  // + the layout's spacing
  const bool room = height() >= plot_->minimumHeight() + legendHeight;
  if (legend_->isVisibleTo(this) != room) legend_->setVisible(room);
}

void TimelinePlot::setModel(TimelineModel* model) {
  if (model_) disconnect(model_, nullptr, this, nullptr);
  model_ = model;
  if (model_) {
    connect(model_, &TimelineModel::batchAppended, this, &TimelinePlot::rebuild);
    connect(model_, &TimelineModel::lanesChanged, this, &TimelinePlot::rebuild);
    connect(model_, &TimelineModel::modelReset, this, &TimelinePlot::rebuild);
  }
  rebuild();
}

void TimelinePlot::setFollowLatest(bool follow) {
  follow_ = follow;
  if (follow) rebuild();
}

void TimelinePlot::setVisibleMs(double ms) {
  visibleMs_ = std::max(ms, 0.001);
  rebuild();
}

QColor TimelinePlot::spanColor(const TraceSpan& s) {
  if (s.kind == QLatin1String("compute")) {
    // Layer hues step around the wheel but skip 270-330 degrees: magenta is the lost device's
    // re-planning colour, and transfers' teal and all-reduces' red stay apart by saturation.
    int hue = ((s.layer < 0 ? 0 : s.layer) * 37) % 300;
    if (hue >= 270) hue += 60;
    return QColor::fromHsv(hue, 150, 215);
  }
  if (s.kind == QLatin1String("transfer")) return QColor(0x10, 0x90, 0x90);
  if (s.kind == QLatin1String("all-reduce")) return QColor(0xd0, 0x30, 0x30);
  if (s.kind == QLatin1String("idle")) return QColor(0xb0, 0xb0, 0xb0);
  if (s.kind == QLatin1String("replan")) return QColor(0xc0, 0x20, 0xc0);  // re-placing after a lost device
  if (s.kind == QLatin1String("embed") || s.kind == QLatin1String("head")) return QColor(0x50, 0x50, 0x50);
  // Speculative decoding, on the draft lane: guessing, then the verifying pass's share of guesses
  // the model took (green) and dropped (orange).
  if (s.kind == QLatin1String("draft")) return QColor(0x40, 0x60, 0xc0);
  if (s.kind == QLatin1String("draft-accepted")) return QColor(0x30, 0xa0, 0x40);
  if (s.kind == QLatin1String("draft-rejected")) return QColor(0xe0, 0x80, 0x20);
  return QColor(0xa0, 0x70, 0x40);  // host work: tokenize, sample, detokenize
}

QList<QPair<QString, QColor>> TimelinePlot::legendEntries() {
  TraceSpan compute{0, QStringLiteral("compute"), 0}, transfer{0, QStringLiteral("transfer")},
      allReduce{0, QStringLiteral("all-reduce")}, edge{0, QStringLiteral("embed")}, host{0, QStringLiteral("sample")},
      idle{0, QStringLiteral("idle")}, replan{0, QStringLiteral("replan")}, draft{0, QStringLiteral("draft")},
      accepted{0, QStringLiteral("draft-accepted")}, rejected{0, QStringLiteral("draft-rejected")};
  return {{tr("compute (colour by layer)"), spanColor(compute)},
          {tr("transfer (link row, arrow sender → receiver)"), spanColor(transfer)},
          {tr("all-reduce"), spanColor(allReduce)},
          {tr("embedding / head"), spanColor(edge)},
          {tr("host: tokenize, sample, detokenize"), spanColor(host)},
          {tr("idle"), spanColor(idle)},
          {tr("lost device: re-planning (band over every lane)"), spanColor(replan)},
          {tr("draft lane: guessing (speculative decoding)"), spanColor(draft)},
          {tr("guesses the model took"), spanColor(accepted)},
          {tr("guesses it dropped"), spanColor(rejected)}};
}

void TimelinePlot::updateLegend() {
  QStringList parts;
  for (const auto& [name, colour] : legendEntries())
    parts << QStringLiteral("<span style='color:%1'>■</span>&nbsp;%2").arg(colour.name(), name.toHtmlEscaped());
  legend_->setText(parts.join(QStringLiteral(" &nbsp; ")));
}

void TimelinePlot::rebuild() {
  spans_->items.clear();
  spans_->simulatedRows.clear();
  spans_->faults.clear();
  linkRows_.clear();
  auto ticker = qSharedPointerCast<QCPAxisTickerText>(plot_->yAxis->ticker());
  ticker->clear();
  if (model_) {
    const qint64 origin = model_->originNs();
    const int laneRows = int(model_->lanes().size());
    for (int r = 0; r < laneRows; ++r) {
      ticker->addTick(r, model_->lanes()[r].label());
      spans_->simulatedRows.append(model_->lanes()[r].simulated);
    }
    // Transfers and all-reduces get rows of their own below the lanes: one per sender → receiver
    // pair, one per device for all-reduces.
    auto linkRow = [&](const TraceSpan& s) {
      const QString label = s.kind == QLatin1String("transfer") && s.peerLane >= 0
                                ? QStringLiteral("%1 → %2").arg(model_->laneLabel(s.lane), model_->laneLabel(s.peerLane))
                                : QStringLiteral("%1 %2").arg(s.kind, model_->laneLabel(s.lane));
      int at = int(linkRows_.indexOf(label));
      if (at < 0) {
        at = int(linkRows_.size());
        linkRows_.append(label);
        ticker->addTick(laneRows + at, label);
        spans_->simulatedRows.append(false);
      }
      return laneRows + at;
    };
    for (int i = 0; i < model_->rowCount(); ++i) {
      const TraceSpan& s = model_->span(i);
      const double x0 = static_cast<double>(s.startNs - origin) / 1e6;
      SpanLayer::Item item{x0, x0 + static_cast<double>(s.durationNs) / 1e6, model_->laneRow(s.lane), spanColor(s),
                           !s.busy(), i, 1.0, -1, -1};
      if (isLink(s)) {
        item.row = linkRow(s);
        item.minPx = kMinLinkPx;
        if (s.kind == QLatin1String("transfer") && s.peerLane >= 0) {
          item.fromRow = model_->laneRow(s.lane);
          item.toRow = model_->laneRow(s.peerLane);
        }
      }
      spans_->items.append(item);
    }
    for (const TraceFault& f : model_->faults())
      spans_->faults.append({static_cast<double>(f.startNs - origin) / 1e6, static_cast<double>(f.endNs() - origin) / 1e6,
                             f.text, f.ok});
    plot_->yAxis->setRange(-0.5, std::max<double>(spans_->simulatedRows.size(), 1) - 0.5);
    // Each row at least kMinRowPx tall: the plot asks for that much height (the dock follows).
    const int rows = std::max<int>(int(spans_->simulatedRows.size()), 1);
    const int axisPx = 2 * plot_->fontMetrics().height() + 24;  // the time axis: ticks, their labels, "ms"
    if (plot_->minimumHeight() != rows * kMinRowPx + axisPx) plot_->setMinimumHeight(rows * kMinRowPx + axisPx);
    if (follow_ && model_->rowCount() > 0) {
      // Live: the newest events, not "now" — after a reply ends its spans stay in view.
      const double latest = static_cast<double>(model_->latestEventNs() - origin) / 1e6;
      plot_->xAxis->setRange(std::max(0.0, latest - visibleMs_), std::max(latest, visibleMs_));
    }
  }
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

QList<QPair<QPair<double, double>, QString>> TimelinePlot::faultBands() const {
  QList<QPair<QPair<double, double>, QString>> out;
  for (const SpanLayer::Fault& f : spans_->faults) out.append({{f.x0, f.x1}, f.text});
  return out;
}

void TimelinePlot::replotNow() { plot_->replot(QCustomPlot::rpImmediateRefresh); }

QList<QPair<double, double>> TimelinePlot::laneSpans(int laneRow) const {
  QList<QPair<double, double>> out;
  for (const SpanLayer::Item& i : spans_->items)
    if (i.row == laneRow) out.append({i.x0, i.x1});
  return out;
}

int TimelinePlot::rowCount() const { return std::max<int>(int(spans_->simulatedRows.size()), 1); }

double TimelinePlot::rowHeightPx() const { return std::abs(plot_->yAxis->coordToPixel(1) - plot_->yAxis->coordToPixel(0)); }

QPair<double, double> TimelinePlot::visibleRangeMs() const { return {plot_->xAxis->range().lower, plot_->xAxis->range().upper}; }

int TimelinePlot::spanCount() const { return static_cast<int>(spans_->items.size()); }

QString TimelinePlot::tooltipAt(double xMs, double laneRow) const {
  if (!model_) return {};
  // A fault band covers every lane: its text comes first.
  for (const SpanLayer::Fault& f : spans_->faults) {
    if (xMs >= f.x0 && xMs <= f.x1) return f.text;
  }
  const int row = qRound(laneRow);
  if (std::abs(laneRow - row) > kRowHeight / 2) return {};
  // A span under the cursor (the latest started wins), else the nearest within two pixels, so that
  // very short spans can be hovered.
  const double range = plot_->xAxis->range().size();
  const double tolerance = std::min(range / std::max(plot_->axisRect()->width(), 1) * 2, range / 100);
  const SpanLayer::Item* hit = nullptr;
  double best = tolerance;
  for (const SpanLayer::Item& i : spans_->items) {
    if (i.row != row) continue;
    if (xMs >= i.x0 && xMs <= i.x1) {
      hit = &i;
      best = 0;
    } else if (best > 0) {
      const double d = xMs < i.x0 ? i.x0 - xMs : xMs - i.x1;
      if (d <= best) {
        hit = &i;
        best = d;
      }
    }
  }
  if (hit) {
    const TraceSpan& s = model_->span(hit->modelRow);
    QString text = s.kind == QLatin1String("transfer") && s.peerLane >= 0
                       ? QStringLiteral("transfer %1 → %2").arg(model_->laneLabel(s.lane), model_->laneLabel(s.peerLane))
                       : QStringLiteral("%1 on %2").arg(s.kind, model_->laneLabel(s.lane));
    if (s.layer >= 0) text += QStringLiteral("\nlayer %1").arg(s.layer);
    if (s.token >= 0) text += QStringLiteral("\ntoken %1%2").arg(s.token).arg(s.nTokens > 1 ? QStringLiteral(" (+%1)").arg(s.nTokens - 1) : QString());
    if (s.bytes > 0) {
      text += QStringLiteral("\n%1 in %2").arg(formatBytes(s.bytes), formatDurationNs(s.durationNs));
      if (s.durationNs > 0) text += QStringLiteral(", %1 GB/s").arg(static_cast<double>(s.bytes) / static_cast<double>(s.durationNs), 0, 'f', 2);
    } else {
      text += QStringLiteral("\nduration %1").arg(formatDurationNs(s.durationNs));
    }
    return text;
  }
  return {};
}

void TimelinePlot::showTooltip(QMouseEvent* event) {
  const QPointF pos = event->position();
  const QString text = tooltipAt(plot_->xAxis->pixelToCoord(pos.x()), plot_->yAxis->pixelToCoord(pos.y()));
  if (text.isEmpty()) QToolTip::hideText();
  else QToolTip::showText(event->globalPosition().toPoint(), text, plot_);
}

bool TimelinePlot::eventFilter(QObject* watched, QEvent* event) {
  if (watched == plot_ && (event->type() == QEvent::Wheel || event->type() == QEvent::MouseButtonPress))
    follow_ = false;  // the user zooms or pans: stop following the newest data
  return QWidget::eventFilter(watched, event);
}

}  // namespace strata::ui
