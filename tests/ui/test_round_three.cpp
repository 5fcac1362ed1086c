// tests/ui/test_round_three.cpp — issue 49, the UI items, offscreen: long lines do not widen the chat
// (at scale 1.0 and, registered again in CMake, 1.5); a chat cut off by a model switch comes back
// drawn; the profiler's lanes are readable at the default size and the dock's size is kept; the
// Placement toolbar's labels fit; parts rows have real bytes; the send hint follows the engine
// and Enter before ready is queued; the crash message names the cause, what was kept and the log.
#include <QAbstractItemModelTester>
#include <QAbstractButton>
#include <QComboBox>
#include <QDockWidget>
#include <QHeaderView>
#include <QDragEnterEvent>
#include <QDragMoveEvent>
#include <QDropEvent>
#include <QMimeData>
#include <QPushButton>
#include <QLocale>
#include <QJsonArray>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QProcess>
#include <QRegularExpression>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSlider>
#include <QUndoStack>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTest>
#include <QTabWidget>
#include <QTextBrowser>
#include <QTextBlock>
#include <QClipboard>
#include <QApplication>
#include <QTreeView>
#include <QStyle>

#include <cmath>

#include <qcustomplot.h>

#include "fake_engine.h"
#include "ui/app/app_settings.h"
#include "ui/app/main_window.h"
#include "ui/app/workstation.h"
#include "ui/chat/chat_controller.h"
#include "ui/chat/chat_view.h"
#include "ui/chat/family_sampling.h"
#include "ui/chat/message_widget.h"
#include "ui/chat/sampling_bar.h"
#include "ui/models/model_files_model.h"
#include "ui/models/models_panel.h"
#include <QDoubleSpinBox>
#include "ui/client/engine_client.h"
#include "ui/client/engine_process.h"
#include "ui/placement/placement_editor.h"
#include "ui/placement/placement_estimate.h"
#include "ui/devices/device_delegate.h"
#include "ui/devices/memory_bar.h"
#include "ui/placement/placement_edit.h"
#include "ui/placement/placement_model.h"
#include "ui/placement/placement_view.h"
#include "ui/profiler/profiler_charts.h"
#include "ui/profiler/profiler_panel.h"
#include "ui/profiler/profiler_series.h"
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

  // Item 4: the predicted speed's figures agree. The case: a server decoding 4 sequences
  // at once, 0.79 ms per token for one reply, 2662.5 tok/s over all four; the tab said "2662.5
  // tok/s (0.79 ms/token)". Now the tok/s beside the ms/token is its inverse, and the total is
  // named; with simulated devices, this machine's figures follow, labelled.
  void predictedSpeedFiguresAgree_data() {
    QTest::addColumn<int>("nSeq");
    QTest::addColumn<double>("msPerToken");
    QTest::addColumn<double>("tokensPerS");
    QTest::addColumn<bool>("simulated");
    QTest::addColumn<QString>("total");  // expected in the label ("" for one sequence)
    QTest::newRow("one sequence, cpu") << 1 << 6.6264 << 1000.0 / 6.6264 << false << QString();
    QTest::newRow("four sequences") << 4 << 0.79 << 2662.5 << true << QStringLiteral("2662.5 tok/s over 4 sequences");
  }
  void predictedSpeedFiguresAgree() {
    QFETCH(int, nSeq);
    QFETCH(double, msPerToken);
    QFETCH(double, tokensPerS);
    QFETCH(bool, simulated);
    QFETCH(QString, total);
    PlacementEditor editor;
    editor.resize(1000, 600);
    editor.setDevices(QJsonArray{QJsonObject{{"id", "cpu"}, {"name", "CPU"}, {"kind", "cpu"}, {"simulated", false}, {"bytes_total", 8e9}},
                                 QJsonObject{{"id", "gpu0"}, {"name", "sim-gpu0"}, {"kind", "sim"}, {"simulated", true}, {"bytes_total", 1e9}}});
    QJsonArray layerBytes;
    for (int l = 0; l < 4; ++l) layerBytes << 2e6;
    editor.setModelInfo(QJsonObject{{"id", "m"}, {"n_layers", 4}, {"layer_bytes", layerBytes}, {"embedding_bytes", 1e6}, {"head_bytes", 1e6}});
    const QString dev = simulated ? QStringLiteral("gpu0") : QStringLiteral("cpu");
    editor.resetPlacement(QJsonObject{{"version", 1}, {"n_ctx", 512}, {"n_seq", nSeq}, {"max_batch", 256},
                                      {"embedding", QJsonObject{{"device", dev}}}, {"head", QJsonObject{{"device", dev}}},
                                      {"layers", QJsonArray{QJsonObject{{"layers", "0-3"}, {"device", dev}}}}});
    editor.show();
    QVERIFY(QTest::qWaitForWindowExposed(&editor));
    const QJsonObject cost{{"n_seq", nSeq}, {"decode_ms_per_token", msPerToken}, {"decode_tokens_per_s", tokensPerS},
                           {"prefill_tokens_per_s", 1900.0}, {"boundaries", 0}, {"transfer_bytes_per_token", 0}};
    QJsonObject answer{{"fits", true}, {"cost", cost}, {"error", QJsonValue()}, {"memory", QJsonObject{{"devices", QJsonArray{}}}}};
    // This machine: the simulated GPU bounded by a CPU that decodes at 16.61 ms per token.
    if (simulated)
      answer["cost_on_this_machine"] = QJsonObject{{"n_seq", nSeq}, {"decode_ms_per_token", 16.61},
                                                   {"decode_tokens_per_s", 4000.0 / (4 * 16.61)}, {"prefill_tokens_per_s", 300.0}};
    editor.model()->setEngineEstimate(editor.model()->placementJson(), answer);
    auto* label = editor.findChild<QLabel*>(QStringLiteral("prediction"));
    QVERIFY(label);
    const QString text = label->text();
    // Every "X tok/s decode (Y ms/token)" pair: X = 1000 / Y to the printed digits.
    static const QRegularExpression pair(QStringLiteral("([0-9.]+) tok/s decode \\(([0-9.]+) ms/token\\)"));
    int pairs = 0;
    for (auto it = pair.globalMatch(text); it.hasNext(); ++pairs) {
      const auto m = it.next();
      const double tps = m.captured(1).toDouble(), ms = m.captured(2).toDouble();
      QVERIFY2(qAbs(tps * ms / 1000.0 - 1.0) < 0.01, qPrintable(QStringLiteral("%1 tok/s vs %2 ms/token in '%3'").arg(tps).arg(ms).arg(text)));
    }
    QCOMPARE(pairs, simulated ? 2 : 1);
    if (!total.isEmpty()) QVERIFY2(text.contains(total), qPrintable(text));
    QCOMPARE(text.contains(QStringLiteral("declared hardware")), simulated);
    QCOMPARE(text.contains(QStringLiteral("this machine")), simulated);
  }

  // Item 9: the context length is on the toolbar: the engine's n_ctx shown, choices up to the
  // model's trained context; choosing one reloads the model with it and keeps it in the settings.
  void contextLengthOnTheToolbar() {
    FakeEngine engine;
    AppSettings s;
    Workstation ws(s, /*persist=*/false);
    QVERIFY(ws.openStore(newDb()));
    MainWindow window(&ws);
    window.resize(1280, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* ctx = window.findChild<QComboBox*>(QStringLiteral("contextLength"));
    QVERIFY(ctx);
    ws.attachRemote(engine.url(), QString());
    QTRY_COMPARE_WITH_TIMEOUT(ctx->currentData().toInt(), 512, 10000);
    QVERIFY(ctx->isEnabled());
    QStringList items;
    for (int i = 0; i < ctx->count(); ++i) items << ctx->itemText(i);
    QCOMPARE(items, (QStringList{QLocale().toString(512), QLocale().toString(1024), QLocale().toString(2048) + " (the model's maximum)"}));
    // Readable on the toolbar: its text is not cut.
    QVERIFY2(ctx->width() >= ctx->sizeHint().width(), qPrintable(QStringLiteral("%1 < %2").arg(ctx->width()).arg(ctx->sizeHint().width())));
    ws.settings().lastModel = QStringLiteral("/models/fake.gguf");
    const int loads = engine.loadRequests;
    // While it loads, a busy bar in the status bar (minor item: "loading…" had no progress bar).
    auto* bar = window.findChild<QProgressBar*>(QStringLiteral("loadProgress"));
    QVERIFY(bar);
    QVERIFY(!bar->isVisible());
    bool barWhileLoading = false;
    connect(&ws, &Workstation::stateChanged, this, [&](Workstation::EngineState st) {
      if (st == Workstation::EngineState::Loading) barWhileLoading = bar->isVisible();
    });
    ctx->setCurrentIndex(2);
    emit ctx->activated(2);
    QVERIFY(barWhileLoading);
    QTRY_COMPARE_WITH_TIMEOUT(engine.loadRequests, loads + 1, 5000);
    QCOMPARE(engine.loadBodies.last().value("n_ctx").toInt(), 2048);
    QCOMPARE(ws.settings().ctx, 2048);
    QTRY_COMPARE_WITH_TIMEOUT(ctx->currentData().toInt(), 2048, 10000);  // the engine's answer shown
  }

  // Item 9: GPU offload as a slider that writes the placement (llama.cpp's -ngl: the last N blocks
  // on the GPUs, split by capacity), undoable, following the placement shown.
  void gpuOffloadSliderWritesThePlacement_data() {
    QTest::addColumn<int>("n");
    QTest::addColumn<QStringList>("blocks");  // device of each block after the slider moved
    QTest::addColumn<QString>("embedding");
    QTest::addColumn<QString>("head");
    QTest::newRow("none") << 0 << QStringList{"cpu", "cpu", "cpu", "cpu", "cpu", "cpu"} << "cpu" << "cpu";
    QTest::newRow("half") << 3 << QStringList{"cpu", "cpu", "cpu", "gpu0", "gpu0", "gpu1"} << "cpu" << "cpu";
    QTest::newRow("all") << 6 << QStringList{"gpu0", "gpu0", "gpu0", "gpu0", "gpu1", "gpu1"} << "gpu0" << "gpu1";
  }
  void gpuOffloadSliderWritesThePlacement() {
    QFETCH(int, n);
    QFETCH(QStringList, blocks);
    QFETCH(QString, embedding);
    QFETCH(QString, head);
    PlacementEditor editor;
    QAbstractItemModelTester tester(editor.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    editor.resize(1000, 700);
    // gpu0 twice gpu1's memory: 2 of 3 offloaded blocks' share.
    editor.setDevices(QJsonArray{QJsonObject{{"id", "cpu"}, {"name", "CPU"}, {"kind", "cpu"}, {"bytes_total", 8e9}},
                                 QJsonObject{{"id", "gpu0"}, {"name", "sim-gpu0"}, {"kind", "sim"}, {"simulated", true}, {"bytes_total", 2e9}},
                                 QJsonObject{{"id", "gpu1"}, {"name", "sim-gpu1"}, {"kind", "sim"}, {"simulated", true}, {"bytes_total", 1e9}}});
    QJsonArray layerBytes;
    for (int l = 0; l < 6; ++l) layerBytes << 2e6;
    editor.setModelInfo(QJsonObject{{"id", "m"}, {"n_layers", 6}, {"layer_bytes", layerBytes}, {"embedding_bytes", 1e6}, {"head_bytes", 1e6}});
    // Start from a plan that put block 0 on gpu0 and the rest on the CPU (the fallback).
    editor.resetPlacement(QJsonObject{{"version", 1}, {"n_ctx", 512}, {"n_seq", 1}, {"max_batch", 256},
                                      {"embedding", QJsonObject{{"device", "cpu"}}}, {"head", QJsonObject{{"device", "cpu"}}},
                                      {"layers", QJsonArray{QJsonObject{{"layers", "0"}, {"device", "gpu0"}},
                                                            QJsonObject{{"layers", "1-5"}, {"device", "cpu"}}}}});
    editor.show();
    QVERIFY(QTest::qWaitForWindowExposed(&editor));
    auto* slider = editor.findChild<QSlider*>(QStringLiteral("gpuOffload"));
    auto* label = editor.findChild<QLabel*>(QStringLiteral("gpuOffloadLabel"));
    QVERIFY(slider && label);
    QVERIFY(slider->isEnabled());
    QCOMPARE(slider->maximum(), 6);
    QCOMPARE(slider->value(), 1);  // block 0 on gpu0
    QCOMPARE(label->text(), QStringLiteral("GPU offload: 1 / 6 blocks"));
    QVERIFY2(label->width() >= label->sizeHint().width(), qPrintable(QStringLiteral("label %1 < %2").arg(label->width()).arg(label->sizeHint().width())));
    const PlacementData before = editor.model()->placement();
    slider->setValue(n);
    const PlacementData& p = editor.model()->placement();
    QStringList got;
    for (const LayerTarget& t : p.layers) got << t.devices.join('+');
    QCOMPARE(got, blocks);
    QCOMPARE(p.embeddingDevice, embedding);
    QCOMPARE(p.headDevice, head);
    QCOMPARE(p.nCtx, 512);
    QCOMPARE(label->text(), QStringLiteral("GPU offload: %1 / 6 blocks").arg(n));
    editor.model()->undoStack()->undo();
    QVERIFY(editor.model()->placement() == before);
    QCOMPARE(slider->value(), 1);  // follows the placement shown
  }

  // Item 9: a plan that leaves blocks on the CPU although GPUs are present says so in the status bar.
  void cpuFallbackIsNoticed() {
    FakeEngine engine;
    engine.devices = QJsonArray{QJsonObject{{"id", "cpu"}, {"name", "CPU"}, {"kind", "cpu"}, {"bytes_total", 8e9}},
                                QJsonObject{{"id", "gpu0"}, {"name", "sim-gpu0 32 MiB"}, {"kind", "sim"}, {"simulated", true}, {"bytes_total", 33554432.0}},
                                QJsonObject{{"id", "gpu1"}, {"name", "sim-gpu1 32 MiB"}, {"kind", "sim"}, {"simulated", true}, {"bytes_total", 33554432.0}}};
    engine.statusPlacement = QJsonObject{{"version", 1}, {"n_ctx", 512}, {"n_seq", 1}, {"max_batch", 256},
                                         {"embedding", QJsonObject{{"device", "gpu0"}}}, {"head", QJsonObject{{"device", "cpu"}}},
                                         {"layers", QJsonArray{QJsonObject{{"layers", "0"}, {"device", "gpu0"}},
                                                               QJsonObject{{"layers", "1"}, {"device", "cpu"}}}}};
    AppSettings s;
    Workstation ws(s, /*persist=*/false);
    QVERIFY(ws.openStore(newDb()));
    MainWindow window(&ws);
    window.resize(1280, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* notice = window.findChild<QLabel*>(QStringLiteral("cpuFallbackNotice"));
    QVERIFY(notice);
    QVERIFY(!notice->isVisible());
    ws.attachRemote(engine.url(), QString());
    QTRY_VERIFY_WITH_TIMEOUT(notice->isVisible(), 10000);
    QCOMPARE(notice->text(), QStringLiteral("1 of 2 blocks run on the CPU and 1 on gpu0, gpu1. A smaller context or "
                                            "quantization may fit more on the GPUs (Placement tab, GPU offload)."));
    // Every block on the GPUs: the notice goes.
    engine.statusPlacement = QJsonObject{{"version", 1}, {"n_ctx", 512}, {"n_seq", 1}, {"max_batch", 256},
                                         {"embedding", QJsonObject{{"device", "gpu0"}}}, {"head", QJsonObject{{"device", "gpu1"}}},
                                         {"layers", QJsonArray{QJsonObject{{"layers", "0"}, {"device", "gpu0"}},
                                                               QJsonObject{{"layers", "1"}, {"device", "gpu1"}}}}};
    QTRY_VERIFY_WITH_TIMEOUT(!notice->isVisible(), 10000);
  }

  // Item 5: after a drop the selection goes with the tiles, so the vacated cell is drawn empty
  // (before, it stayed a solid highlight box), and Apply's notice says what moved with its size,
  // a part as a part (before: "1 layer(s) moved").
  void dropLeavesNoBoxAndSaysWhatMoved() {
    PlacementEditor editor;
    QAbstractItemModelTester tester(editor.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    editor.resize(1000, 700);
    editor.setDevices(QJsonArray{QJsonObject{{"id", "cpu"}, {"name", "CPU"}, {"kind", "cpu"}, {"bytes_total", 8e9}},
                                 QJsonObject{{"id", "gpu0"}, {"name", "sim-gpu0"}, {"kind", "sim"}, {"simulated", true}, {"bytes_total", 2e9}}});
    QJsonArray layerBytes, parts;
    for (int l = 0; l < 4; ++l) {
      layerBytes << 2'200'000.0;
      parts << QJsonObject{{"attention_bytes", 600'000.0}, {"ffn_bytes", 1'600'000.0}, {"experts_bytes", 0.0}};
    }
    editor.setModelInfo(QJsonObject{{"id", "m"}, {"n_layers", 4}, {"layer_bytes", layerBytes}, {"layer_parts", parts},
                                    {"embedding_bytes", 1e6}, {"head_bytes", 1e6}});
    editor.resetPlacement(QJsonObject{{"version", 1}, {"n_ctx", 512}, {"n_seq", 1}, {"max_batch", 256},
                                      {"embedding", QJsonObject{{"device", "cpu"}}}, {"head", QJsonObject{{"device", "cpu"}}},
                                      {"layers", QJsonArray{QJsonObject{{"layers", "0-3"}, {"device", "cpu"}}}}});
    editor.show();
    QVERIFY(QTest::qWaitForWindowExposed(&editor));
    PlacementView* view = editor.view();
    PlacementModel* model = editor.model();
    view->setFocus();
    const int cpu = model->laneOfDevice("cpu"), gpu0 = model->laneOfDevice("gpu0");
    const int row = 2;  // tile 2: blk 1
    const QModelIndex source = model->index(row, cpu);
    QVERIFY(model->data(source, PlacementModel::PlacedRole).toBool());
    view->selectionModel()->select(source, QItemSelectionModel::ClearAndSelect);
    view->selectionModel()->setCurrentIndex(source, QItemSelectionModel::NoUpdate);
    std::unique_ptr<QMimeData> mime(model->mimeData(view->selectionModel()->selectedIndexes()));
    QVERIFY(mime);
    const QPoint pos(view->columnViewportPosition(gpu0) + view->columnWidth(gpu0) / 2, view->rowViewportPosition(row) + 3);
    QDragEnterEvent enter(pos, Qt::MoveAction | Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(view->viewport(), &enter);
    QDragMoveEvent move(pos, Qt::MoveAction | Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(view->viewport(), &move);
    QDropEvent drop(QPointF(pos), Qt::MoveAction | Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(view->viewport(), &drop);
    QVERIFY(drop.isAccepted());
    QVERIFY(!model->data(source, PlacementModel::PlacedRole).toBool());
    QVERIFY(model->data(model->index(row, gpu0), PlacementModel::PlacedRole).toBool());
    // Pixels: the vacated cell looks like an empty cell of the same lane's column (blk 1's cpu cell
    // against the empty gpu0 cell of blk 0, both away from text), not like a highlight.
    const QImage shot = view->viewport()->grab().toImage();
    auto cellPixel = [&](int r, int c) {
      return shot.pixelColor(view->columnViewportPosition(c) + 3, view->rowViewportPosition(r) + view->rowHeight(r) / 2);
    };
    const QColor vacated = cellPixel(row, cpu), empty = cellPixel(1, gpu0);
    const QColor highlight = view->palette().color(QPalette::Active, QPalette::Highlight);
    QVERIFY2(vacated != highlight && vacated == empty,
             qPrintable(QStringLiteral("vacated cell %1, an empty cell %2, highlight %3").arg(vacated.name(), empty.name(), highlight.name())));
    QVERIFY(view->selectionModel()->isSelected(model->index(row, gpu0)));
    QCOMPARE(model->changeSummary(), QStringLiteral("blk 1 (%1) to gpu0").arg(formatBytes(2'200'000)));
    // A part: blk 2's FFN to gpu0 (undo the block move first).
    model->undoStack()->undo();
    PlacementEdit ffn;
    ffn.firstTile = ffn.lastTile = 3;
    ffn.lane.kind = Lane::Kind::Device;
    ffn.lane.target.devices = {QStringLiteral("gpu0")};
    ffn.part = BlockPart::Ffn;
    QString error;
    QVERIFY2(model->applyEdit(ffn, &error), qPrintable(error));
    QCOMPARE(model->changeSummary(), QStringLiteral("blk 2 FFN part (%1) to gpu0").arg(formatBytes(1'600'000)));
    // The engine's answer for it (it fits), so that Apply is allowed.
    model->setEngineEstimate(model->placementJson(), QJsonObject{{"fits", true}, {"error", QJsonValue()},
                                                                      {"memory", QJsonObject{{"devices", QJsonArray{}}}}});
    QVERIFY2(model->applyBlocker().isEmpty(), qPrintable(model->applyBlocker()));
    QSignalSpy apply(&editor, &PlacementEditor::applyRequested);
    editor.applyButton()->click();
    QCOMPARE(apply.count(), 1);
    QCOMPARE(apply.first().at(1).toString(), QStringLiteral("blk 2 FFN part (%1) to gpu0").arg(formatBytes(1'600'000)));
  }

  // Item 3: at 1280x800 (and, registered again, at scale 1.5) every lane header's text fits its
  // section ("pu1 1.0 GiB (simulated" before), and the Devices dock leaves the chat most of the width.
  void laneHeadersAndDevicesDockFit() {
    AppSettings s;
    Workstation ws(s, /*persist=*/false);
    QVERIFY(ws.openStore(newDb()));
    MainWindow window(&ws);
    window.resize(1280, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QJsonArray devices{QJsonObject{{"id", "cpu"}, {"name", "CPU"}, {"kind", "cpu"}, {"bytes_total", 68719476736.0}}};
    for (int g = 0; g < 2; ++g)
      devices << QJsonObject{{"id", QStringLiteral("gpu%1").arg(g)}, {"name", QStringLiteral("sim-gpu%1 1 GiB (simulated)").arg(g)},
                             {"kind", "sim"}, {"simulated", true}, {"bytes_total", 1073741824.0}};
    emit ws.devicesChanged(devices);
    window.showTab(MainWindow::Tab::Placement);
    PlacementEditor* editor = window.placementEditor();
    QJsonArray layerBytes;
    for (int l = 0; l < 30; ++l) layerBytes << 2e6;
    editor->setModelInfo(QJsonObject{{"id", "m"}, {"n_layers", 30}, {"layer_bytes", layerBytes}, {"embedding_bytes", 1e6}, {"head_bytes", 1e6}});
    QTRY_VERIFY(editor->isVisible());
    QTest::qWait(0);
    QHeaderView* header = editor->view()->horizontalHeader();
    QCOMPARE(header->count(), 4);  // model, cpu, gpu0, gpu1
    const QFontMetrics fm(header->font());
    QStringList cut;
    for (int c = 1; c < header->count(); ++c) {
      const QString text = editor->model()->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString();
      const QStringList lines = text.split('\n');
      for (const QString& line : lines)
        if (fm.horizontalAdvance(line) + 8 > header->sectionSize(c))
          cut << QStringLiteral("'%1' needs %2 px in %3").arg(line).arg(fm.horizontalAdvance(line) + 8).arg(header->sectionSize(c));
      if (header->height() < int(lines.size()) * fm.lineSpacing())
        cut << QStringLiteral("header %1 px high for %2 lines").arg(header->height()).arg(lines.size());
    }
    QVERIFY2(cut.isEmpty(), qPrintable(cut.join("; ")));
    QVERIFY(editor->model()->headerData(3, Qt::Horizontal, Qt::DisplayRole).toString().contains("simulated"));
    QVERIFY2(window.devicesDock()->width() <= window.width() / 4,
             qPrintable(QStringLiteral("devices dock %1 px of %2").arg(window.devicesDock()->width()).arg(window.width())));
  }

  // Item 6: new chats sample as the model's family suggests; min-p, repeat and top-k are in the
  // bar under the message box, readable.
  void familySamplingDefaults_data() {
    QTest::addColumn<QString>("architecture");
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("family");
    QTest::addColumn<double>("temperature");
    QTest::addColumn<int>("topK");
    QTest::addColumn<double>("repeat");  // 1.0: off (absent from the request)
    QTest::newRow("SmolLM2") << "llama" << "SmolLM2-360M-Instruct-Q8_0.gguf" << "smollm2" << 0.2 << 0 << 1.1;
    QTest::newRow("Llama 3.2") << "llama" << "Llama-3.2-3B-Instruct" << "llama" << 0.6 << 0 << 1.1;
    QTest::newRow("Gemma 3 270M") << "gemma3" << "gemma-3-270m-it" << "gemma3" << 1.0 << 64 << 1.0;
    QTest::newRow("Qwen3") << "qwen3" << "Qwen3-0.6B" << "qwen3" << 0.6 << 20 << 1.0;
    QTest::newRow("Qwen2.5") << "qwen2" << "Qwen2.5-0.5B-Instruct" << "qwen2" << 0.7 << 20 << 1.05;
    QTest::newRow("unknown") << "mamba" << "x" << "" << 0.7 << 0 << 1.1;
  }
  void familySamplingDefaults() {
    QFETCH(QString, architecture);
    QFETCH(QString, name);
    QFETCH(QString, family);
    QFETCH(double, temperature);
    QFETCH(int, topK);
    QFETCH(double, repeat);
    const FamilySampling f = familySampling(architecture, name);
    QCOMPARE(f.family, family);
    QCOMPARE(f.sampling.value("temperature").toDouble(), temperature);
    QCOMPARE(f.sampling.value("top_k").toInt(0), topK);
    QCOMPARE(f.sampling.value("repeat_penalty").toDouble(1.0), repeat);
    QCOMPARE(f.sampling.value("max_tokens").toInt(), 1024);
  }
  void newChatTakesTheFamilysSampling() {
    FakeEngine engine;  // a "llama" model
    AppSettings s;
    Workstation ws(s, /*persist=*/false);
    QVERIFY(ws.openStore(newDb()));
    MainWindow window(&ws);
    window.resize(1280, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* bar = window.chatView()->samplingBar();
    auto* temperature = bar->findChild<QDoubleSpinBox*>(QStringLiteral("temperature"));
    QVERIFY(temperature);
    QCOMPARE(temperature->value(), 0.7);  // no model yet
    ws.attachRemote(engine.url(), QString());
    QTRY_COMPARE_WITH_TIMEOUT(temperature->value(), 0.6, 10000);  // the draft chat, untouched, follows
    QCOMPARE(ws.chat()->sampling().value("top_p").toDouble(), 0.9);
    // min-p, repeat and top-k: shown with their labels, not cut.
    for (const char* n : {"minP", "repeatPenalty", "topK"}) {
      QWidget* w = bar->findChild<QWidget*>(QLatin1String(n));
      QVERIFY2(w && w->isVisible(), n);
      QVERIFY2(w->width() >= w->minimumSizeHint().width(), n);
    }
  }

  // Item 10: two windows on one database: what one stores appears in the other (the store's
  // data_version, polled), the open chat's new messages too; a chat deleted in one goes in the other.
  void twoWindowsShareChats() {
    const QString db = newDb();
    FakeEngine engine;
    EngineClient client;
    client.setEndpoint(QUrl(engine.url()), QString());
    ConversationStore storeA, storeB;
    QVERIFY(storeA.open(db));
    QVERIFY(storeB.open(db));
    ChatController a(&storeA, &client), b(&storeB, &client);
    QAbstractItemModelTester tester(b.conversationModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    a.loadConversations();
    b.loadConversations();
    b.setSyncIntervalMs(20);
    QCOMPARE(b.conversationModel()->rowCount(), 1);  // its own draft
    QVERIFY(!b.syncFromStore());                    // nothing new
    QSignalSpy finished(&a, &ChatController::replyFinished);
    QVERIFY(a.send(QStringLiteral("Explain KV caches in two lines.")));
    QVERIFY(finished.wait(5000));
    const qint64 id = a.currentConversation();
    QVERIFY(id > 0);
    // B's timer picks it up: the new chat is listed under B's draft... (the list is most recent first)
    auto listed = [&] {
      for (int r = 0; r < b.conversationModel()->rowCount(); ++r)
        if (b.conversationModel()->conversation(r).id == id) return true;
      return false;
    };
    QTRY_VERIFY_WITH_TIMEOUT(listed(), 5000);
    QCOMPARE(b.currentConversation(), qint64(0));  // B stays on its draft
    b.openConversation(id);
    QCOMPARE(b.chatModel()->rowCount(), 2);  // the question and the reply
    // A sends again into the same chat: B, showing it, gets the new messages.
    QVERIFY(a.send(QStringLiteral("And in one?")));
    QVERIFY(finished.wait(5000));
    QTRY_COMPARE_WITH_TIMEOUT(b.chatModel()->rowCount(), 4, 5000);
    // Deleted in A: gone from B, which opens another chat.
    a.deleteConversation(id);
    QTRY_VERIFY_WITH_TIMEOUT(!listed(), 5000);
    QVERIFY(b.currentConversation() != id);
  }

  // Minor items of the profiler: the Links chart switches units (0.00025 GB/s read as such), the
  // First-token chart's axis counts whole replies, layer colours keep away from the lost-device
  // magenta, and a lost device has no bubble figure.
  void profilerMinorItems() {
    QTabWidget tabs;
    ProfilerSeries series;
    ProfilerCharts charts(&series, &tabs);
    tabs.resize(800, 300);
    tabs.show();
    QVERIFY(QTest::qWaitForWindowExposed(&tabs));
    // 250 bytes over 1 ms between gpu0 and gpu1: 0.00025 GB/s.
    const QJsonArray lanes{QJsonObject{{"id", 0}, {"name", "gpu0"}, {"simulated", true}},
                           QJsonObject{{"id", 1}, {"name", "gpu1"}, {"simulated", true}}};
    series.appendBatch(QJsonObject{{"lanes", lanes}, {"events", QJsonArray{}}, {"now_ns", double(1000 * kMs)}});
    series.appendBatch(QJsonObject{{"lanes", lanes}, {"events", QJsonArray{traceEvent(0, "transfer", -1, 1000, 0, 250, 1)}},
                                   {"now_ns", double(1001 * kMs)}});
    for (int r = 0; r < 3; ++r) series.addReplyStats(150 + r, 20, 40);
    charts.refresh();
    QCOMPARE(charts.linkPlot()->yAxis->label(), QStringLiteral("KB/s"));
    QVERIFY(charts.linkPlot()->graphCount() >= 1);
    const auto& link = *charts.linkPlot()->graph(0)->data();
    QVERIFY(link.size() >= 1);
    QCOMPARE(qRound(link.at(link.size() - 1)->value), 250);
    QCOMPARE(ProfilerCharts::linkUnit(12.5).first, QStringLiteral("GB/s"));
    QCOMPARE(ProfilerCharts::linkUnit(0.02).first, QStringLiteral("MB/s"));
    tabs.setCurrentWidget(charts.ttftPlot());
    charts.ttftPlot()->replot();
    const QVector<double> ticks = charts.ttftPlot()->xAxis->tickVector();
    QVERIFY(!ticks.isEmpty());
    for (double t : ticks) QVERIFY2(t == std::floor(t), qPrintable(QStringLiteral("tick at %1").arg(t)));
    // Colours: every layer's hue at least 25 degrees from the re-planning magenta.
    TraceSpan replan;
    replan.kind = QStringLiteral("replan");
    const int magenta = TimelinePlot::spanColor(replan).hsvHue();
    for (int layer = 0; layer < 256; ++layer) {
      TraceSpan c;
      c.kind = QStringLiteral("compute");
      c.layer = layer;
      const int hue = TimelinePlot::spanColor(c).hsvHue();
      const int d = qMin(qAbs(hue - magenta), 360 - qAbs(hue - magenta));
      QVERIFY2(d >= 25, qPrintable(QStringLiteral("layer %1 hue %2, magenta %3").arg(layer).arg(hue).arg(magenta)));
    }
    // Bubbles: gpu1 lost (a re-plan record names it) has none; gpu0 keeps its figure.
    TimelineModel model;
    model.appendBatch(replyBatch());
    QVERIFY(model.bubblePercent().contains(2));
    model.appendReplan(QJsonObject{{"time_ns", double(1100 * kMs)}, {"ms", 5.0}, {"ok", true}, {"lost", QJsonArray{"gpu1"}},
                                   {"devices", QJsonArray{"cpu", "gpu0"}}});
    QVERIFY(!model.bubblePercent().contains(2));
    QVERIFY(model.bubblePercent().contains(1));
  }

  // Minor: TTFT is shown as soon as the reply's first token arrives, not "–" until it ends.
  void ttftWhileStreaming() {
    FakeEngine engine;
    AppSettings s;
    Workstation ws(s, /*persist=*/false);
    QVERIFY(ws.openStore(newDb()));
    MainWindow window(&ws);
    ws.attachRemote(engine.url(), QString());
    QString during;
    connect(ws.chat(), &ChatController::firstToken, this, [&] { during = window.profilerPanel()->summaryText(); });
    QSignalSpy finished(ws.chat(), &ChatController::replyFinished);
    QString storage;
    connect(ws.chat(), &ChatController::storageError, this, [&](const QString& m) { storage = m; });
    QVERIFY2(ws.chat()->send(QStringLiteral("hi")), qPrintable(storage));
    QVERIFY(finished.wait(5000));
    QVERIFY2(during.contains(QRegularExpression(QStringLiteral("TTFT [0-9]+ ms"))), qPrintable(during));
  }

  // Minor: `strata --help` prints the options on a machine without a display (it failed: the GUI
  // application wanted one before the parser ran).
  void helpWithoutDisplay() {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const char* v : {"QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY", "QT_SCALE_FACTOR"}) env.remove(QLatin1String(v));
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(STRATA_GUI_BINARY), {QStringLiteral("--help")});
    QVERIFY(p.waitForFinished(30000));
    const QString out = QString::fromUtf8(p.readAllStandardOutput());
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QVERIFY2(p.exitCode() == 0, qPrintable(QString::fromUtf8(p.readAllStandardError())));
    QVERIFY2(out.contains("--devices") && out.contains("--remote") && out.contains("--ctx"), qPrintable(out));
  }

  // Minor: the Models tab shows a model file's whole name at 1280x800 (it read "SmolL….gguf").
  void modelNamesAreNotElided() {
    AppSettings s;
    Workstation ws(s, /*persist=*/false);
    QVERIFY(ws.openStore(newDb()));
    MainWindow window(&ws);
    window.resize(1280, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    const QString name = QStringLiteral("SmolLM2-360M-Instruct-Q8_0.gguf");
    ws.modelFiles()->addFile(dir_.filePath(name), QStringLiteral("opened"));
    window.showTab(MainWindow::Tab::Models);
    auto* view = window.modelsPanel()->findChild<QTreeView*>(QStringLiteral("modelFiles"));
    QVERIFY(view);
    QTRY_VERIFY(view->isVisible());
    const int row = ws.modelFiles()->rowOfPath(dir_.filePath(name));
    QVERIFY(row >= 0);
    const QModelIndex at = ws.modelFiles()->index(row, 0);
    QCOMPARE(at.data().toString(), name);
    // What the delegate needs to draw the whole name (its size hint), and at least the text's advance.
    const int needed = qMax(view->sizeHintForIndex(at).width(), view->fontMetrics().horizontalAdvance(name));
    QVERIFY2(view->visualRect(at).width() >= needed,
             qPrintable(QStringLiteral("name column %1 px, the name needs %2").arg(view->visualRect(at).width()).arg(needed)));
  }

  // Minor: the copy-code link is words the font has (⧉ was a missing-glyph box) and says "copied"
  // under the block that was copied.
  void copyCodeLinkReadsAndConfirms() {
    MessageWidget w;
    w.resize(600, 400);
    StoredMessage m;
    m.role = QStringLiteral("assistant");
    m.content = QStringLiteral("Two:\n\n```\nls -l\n```\n\n```\npwd\n```\n");
    w.setMessage(m, false, true);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QTextBrowser* browser = w.browser();
    const QFontMetrics fm(browser->font());
    auto linkTexts = [&] {
      QStringList out;
      for (QTextBlock b = browser->document()->begin(); b.isValid(); b = b.next())
        for (auto it = b.begin(); !it.atEnd(); ++it)
          if (it.fragment().charFormat().isAnchor()) out << it.fragment().text();
      return out;
    };
    QCOMPARE(linkTexts(), (QStringList{"copy code", "copy code"}));
    for (const QString& t : linkTexts())
      for (const QChar c : t) QVERIFY2(fm.inFont(c), qPrintable(QStringLiteral("'%1' is not in the font").arg(c)));
    emit browser->anchorClicked(QUrl(QStringLiteral("strata-copy:1")));
    QCOMPARE(QApplication::clipboard()->text(), QStringLiteral("pwd"));
    QCOMPARE(linkTexts(), (QStringList{"copy code", "copied"}));
  }

  // Item 3: at 1280x800 (and, registered again, at scale 1.5, where only 4 block rows showed) the
  // Placement tab shows at least 8 block rows; the tab scrolls instead of squeezing them.
  void placementShowsEightBlockRows() {
    AppSettings s;
    Workstation ws(s, /*persist=*/false);
    QVERIFY(ws.openStore(newDb()));
    MainWindow window(&ws);
    window.resize(1280, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    emit ws.devicesChanged(QJsonArray{QJsonObject{{"id", "cpu"}, {"name", "CPU"}, {"kind", "cpu"}, {"bytes_total", 8e9}},
                                      QJsonObject{{"id", "gpu0"}, {"name", "sim-gpu0"}, {"kind", "sim"}, {"simulated", true}, {"bytes_total", 1e9}}});
    window.showTab(MainWindow::Tab::Placement);
    PlacementEditor* editor = window.placementEditor();
    QJsonArray layerBytes;
    for (int l = 0; l < 30; ++l) layerBytes << 2e6;
    editor->setModelInfo(QJsonObject{{"id", "m"}, {"n_layers", 30}, {"layer_bytes", layerBytes}, {"embedding_bytes", 1e6}, {"head_bytes", 1e6}});
    editor->resetPlacement(QJsonObject{{"version", 1}, {"n_ctx", 512}, {"n_seq", 1}, {"max_batch", 256},
                                       {"embedding", QJsonObject{{"device", "cpu"}}}, {"head", QJsonObject{{"device", "cpu"}}},
                                       {"layers", QJsonArray{QJsonObject{{"layers", "0-29"}, {"device", "cpu"}}}}});
    QTRY_VERIFY(editor->isVisible());
    QTest::qWait(0);
    PlacementView* view = editor->view();
    const int rows = view->viewport()->height() / view->rowHeight(1);
    QVERIFY2(rows >= 8, qPrintable(QStringLiteral("%1 block rows in a %2 px viewport").arg(rows).arg(view->viewport()->height())));
    // Every control below the view is reachable: the editor is in a scroll area that can show it.
    auto* scroll = window.findChild<QScrollArea*>(QStringLiteral("placementScroll"));
    QVERIFY(scroll);
    QCOMPARE(scroll->widget(), static_cast<QWidget*>(editor));
    QVERIFY(editor->height() >= editor->minimumSizeHint().height());
  }

  // Minor (seen in the screenshots): a simulated device's row read "gpu0  sim-gpu0 32 Mi…" in the
  // Devices dock; its name only repeated the id, the size and "simulated" (the tag says it).
  void deviceRowTitleFitsTheDock_data() {
    QTest::addColumn<QString>("id");
    QTest::addColumn<QString>("name");
    QTest::addColumn<bool>("simulated");
    QTest::addColumn<QString>("title");
    QTest::newRow("sim") << "gpu0" << "sim-gpu0 32 MiB (simulated)" << true << QStringLiteral("gpu0  %1").arg(formatBytes(32ull << 20));
    QTest::newRow("sim, labelled") << "gpu1" << "RTX 3060 — sim-gpu1 12 GiB (simulated)" << true
                                   << QStringLiteral("gpu1  RTX 3060 — sim-gpu1 12 GiB  %1").arg(formatBytes(32ull << 20));
    QTest::newRow("cpu") << "cpu" << "CPU (2 threads)" << false << QStringLiteral("cpu  CPU (2 threads)  %1").arg(formatBytes(32ull << 20));
  }
  void deviceRowTitleFitsTheDock() {
    QFETCH(QString, id);
    QFETCH(QString, name);
    QFETCH(bool, simulated);
    QFETCH(QString, title);
    QCOMPARE(DeviceDelegate::title(id, name, 32ull << 20, simulated), title);
  }

  // Item 2 at scale 1.5 (seen in the screenshots): a dock too short for the lanes and the legend drew
  // the legend over the last lane. The legend now goes instead, and comes back when there is room.
  void timelineLegendNeverCoversALane() {
    TimelineModel model;
    TimelinePlot plot;
    plot.setModel(&model);
    model.appendBatch(replyBatch());
    plot.resize(700, 400);
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    auto overlap = [&] {
      return plot.legend()->isVisible() && plot.legend()->geometry().intersects(plot.plot()->geometry());
    };
    QVERIFY(plot.legend()->isVisible());
    QVERIFY(!overlap());
    plot.resize(700, plot.plot()->minimumHeight() + 4);  // room for the lanes, not for the legend too
    QTRY_VERIFY(!plot.legend()->isVisible());
    QVERIFY(plot.plot()->height() >= plot.plot()->minimumHeight());
    plot.resize(700, 400);
    QTRY_VERIFY(plot.legend()->isVisible());
    QVERIFY(!overlap());
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
