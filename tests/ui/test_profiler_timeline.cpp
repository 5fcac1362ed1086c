// tests/ui/test_profiler_timeline.cpp — TimelineModel (ordering, bounding, lane mapping, bubble %),
// the timeline plot's spans per lane, tooltips, chart series, pause/resume and the Chrome export.
#include <QAbstractItemModelTester>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>

#include "ui/profiler/profiler_panel.h"
#include "ui/profiler/profiler_series.h"
#include "ui/profiler/timeline_model.h"
#include "ui/profiler/timeline_plot.h"

#include <qcustomplot.h>

using namespace strata::ui;

namespace {

constexpr qint64 ms = 1'000'000;  // ns

QJsonObject traceEvent(int lane, const char* kind, int layer, qint64 startMs, qint64 durMs, double bytes = 0, int peer = -1) {
  return QJsonObject{{"lane", lane}, {"kind", kind}, {"layer", layer}, {"seq", 0}, {"token", 7},
                     {"start_ns", double(startMs * ms)}, {"duration_ns", double(durMs * ms)}, {"bytes", bytes},
                     {"peer_lane", peer}, {"n_tokens", 1}};
}

QJsonArray lanes() {
  return QJsonArray{QJsonObject{{"id", 0}, {"name", "gpu0"}, {"simulated", true}},
                    QJsonObject{{"id", 1}, {"name", "gpu1"}, {"simulated", false}},
                    QJsonObject{{"id", 2}, {"name", "host"}, {"simulated", false}}};
}

// Work is in flight during all of [0,40). gpu0 computes [0,10) + [20,30) = 20 ms (its transfer
// [10,11) runs on the link); gpu1 computes [10,25) + [30,40) = 25 ms (an idle span [25,30) does not
// count); host busy [39,40).
QJsonObject handMadeBatch() {
  return QJsonObject{
      {"lanes", lanes()},
      {"events", QJsonArray{traceEvent(1, "compute", 2, 10, 10), traceEvent(0, "compute", 0, 0, 10),
                            traceEvent(0, "transfer", -1, 10, 1, 16384000, 1), traceEvent(1, "compute", 3, 15, 10),
                            traceEvent(0, "compute", 1, 20, 10), traceEvent(1, "idle", -1, 25, 5),
                            traceEvent(1, "compute", 4, 30, 10), traceEvent(2, "sample", -1, 39, 1)}},
      {"memory", QJsonArray{QJsonObject{{"lane", 0}, {"time_ns", double(40 * ms)}, {"weights", 1 << 30},
                                        {"kv_used", 1 << 20}, {"kv_reserved", 1 << 29}, {"scratch", 1 << 28},
                                        {"other", 0}, {"free", 0}, {"total", 1LL << 34}}}},
      {"tokens_per_s", 41.25},
      {"now_ns", double(40 * ms)}};
}

using Spans = QList<QPair<double, double>>;

}  // namespace

class TestProfilerTimeline : public QObject {
  Q_OBJECT
 private slots:
  void bubblesAndPlotSpans() {
    TimelineModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    TimelinePlot plot;
    plot.resize(800, 300);
    plot.setModel(&model);
    model.appendBatch(handMadeBatch());
    plot.replotNow();  // lays out the axis rect (pixels per ms for the hover tolerance)

    QCOMPARE(model.rowCount(), 8);
    for (int i = 1; i < model.rowCount(); ++i)
      QVERIFY(model.span(i - 1).startNs <= model.span(i).startNs);
    const QMap<int, double> bubble = model.bubblePercent();
    QCOMPARE(bubble.value(0), 100.0 * (1.0 - 20.0 / 40.0));  // 50
    QCOMPARE(bubble.value(1), 100.0 * (1.0 - 25.0 / 40.0));  // 37.5
    QVERIFY(!bubble.contains(2));                            // the host is not a device

    QCOMPARE(plot.spanCount(), 8);
    QCOMPARE(plot.laneSpans(0), (Spans{{0, 10}, {20, 30}}));
    QCOMPARE(plot.laneSpans(1), (Spans{{10, 20}, {15, 25}, {25, 30}, {30, 40}}));
    QCOMPARE(plot.laneSpans(2), (Spans{{39, 40}}));
    QCOMPARE(plot.linkRowLabels(), QStringList{"gpu0 (simulated) → gpu1"});  // the transfer's own row
    QCOMPARE(plot.laneSpans(3), (Spans{{10, 11}}));

    // Colours: compute by layer (two layers differ), transfer and all-reduce distinct from compute.
    TraceSpan c0{0, "compute", 0}, c1{0, "compute", 1}, t{0, "transfer"}, a{0, "all-reduce"};
    QVERIFY(TimelinePlot::spanColor(c0) != TimelinePlot::spanColor(c1));
    QVERIFY(TimelinePlot::spanColor(t) != TimelinePlot::spanColor(c0));
    QVERIFY(TimelinePlot::spanColor(a) != TimelinePlot::spanColor(t));

    QCOMPARE(plot.tooltipAt(10.5, 3.1), QString("transfer gpu0 (simulated) → gpu1\ntoken 7\n15.6 MiB in 1.000 ms, 16.38 GB/s"));
    QVERIFY2(plot.tooltipAt(2, 1.0).isEmpty(), "gpu1 is idle at 2 ms");
    const QString compute = plot.tooltipAt(35, 1.0);
    QVERIFY2(compute.contains("layer 4") && compute.contains("token 7") && compute.contains("duration 10.000 ms"),
             qPrintable(compute));
  }

  // Bubble = a device's idle time while work is in flight elsewhere, over the time work is in flight
  // anywhere (docs/profiler.md). Synthetic traces on gpu0 (lane 0), gpu1 (lane 1), host (lane 2):
  // each event "lane kind start end" in ms.
  void bubbleDefinition_data() {
    QTest::addColumn<QStringList>("events");
    QTest::addColumn<double>("gpu0");
    QTest::addColumn<double>("gpu1");
    // A lane that computes whenever anything runs: 0%, however long the gaps between replies.
    QTest::newRow("busy whenever work runs, long gaps") << QStringList{"0 compute 0 10", "0 compute 500 510", "1 compute 2 8"}
                                                        << 0.0 << 70.0;
    QTest::newRow("two-stage pipeline, one sequence") << QStringList{"0 compute 0 10", "1 compute 10 20"} << 50.0 << 50.0;
    QTest::newRow("pipeline filled by two sequences") << QStringList{"0 compute 0 10", "0 compute 10 20", "1 compute 10 20",
                                                                     "1 compute 20 30"}
                                                      << 100.0 / 3 << 100.0 / 3;
    QTest::newRow("transfers run on the link") << QStringList{"0 compute 0 10", "0 transfer 10 12", "1 compute 12 22"}
                                               << 100.0 * 12 / 22 << 100.0 * 12 / 22;
    QTest::newRow("idle spans and host work") << QStringList{"0 compute 0 10", "0 idle 10 20", "2 sample 10 20", "1 compute 0 20"}
                                              << 50.0 << 0.0;
  }
  void bubbleDefinition() {
    QFETCH(QStringList, events);
    QFETCH(double, gpu0);
    QFETCH(double, gpu1);
    QJsonArray list;
    for (const QString& e : events) {
      const QStringList f = e.split(' ');
      list.append(traceEvent(f[0].toInt(), qPrintable(f[1]), 0, f[2].toLongLong(), f[3].toLongLong() - f[2].toLongLong(),
                             f[1] == "transfer" ? 1000 : 0, f[1] == "transfer" ? 1 : -1));
    }
    TimelineModel model;
    model.appendBatch(QJsonObject{{"lanes", lanes()}, {"events", list}});
    const QMap<int, double> b = model.bubblePercent();
    QVERIFY(qAbs(b.value(0) - gpu0) < 1e-9);
    QVERIFY2(qAbs(b.value(1) - gpu1) < 1e-9, qPrintable(QString::number(b.value(1))));
    QVERIFY(!b.contains(2));
  }

  // A 2 µs transfer in a 100 ms view: drawn 6 px wide (5 of them solid) on its link row, with its arrow;
  // the legend names every kind; the tooltip gives bytes, time and GB/s.
  void shortTransfersAreVisible() {
    TimelineModel model;
    TimelinePlot plot;
    plot.resize(800, 300);
    plot.setModel(&model);
    QJsonObject transfer = traceEvent(0, "transfer", -1, 0, 0, 65536, 1);
    transfer["start_ns"] = double(50 * ms);
    transfer["duration_ns"] = 2000.0;
    model.appendBatch(QJsonObject{{"lanes", lanes()},
                                  {"events", QJsonArray{traceEvent(0, "compute", 0, 0, 50), transfer,
                                                        traceEvent(1, "compute", 1, 50, 50)}}});
    plot.setFollowLatest(false);
    plot.plot()->xAxis->setRange(0, 100);
    plot.replotNow();
    QCOMPARE(plot.tooltipAt(50.0, 3.0), QString("transfer gpu0 (simulated) → gpu1\ntoken 7\n64.0 KiB in 2.0 µs, 32.77 GB/s"));
    const QImage image = plot.plot()->toPixmap(800, 280).toImage();
    const QRgb colour = TimelinePlot::spanColor(TraceSpan{0, "transfer"}).rgb();
    QSet<int> columns;
    for (int y = 0; y < image.height(); ++y)
      for (int x = 0; x < image.width(); ++x)
        if ((image.pixel(x, y) & 0xffffff) == (colour & 0xffffff)) columns.insert(x);
    QVERIFY2(columns.size() >= 5, qPrintable(QString::number(columns.size())));
    QStringList kinds;
    for (const auto& entry : TimelinePlot::legendEntries()) kinds << entry.first.section(' ', 0, 0);
    QCOMPARE(kinds, (QStringList{"compute", "transfer", "all-reduce", "embedding", "host:", "idle", "lost", "draft",
                                 "guesses", "guesses"}));
    for (const auto& entry : TimelinePlot::legendEntries())
      QVERIFY(plot.legend()->text().contains(entry.second.name()));
  }

  // The draft lane of speculative decoding: guessing in blue, the verifying pass's taken share in
  // green and its dropped share in orange, each drawn in its own pixels, with its kind in the tooltip.
  void draftLaneShowsTakenAndDroppedGuesses() {
    TimelineModel model;
    TimelinePlot plot;
    plot.resize(800, 300);
    plot.setModel(&model);
    QJsonArray withDraft = lanes();
    withDraft.append(QJsonObject{{"id", 3}, {"name", "draft"}, {"simulated", false}});
    model.appendBatch(QJsonObject{{"lanes", withDraft},
                                  {"events", QJsonArray{traceEvent(3, "draft", -1, 0, 10), traceEvent(0, "compute", 0, 10, 40),
                                                        traceEvent(3, "draft-accepted", -1, 10, 30),
                                                        traceEvent(3, "draft-rejected", -1, 40, 10)}}});
    QCOMPARE(model.laneLabel(3), QStringLiteral("draft"));
    plot.setFollowLatest(false);
    plot.plot()->xAxis->setRange(0, 100);
    plot.rebuild();
    plot.replotNow();
    QVERIFY2(plot.tooltipAt(25.0, 3.0).startsWith(QStringLiteral("draft-accepted")), qPrintable(plot.tooltipAt(25.0, 3.0)));
    QVERIFY2(plot.tooltipAt(45.0, 3.0).startsWith(QStringLiteral("draft-rejected")), qPrintable(plot.tooltipAt(45.0, 3.0)));
    const QImage image = plot.plot()->toPixmap(800, 280).toImage();
    for (const char* kind : {"draft", "draft-accepted", "draft-rejected"}) {
      const QRgb colour = TimelinePlot::spanColor(TraceSpan{0, kind}).rgb();
      int pixels = 0;
      for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) pixels += (image.pixel(x, y) & 0xffffff) == (colour & 0xffffff);
      QVERIFY2(pixels >= 100, qPrintable(QString("%1: %2 pixels").arg(kind).arg(pixels)));
    }
  }

  // A strata.replan record: a fault band over every lane with what happened, the lost lane marked,
  // the band's text as the tooltip, drawn in the re-plan colour.
  void faultBandAndLostLane() {
    TimelineModel model;
    TimelinePlot plot;
    plot.resize(800, 300);
    plot.setModel(&model);
    model.appendBatch(QJsonObject{{"lanes", lanes()},
                                  {"events", QJsonArray{traceEvent(0, "compute", 0, 0, 30), traceEvent(1, "compute", 1, 30, 10)}}});
    const QJsonObject placement{{"embedding", QJsonObject{{"device", "gpu0"}}},
                                {"layers", QJsonArray{QJsonObject{{"layers", "0-1"}, {"device", "gpu0"}},
                                                      QJsonObject{{"layers", "2-3"}, {"group", QJsonArray{"gpu0", "cpu"}}}}},
                                {"head", QJsonObject{{"device", "cpu"}}}};
    // Ended at 62.5 ms after 12.5 ms of re-planning: the band is [50, 62.5] ms.
    model.appendReplan(QJsonObject{{"time_ns", double(62'500'000)}, {"ms", 12.5}, {"ok", true},
                                   {"lost", QJsonArray{"gpu1"}}, {"excluded", QJsonArray{}}, {"moved_blocks", 2},
                                   {"devices", QJsonArray{"gpu0", "cpu"}}, {"placement", placement},
                                   {"error", QJsonValue::Null}});
    QCOMPARE(model.faults().size(), 1);
    // The same record again (from /status after the trace stream): still one.
    model.appendReplan(QJsonObject{{"time_ns", double(62'500'000)}, {"ms", 12.5}, {"ok", true}, {"lost", QJsonArray{"gpu1"}}});
    QCOMPARE(model.faults().size(), 1);
    const TraceFault& f = model.faults().first();
    QCOMPARE(f.startNs, qint64(50'000'000));
    QCOMPARE(f.durationNs, qint64(12'500'000));
    QCOMPARE(f.lost, QStringList{"gpu1"});
    QCOMPARE(f.text, QStringLiteral("gpu1 lost · re-planned in 13 ms · 2 block(s) moved · now gpu0 + cpu"));
    QCOMPARE(model.laneLabel(1), QStringLiteral("gpu1 (lost)"));
    QCOMPARE(model.laneLabel(0), QStringLiteral("gpu0 (simulated)"));
    plot.setFollowLatest(false);
    plot.plot()->xAxis->setRange(0, 100);
    plot.rebuild();
    plot.replotNow();
    QCOMPARE(plot.faultBands().size(), 1);
    QCOMPARE(plot.faultBands()[0].first, qMakePair(50.0, 62.5));
    QCOMPARE(plot.tooltipAt(55.0, 0.0), f.text);  // over any lane
    QCOMPARE(plot.tooltipAt(55.0, 2.0), f.text);
    QVERIFY(plot.tooltipAt(80.0, 0.0).isEmpty());
    // The line where the device was found lost is drawn in the re-plan colour.
    const QImage image = plot.plot()->toPixmap(800, 280).toImage();
    const QRgb colour = TimelinePlot::spanColor(TraceSpan{0, "replan"}).rgb();
    int pixels = 0;
    for (int y = 0; y < image.height(); ++y)
      for (int x = 0; x < image.width(); ++x) pixels += (image.pixel(x, y) & 0xffffff) == (colour & 0xffffff);
    QVERIFY2(pixels >= 100, qPrintable(QString::number(pixels)));
    // A re-plan that found no placement says so; a lane that appears later for a lost device is marked too.
    model.appendReplan(QJsonObject{{"time_ns", double(90'000'000)}, {"ms", 1.0}, {"ok", false},
                                   {"lost", QJsonArray{"gpu7"}}, {"error", "needs 3.0 GiB more"}});
    QCOMPARE(model.faults().size(), 2);
    QCOMPARE(model.faults()[1].text, QStringLiteral("gpu7 lost · no placement fits what is left: needs 3.0 GiB more"));
    model.appendBatch(QJsonObject{{"lanes", QJsonArray{QJsonObject{{"id", 5}, {"name", "gpu7"}, {"simulated", true}}}}});
    QCOMPARE(model.laneLabel(5), QStringLiteral("gpu7 (simulated, lost)"));
    model.clear();
    QVERIFY(model.faults().isEmpty());
  }

  void ordering_data() {
    QTest::addColumn<QList<qint64>>("firstBatchMs");
    QTest::addColumn<QList<qint64>>("secondBatchMs");
    QTest::addColumn<QList<qint64>>("expectedMs");
    QTest::newRow("in order") << QList<qint64>{0, 5} << QList<qint64>{10, 15} << QList<qint64>{0, 5, 10, 15};
    QTest::newRow("late events") << QList<qint64>{0, 20} << QList<qint64>{10, 5} << QList<qint64>{0, 5, 10, 20};
    QTest::newRow("unsorted batch") << QList<qint64>{30, 10, 20} << QList<qint64>{} << QList<qint64>{10, 20, 30};
  }
  void ordering() {
    QFETCH(QList<qint64>, firstBatchMs);
    QFETCH(QList<qint64>, secondBatchMs);
    QFETCH(QList<qint64>, expectedMs);
    TimelineModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    for (const auto& starts : {firstBatchMs, secondBatchMs}) {
      QJsonArray events;
      for (qint64 s : starts) events.append(traceEvent(0, "compute", 0, s, 1));
      model.appendBatch(QJsonObject{{"lanes", lanes()}, {"events", events}});
    }
    QList<qint64> got;
    for (int i = 0; i < model.rowCount(); ++i) got << model.data(model.index(i), TimelineModel::StartNsRole).toLongLong() / ms;
    QCOMPARE(got, expectedMs);
  }

  void bounding_data() {
    QTest::addColumn<qint64>("windowMs");
    QTest::addColumn<qint64>("nowMs");
    QTest::addColumn<QList<qint64>>("keptMs");
    QTest::newRow("keeps the last 100 ms") << qint64(100) << qint64(210) << QList<qint64>{120, 200};
    QTest::newRow("keeps all") << qint64(1000) << qint64(210) << QList<qint64>{0, 50, 120, 200};
    QTest::newRow("latest end decides") << qint64(100) << qint64(0) << QList<qint64>{120, 200};  // end 205
  }
  void bounding() {
    QFETCH(qint64, windowMs);
    QFETCH(qint64, nowMs);
    QFETCH(QList<qint64>, keptMs);
    TimelineModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setWindowNs(windowMs * ms);
    QJsonArray events;
    for (qint64 s : {0, 50, 120, 200}) events.append(traceEvent(0, "compute", 0, s, 5));
    QJsonObject batch{{"lanes", lanes()}, {"events", events}};
    if (nowMs > 0) batch.insert("now_ns", double(nowMs * ms));
    model.appendBatch(batch);
    QList<qint64> got;
    for (int i = 0; i < model.rowCount(); ++i) got << model.span(i).startNs / ms;
    QCOMPARE(got, keptMs);
    QCOMPARE(model.originNs(), qint64(0));  // x stays anchored at the first event ever seen
  }

  void laneMapping() {
    TimelineModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.appendBatch(QJsonObject{{"events", QJsonArray{traceEvent(7, "compute", 0, 0, 1), traceEvent(3, "compute", 1, 1, 1)}}});
    QCOMPARE(model.lanes().size(), 2);
    QCOMPARE(model.laneRow(3), 0);  // rows in lane-id order
    QCOMPARE(model.laneRow(7), 1);
    QCOMPARE(model.laneLabel(7), QString("lane 7"));
    model.appendBatch(QJsonObject{{"lanes", QJsonArray{QJsonObject{{"id", 7}, {"name", "gpu3"}, {"simulated", true}},
                                                       QJsonObject{{"id", 5}, {"name", "cpu"}}}}});
    QCOMPARE(model.laneLabel(7), QString("gpu3 (simulated)"));
    QCOMPARE(model.laneRow(5), 1);
    QCOMPARE(model.laneRow(7), 2);
    QCOMPARE(model.data(model.index(0), TimelineModel::LaneRowRole).toInt(), 2);  // the lane-7 event
    QCOMPARE(model.data(model.index(0), TimelineModel::LaneNameRole).toString(), QString("gpu3 (simulated)"));
  }

  void seriesFromBatches() {
    ProfilerSeries series;
    series.appendBatch(handMadeBatch());
    QJsonObject second{{"events", QJsonArray{traceEvent(0, "transfer", -1, 50, 1, 1e8, 1)}}, {"tokens_per_s", 40.0},
                       {"now_ns", double(140 * ms)}};
    series.appendBatch(second);
    QCOMPARE(series.tokensPerS().size(), 2);
    QCOMPARE(series.tokensPerS().last(), QPointF(0.1, 40.0));
    const auto link = series.linkGbps().value("gpu0 (simulated) → gpu1");
    QCOMPARE(link.size(), 1);
    QCOMPARE(link.first(), QPointF(0.1, 1.0));  // 1e8 bytes in 100 ms
    const auto mem = series.memoryUsed().value("gpu0 (simulated)");
    QCOMPARE(mem.size(), 1);
    QCOMPARE(mem.first().y(), double((1 << 30) + (1 << 29) + (1 << 28)));
    series.addReplyStats(180, 212, 41.3);
    QCOMPARE(series.lastTtftMs(), 180.0);
  }

  void panelPauseSummaryExport() {
    ProfilerPanel panel;
    panel.resize(900, 400);
    panel.addReplyStats(180, 212, 41.3);
    panel.setPaused(true);
    panel.appendBatch(handMadeBatch());
    QCOMPARE(panel.timelineModel()->rowCount(), 0);
    QCOMPARE(panel.heldBatches(), 1);
    QVERIFY(panel.summaryText().contains("paused (1 batches held)"));
    panel.setPaused(false);
    QCOMPARE(panel.timelineModel()->rowCount(), 8);
    QCOMPARE(panel.summaryText(), QString("tok/s 41.3 · TTFT 180 ms · bubble gpu0 (simulated) 50%, gpu1 38%"));
    panel.setCollapsed(true);
    QVERIFY(panel.isCollapsed());

    QTemporaryDir dir;
    const QString path = dir.filePath("trace.json");
    QVERIFY(panel.exportChromeTrace(path));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonArray events = QJsonDocument::fromJson(f.readAll()).object().value("traceEvents").toArray();
    int spans = 0, names = 0;
    for (const QJsonValue& v : events) {
      const QJsonObject e = v.toObject();
      if (e.value("ph") == "X") ++spans;
      if (e.value("ph") == "M") ++names;
      if (e.value("name") == "transfer") {
        QCOMPARE(e.value("ts").toDouble(), 10000.0);  // microseconds
        QCOMPARE(e.value("dur").toDouble(), 1000.0);
        QCOMPARE(e.value("args").toObject().value("bytes").toDouble(), 16384000.0);
      }
    }
    QCOMPARE(spans, 8);
    QCOMPARE(names, 3);
  }
};

QTEST_MAIN(TestProfilerTimeline)
#include "test_profiler_timeline.moc"
