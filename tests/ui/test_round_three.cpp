// tests/ui/test_round_three.cpp — issue 49, the UI items, offscreen: long lines do not widen the chat
// (at scale 1.0 and, registered again in CMake, 1.5); a chat cut off by a model switch comes back
// drawn; the profiler's lanes are readable at the default size and the dock's size is kept; the
// Placement toolbar's labels fit; parts rows have real bytes; the send hint follows the engine
// and Enter before ready is queued; the crash message names the cause, what was kept and the log.
#include <QAbstractItemModelTester>
#include <QAbstractButton>
#include <QDockWidget>
#include <QJsonArray>
#include <QLabel>
#include <QPlainTextEdit>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBrowser>

#include "fake_engine.h"
#include "ui/app/app_settings.h"
#include "ui/app/main_window.h"
#include "ui/app/workstation.h"
#include "ui/chat/chat_controller.h"
#include "ui/chat/chat_view.h"
#include "ui/chat/message_widget.h"
#include "ui/chat/sampling_bar.h"
#include <QDoubleSpinBox>
#include "ui/client/engine_client.h"
#include "ui/client/engine_process.h"
#include "ui/placement/placement_editor.h"
#include "ui/placement/placement_estimate.h"
#include "ui/profiler/profiler_panel.h"
#include "ui/profiler/timeline_model.h"
#include "ui/profiler/timeline_plot.h"
#include "ui/storage/conversation_store.h"

using namespace strata::ui;

namespace {
// 300 characters and no space: a path, a hash, an error's JSON.
QString unbroken(int n = 300) {
  QString s;
  for (int i = 0; i < n; ++i) s += QChar(u'a' + i % 26);
  return s;
}

constexpr qint64 kMs = 1'000'000;  // ns

QJsonObject traceEvent(int lane, const char* kind, int layer, qint64 startMs, qint64 durMs, double bytes = 0, int peer = -1) {
  return QJsonObject{{"lane", lane}, {"kind", kind}, {"layer", layer}, {"seq", 0}, {"token", 3},
                     {"start_ns", double(startMs * kMs)}, {"duration_ns", double(durMs * kMs)}, {"bytes", bytes},
                     {"peer_lane", peer}, {"n_tokens", 1}};
}

// A reply on cpu + two simulated GPUs: four lanes and a link row (gpu0 → gpu1), as the issue saw.
QJsonObject replyBatch() {
  const QJsonArray lanes{QJsonObject{{"id", 0}, {"name", "cpu"}, {"simulated", false}},
                         QJsonObject{{"id", 1}, {"name", "gpu0"}, {"simulated", true}},
                         QJsonObject{{"id", 2}, {"name", "gpu1"}, {"simulated", true}},
                         QJsonObject{{"id", 3}, {"name", "host"}, {"simulated", false}}};
  QJsonArray events;
  for (int t = 0; t < 10; ++t) {
    const qint64 at = 1000 + t * 10;
    events << traceEvent(1, "compute", 0, at, 4) << traceEvent(1, "transfer", -1, at + 4, 1, 16384, 2)
           << traceEvent(2, "compute", 1, at + 5, 4) << traceEvent(0, "compute", 2, at + 9, 1)
           << traceEvent(3, "sample", -1, at + 9, 1);
  }
  return QJsonObject{{"lanes", lanes}, {"events", events}, {"tokens_per_s", 80.0}, {"now_ns", double(1100 * kMs)}};
}

// Every part of every message lies inside the scroll area's viewport, and no text is clipped.
QString chatOverflow(ChatView& view) {
  auto* scroll = view.findChild<QScrollArea*>();
  if (!scroll) return QStringLiteral("no scroll area");
  if (scroll->horizontalScrollBar()->isVisible())
    return QStringLiteral("horizontal scrollbar shown (range %1)").arg(scroll->horizontalScrollBar()->maximum());
  const int vw = scroll->viewport()->width();
  for (int row = 0; row < view.messageCount(); ++row) {
    MessageWidget* w = view.messageWidget(row);
    const int right = w->mapTo(scroll->viewport(), QPoint(w->width(), 0)).x();
    if (right > vw) return QStringLiteral("message %1 ends at x %2, the viewport at %3").arg(row).arg(right).arg(vw);
    for (QLabel* l : w->findChildren<QLabel*>()) {
      if (!l->isVisibleTo(w) || l->text().isEmpty()) continue;
      if (l->wordWrap() && l->heightForWidth(l->width()) > l->height())
        return QStringLiteral("label '%1' of message %2 is cut: needs %3 px, has %4")
            .arg(l->objectName()).arg(row).arg(l->heightForWidth(l->width())).arg(l->height());
      if (!l->wordWrap() && l->sizeHint().width() > l->width())
        return QStringLiteral("label '%1' of message %2 is cut: needs %3 px wide, has %4")
            .arg(l->objectName()).arg(row).arg(l->sizeHint().width()).arg(l->width());
    }
    QTextBrowser* b = w->browser();
    if (b->horizontalScrollBar()->maximum() > 0 || b->document()->idealWidth() > b->viewport()->width() + 1)
      return QStringLiteral("text of message %1 is %2 px wide in %3 px").arg(row).arg(b->document()->idealWidth()).arg(b->viewport()->width());
    if (b->document()->size().height() > b->viewport()->height() + 1)
      return QStringLiteral("text of message %1 is %2 px high in %3 px").arg(row).arg(b->document()->size().height()).arg(b->viewport()->height());
  }
  return {};
}
}  // namespace

class TestRoundThree : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  int dbs_ = 0;

  QString newDb() { return dir_.filePath(QStringLiteral("db%1.sqlite3").arg(++dbs_)); }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir_.filePath(QStringLiteral("settings")));
  }

  // Item 1: one long unbroken line (in the footer, the note, a code block, the text) leaves the
  // message column at the view's width: no horizontal scrollbar, nothing clipped.
  void longLineDoesNotWidenTheChat_data() {
    QTest::addColumn<QString>("content");
    QTest::addColumn<QString>("finishReason");
    QTest::addColumn<QString>("note");
    QTest::newRow("footer error") << QStringLiteral("Short reply.") << QStringLiteral("error: ") + unbroken() << QString();
    QTest::newRow("note") << QStringLiteral("Short reply.") << QStringLiteral("stop") << unbroken();
    QTest::newRow("text") << unbroken() << QStringLiteral("stop") << QString();
    QTest::newRow("code") << QStringLiteral("Here:\n\n```cpp\nint main() { return std::printf(\"%s\\n\", \"") + unbroken(160) +
                                 QStringLiteral("\"); }\n```\n\nDone.")
                          << QStringLiteral("stop") << QString();
  }
  void longLineDoesNotWidenTheChat() {
    QFETCH(QString, content);
    QFETCH(QString, finishReason);
    QFETCH(QString, note);
    ConversationStore store;
    QVERIFY(store.open(newDb()));
    const qint64 id = store.createConversation(QStringLiteral("long"), QString(), ChatController::defaultSampling());
    StoredMessage user{0, id, 0, QStringLiteral("user"), QStringLiteral("Show me.")};
    QVERIFY(store.addMessage(user));
    StoredMessage reply{0, id, 1, QStringLiteral("assistant"), content, true, 12, 30.0, 150, finishReason, note};
    QVERIFY(store.addMessage(reply));
    EngineClient client;
    ChatController chat(&store, &client);
    chat.loadConversations();
    ChatView view(&chat);
    view.resize(640, 520);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QCOMPARE(view.messageCount(), 2);
    QTRY_COMPARE_WITH_TIMEOUT(chatOverflow(view), QString(), 5000);
    // Narrower still: the column follows.
    view.resize(420, 520);
    QTRY_COMPARE_WITH_TIMEOUT(chatOverflow(view), QString(), 5000);
    // The figures are all there (nothing was dropped to make it fit).
    if (finishReason.startsWith(QLatin1String("error")))
      QVERIFY2(view.messageWidget(1)->statsText().endsWith(unbroken()), qPrintable(view.messageWidget(1)->statsText()));
  }

  // Item 1: a chat whose reply was cut off by a model switch (stored incomplete, "error: ...") is
  // drawn on the next start, not blank: every message's text has its height.
  void cutOffChatIsDrawnOnTheNextStart() {
    const QString db = newDb();
    {
      ConversationStore store;
      QVERIFY(store.open(db));
      const qint64 id = store.createConversation(QStringLiteral("switch"), QString(), ChatController::defaultSampling());
      QVERIFY(store.addMessage(StoredMessage{0, id, 0, QStringLiteral("user"), QStringLiteral("Tell me a story about a fox.")}));
      QVERIFY(store.addMessage(StoredMessage{0, id, 1, QStringLiteral("assistant"), QStringLiteral("Once upon a time a fox"), false,
                                             5, 20.0, 90, QStringLiteral("error: the model was switched")}));
    }
    AppSettings s;
    Workstation ws(s, /*persist=*/false);
    QVERIFY(ws.openStore(db));
    MainWindow window(&ws);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    ChatView* view = window.chatView();
    QCOMPARE(view->messageCount(), 2);
    for (int row = 0; row < 2; ++row) {
      QTextBrowser* b = view->messageWidget(row)->browser();
      QTRY_VERIFY2_WITH_TIMEOUT(b->isVisible() && b->height() >= b->fontMetrics().height() &&
                                    b->document()->size().height() <= b->viewport()->height() + 1,
                                qPrintable(QStringLiteral("row %1: %2 px for a %3 px document").arg(row).arg(b->height()).arg(b->document()->size().height())),
                                5000);
    }
    QCOMPARE(view->messageWidget(1)->renderedText(), QStringLiteral("Once upon a time a fox"));
    QTRY_COMPARE_WITH_TIMEOUT(chatOverflow(*view), QString(), 5000);
  }

  // Item 7: the hint follows the engine (the box is repainted when it changes, not when clicked),
  // and Enter pressed before ready is queued, said so, and sent when ready.
  void sendHintFollowsAndEnterIsQueued() {
    FakeEngine engine;
    ConversationStore store;
    QVERIFY(store.open(newDb()));
    EngineClient client;
    client.setEndpoint(QUrl(engine.url()), QString());
    ChatController chat(&store, &client);
    chat.loadConversations();
    ChatView view(&chat);
    view.resize(640, 480);
    view.setSendBlockedReason(QStringLiteral("engine starting…"));
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.focusInput();
    int paints = 0;
    struct PaintCounter : QObject {
      int* n;
      explicit PaintCounter(int* count) : n(count) {}
      bool eventFilter(QObject*, QEvent* e) override {
        if (e->type() == QEvent::Paint) ++*n;
        return false;
      }
    } counter(&paints);
    view.input()->viewport()->installEventFilter(&counter);
    QTRY_VERIFY(paints >= 0);
    paints = 0;
    // Ready: the hint on screen goes (a repaint of the box), with nothing else touched.
    view.setSendBlockedReason(QString());
    QTRY_VERIFY_WITH_TIMEOUT(paints > 0, 3000);
    QCOMPARE(view.input()->placeholderText(), QStringLiteral("Message…"));
    // Starting again (a restart); Enter now is queued, not dropped.
    view.setSendBlockedReason(QStringLiteral("engine starting…"));
    QTest::keyClicks(view.input(), QStringLiteral("Say hello"));
    QTest::keyClick(view.input(), Qt::Key_Return);
    QCOMPARE(chat.chatModel()->rowCount(), 0);
    QCOMPARE(view.queuedText(), QStringLiteral("Say hello"));
    QVERIFY(view.banner()->isVisible());
    QVERIFY2(view.banner()->text().startsWith(QStringLiteral("Queued")), qPrintable(view.banner()->text()));
    QSignalSpy finished(&chat, &ChatController::replyFinished);
    view.setSendBlockedReason(QString());
    QVERIFY(finished.wait(5000));
    QCOMPARE(chat.chatModel()->rowCount(), 2);
    QCOMPARE(chat.chatModel()->message(0).content, QStringLiteral("Say hello"));
    QCOMPARE(engine.chatBodies.last().value("messages").toArray().last()["content"].toString(), QStringLiteral("Say hello"));
    QVERIFY(view.banner()->isHidden());
    QCOMPARE(view.queuedText(), QString());
    // Esc takes a queued message back into the box.
    view.setSendBlockedReason(QStringLiteral("engine starting…"));
    QTest::keyClicks(view.input(), QStringLiteral("Again"));
    QTest::keyClick(view.input(), Qt::Key_Return);
    QCOMPARE(view.queuedText(), QStringLiteral("Again"));
    QTest::keyClick(view.input(), Qt::Key_Escape);
    QCOMPARE(view.input()->toPlainText(), QStringLiteral("Again"));
    QCOMPARE(view.queuedText(), QString());
  }

  // Item 8: an engine that dies says how (the signal), what was kept and where its output is, not
  // its last line.
  void crashMessageNamesTheCause() {
    const QString script = dir_.filePath(QStringLiteral("dies.sh"));
    {
      QFile f(script);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("#!/bin/sh\necho 'listening on 127.0.0.1:42597'\nkill -SEGV $$\n");
    }
    QFile::setPermissions(script, QFile::permissions(script) | QFileDevice::ExeOwner);
    EngineClient client;
    EngineProcess process(&client);
    EngineProcess::Options o;
    o.program = script;
    o.exitWithParent = false;
    process.setOptions(o);
    QSignalSpy crashed(&process, &EngineProcess::crashed);
    process.start();
    QVERIFY(crashed.wait(10000));
    process.stop();
    const QString reason = crashed.first().first().toString();
    QVERIFY2(reason.startsWith(QStringLiteral("the engine was killed by signal 11 (SIGSEGV)")), qPrintable(reason));
    QVERIFY2(reason.contains(QStringLiteral("partial reply are kept")), qPrintable(reason));
    QVERIFY2(!reason.contains(QStringLiteral("listening on")), qPrintable(reason));
    const int at = int(reason.indexOf(QStringLiteral("its output: ")));
    QVERIFY2(at > 0, qPrintable(reason));
    QFile log(reason.mid(at + 12));
    QVERIFY2(log.open(QIODevice::ReadOnly), qPrintable(log.fileName()));
    QVERIFY(log.readAll().contains("listening on 127.0.0.1:42597"));
  }

  // Item 3: at 1280x800 (and at scale 1.5, registered again), every button of the Placement tab
  // is at least as wide as its text needs.
  void placementButtonsFit() {
    AppSettings s;
    Workstation ws(s, /*persist=*/false);
    QVERIFY(ws.openStore(newDb()));
    MainWindow window(&ws);
    window.resize(1280, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    window.showTab(MainWindow::Tab::Placement);
    PlacementEditor* editor = window.findChild<PlacementEditor*>();
    QVERIFY(editor);
    QTRY_VERIFY(editor->isVisible());
    auto cut = [&] {
      QStringList out;
      for (QAbstractButton* b : editor->findChildren<QAbstractButton*>()) {
        if (!b->isVisibleTo(editor) || b->text().isEmpty()) continue;
        if (b->width() < b->sizeHint().width())
          out << QStringLiteral("%1: %2 < %3").arg(b->text()).arg(b->width()).arg(b->sizeHint().width());
      }
      return out.join(QStringLiteral("; "));
    };
    QTRY_COMPARE_WITH_TIMEOUT(cut(), QString(), 3000);
  }

  // Item 6: a new chat's sampling has LM Studio's repeat penalty (1.1), shown in the bar and sent.
  void repeatPenaltyDefaultsToLmStudios() {
    FakeEngine engine;
    ConversationStore store;
    QVERIFY(store.open(newDb()));
    EngineClient client;
    client.setEndpoint(QUrl(engine.url()), QString());
    ChatController chat(&store, &client);
    chat.loadConversations();
    ChatView view(&chat);
    auto* repeat = view.samplingBar()->findChild<QDoubleSpinBox*>(QStringLiteral("repeatPenalty"));
    QVERIFY(repeat);
    QCOMPARE(repeat->value(), 1.1);
    QSignalSpy finished(&chat, &ChatController::replyFinished);
    QVERIFY(chat.send(QStringLiteral("Say hello")));
    QVERIFY(finished.wait(5000));
    QCOMPARE(engine.chatBodies.last().value("repeat_penalty").toDouble(), 1.1);
  }

  // Item 5: the engine's status names each block's part sizes; the editor's model info keeps them,
  // so parts rows show non-zero bytes that sum to the block.
  void partsBytesFromTheStatus() {
    QJsonArray layerBytes, parts;
    for (int l = 0; l < 4; ++l) {
      layerBytes << double(2'200'000 + l);
      parts << QJsonObject{{"attention_bytes", 600'000.0}, {"ffn_bytes", double(1'600'000 + l)}, {"experts_bytes", 0.0}};
    }
    const QJsonObject status{{"model", QJsonObject{{"id", "m"}, {"n_layers", 4}, {"layer_bytes", layerBytes},
                                                   {"embedding_bytes", 1e6}, {"head_bytes", 1e6}, {"layer_parts", parts}}}};
    const ModelInfo info = ModelInfo::fromJson(MainWindow::modelInfoFromStatus(status));
    QCOMPARE(info.nLayers, 4);
    for (int l = 0; l < 4; ++l) {
      QVERIFY(info.attentionBytes(l) > 0);
      QVERIFY(info.ffnBytes(l) > 0);
      QCOMPARE(info.attentionBytes(l) + info.ffnBytes(l), info.layerBytes.at(l));
    }
  }

  // Item 2: at 1280x800, with cpu, gpu0, gpu1, host and a link row, every row of the timeline is
  // at least 18 px tall, without touching the dock.
  void profilerLanesReadableAtTheDefaultSize() {
    AppSettings s;
    Workstation ws(s, /*persist=*/false);
    QVERIFY(ws.openStore(newDb()));
    MainWindow window(&ws);
    window.resize(1280, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    window.profilerPanel()->appendBatch(replyBatch());
    TimelinePlot* plot = window.timelinePlot();
    QCOMPARE(plot->rowCount(), 5);
    QCOMPARE(plot->linkRowLabels().size(), 1);
    QTRY_VERIFY2_WITH_TIMEOUT((plot->replotNow(), plot->rowHeightPx() >= 18.0),
                              qPrintable(QStringLiteral("%1 px a row; the dock is %2 px high")
                                             .arg(plot->rowHeightPx()).arg(window.profilerDock()->height())),
                              5000);
    QVERIFY(plot->isVisible());
    // The chat keeps room too.
    QVERIFY2(window.chatView()->height() >= 250, qPrintable(QString::number(window.chatView()->height())));
  }

  // Item 2: the docks' sizes are kept from one run to the next.
  void dockSizeIsRemembered() {
    QSettings().remove(QStringLiteral("ui/windowState"));
    QSettings().remove(QStringLiteral("ui/windowGeometry"));
    const QString db = newDb();
    AppSettings s;
    int wanted = 0;
    {
      Workstation ws(s, /*persist=*/true);
      QVERIFY(ws.openStore(db));
      MainWindow window(&ws);
      window.resize(1280, 800);
      window.show();
      QVERIFY(QTest::qWaitForWindowExposed(&window));
      wanted = window.profilerDock()->height() + 90;
      window.resizeDocks({window.profilerDock()}, {wanted}, Qt::Vertical);
      QTRY_COMPARE(window.profilerDock()->height(), wanted);
      QVERIFY(window.close());
    }
    Workstation ws(s, /*persist=*/true);
    QVERIFY(ws.openStore(db));
    MainWindow window(&ws);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QTRY_COMPARE(window.profilerDock()->height(), wanted);
    QSettings().remove(QStringLiteral("ui/windowState"));
    QSettings().remove(QStringLiteral("ui/windowGeometry"));
  }

  // Item 2: Live mode after a reply: idle batches (now_ns moving on, no events) for longer than the
  // view's width and the model's window keep the reply's spans, and in view.
  void liveTimelineKeepsTheLastReply() {
    TimelineModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    TimelinePlot plot;
    plot.setModel(&model);
    plot.resize(900, 300);
    model.setWindowNs(30'000 * kMs);
    model.appendBatch(replyBatch());
    QCOMPARE(model.rowCount(), 50);
    for (qint64 t = 1200; t <= 60'000; t += 1000)  // a minute of quiet: one batch a second
      model.appendBatch(QJsonObject{{"events", QJsonArray{}}, {"tokens_per_s", 0.0}, {"now_ns", double(t * kMs)}});
    QCOMPARE(model.rowCount(), 50);
    QVERIFY(plot.followLatest());
    const auto [lo, hi] = plot.visibleRangeMs();
    const double lastEnd = double(model.latestEventNs() - model.originNs()) / 1e6;
    QCOMPARE(lastEnd, 100.0);  // 1000 + 9*10 + 10 ms, from an origin of 1000 ms
    QVERIFY2(lo < lastEnd && hi >= lastEnd, qPrintable(QStringLiteral("view [%1, %2] ms, last span ends at %3").arg(lo).arg(hi).arg(lastEnd)));
    QCOMPARE(plot.laneSpans(1).size(), 10);  // gpu0's computes, all drawn
    // A new reply later still: the old one goes once it is a window older than the new events.
    QJsonObject later = replyBatch();
    QJsonArray shifted;
    for (const QJsonValue& v : later.value("events").toArray()) {
      QJsonObject e = v.toObject();
      e["start_ns"] = e["start_ns"].toDouble() + double(59'000 * kMs);
      shifted << e;
    }
    later["events"] = shifted;
    model.appendBatch(later);
    QCOMPARE(model.rowCount(), 50);
  }
};

QTEST_MAIN(TestRoundThree)
#include "test_round_three.moc"
