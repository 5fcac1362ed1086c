// tests/ui/test_first_use.cpp — the workstation as a new user meets it (issue 14): devices too small
// for the model give an explanation with ways out instead of a restart loop, and no sending; an
// engine that fails twice the same way is not restarted again; command-line options are not saved;
// the placement editor opens on the engine's placement, context and devices and follows changes;
// long text does not squeeze the chat list; the message box keeps the keyboard (start, New chat,
// end of a reply, Stop); the window fits the screen and is remembered, the current chat highlighted.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSpinBox>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include <QAbstractSpinBox>
#include <QApplication>
#include <QDoubleSpinBox>
#include <QClipboard>
#include <QLineEdit>
#include <QListView>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextLayout>
#include <QTreeView>
#include <QMenuBar>
#include <QMessageBox>
#include <QTimer>
#include <QScreen>
#include <QStatusBar>

#include "fake_engine.h"
#include "ui/app/app_settings.h"
#include "ui/app/settings_dialog.h"
#include "ui/app/engine_problem_panel.h"
#include "ui/theme/contrast.h"
#include "ui/app/main_window.h"
#include "ui/app/workstation.h"
#include "ui/chat/chat_controller.h"
#include "ui/chat/chat_model.h"
#include "ui/chat/chat_view.h"
#include "ui/chat/conversation_export.h"
#include "ui/chat/code_highlighter.h"
#include "ui/chat/message_widget.h"
#include "ui/chat/sampling_bar.h"
#include "ui/models/model_files_model.h"
#include "ui/models/models_panel.h"
#include "ui/chat/conversation_list_model.h"
#include "ui/storage/conversation_store.h"
#include "ui/client/engine_client.h"
#include "ui/client/engine_process.h"
#include "ui/placement/placement_data.h"
#include "ui/placement/placement_editor.h"
#include "ui/placement/placement_model.h"

namespace {
QString engineBinary() { return qEnvironmentVariable("STRATA_ENGINE", QStringLiteral(STRATA_ENGINE_BINARY)); }
QString modelPath() { return QStringLiteral(STRATA_SHARED_MODELS_DIR "/stories260K.gguf"); }
}  // namespace

class TestFirstUse : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  int runs_ = 0;

  struct App {
    std::unique_ptr<Workstation> ws;
    std::unique_ptr<MainWindow> window;
  };
  App startApp(const AppSettings& s) {
    App app;
    app.ws = std::make_unique<Workstation>(s, /*persist=*/false);
    app.ws->openStore(dir_.filePath(QStringLiteral("run%1.sqlite3").arg(++runs_)));
    app.window = std::make_unique<MainWindow>(app.ws.get());
    app.window->show();
    app.ws->start();
    return app;
  }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // QSettings go to a test location
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir_.filePath(QStringLiteral("settings")));
  }

  // Item 1: `--devices cpu,sim:gpu0:64MiB,...` with a model that fits nowhere. The engine stays up
  // with no model and says why; the window shows that with ways out; Send is off; no restarts.
  void tooSmallDevicesAreExplainedNotRestarted() {
    if (!QFile::exists(modelPath())) QFAIL("stories260K.gguf is not in the shared models folder (setup puts it beside the checkout)");
    AppSettings s;
    s.enginePath = engineBinary();
    s.lastModel = modelPath();
    s.threads = 1;
    s.devices = QStringLiteral("sim:gpu0:64KiB,sim:gpu1:64KiB");
    App app = startApp(s);
    Workstation* ws = app.ws.get();
    QTRY_VERIFY_WITH_TIMEOUT(!ws->modelProblem().isEmpty(), 60000);
    QCOMPARE(ws->state(), Workstation::EngineState::NoModel);
    QVERIFY2(ws->modelProblem().startsWith(QStringLiteral("stories260K is not loaded: ")), qPrintable(ws->modelProblem()));
    QVERIFY2(ws->modelProblem().contains(QStringLiteral("gpu0")), qPrintable(ws->modelProblem()));

    EngineProblemPanel* panel = app.window->problemPanel();
    QVERIFY(panel->isVisible());
    QCOMPARE(panel->textLabel()->text(), ws->modelProblem());
    QVERIFY(panel->textLabel()->wordWrap());

    ChatView* chat = app.window->chatView();
    QVERIFY(!chat->sendButton()->isEnabled());
    QVERIFY(!chat->sendBlockedReason().isEmpty());
    chat->input()->setFocus();
    QTest::keyClicks(chat->input(), QStringLiteral("hello"));
    QTest::keyClick(chat->input(), Qt::Key_Return);
    QCOMPARE(ws->chat()->chatModel()->rowCount(), 0);  // nothing sent, no empty error replies stored

    // Two more status polls later: still the first engine.
    QSignalSpy polled(ws, &Workstation::statusChanged);
    QTRY_VERIFY_WITH_TIMEOUT(polled.count() >= 2, 20000);
    QCOMPARE(ws->process()->launchCount(), 1);
    QCOMPARE(ws->process()->restartCount(), 0);
    QCOMPARE(ws->modelProblem(), panel->textLabel()->text());

    // A way out: the placement editor in planning mode.
    panel->planButton()->click();
    QCOMPARE(app.window->tabs()->currentIndex(), int(MainWindow::Tab::Placement));
    QWidget* planning = app.window->findChild<QWidget*>(QStringLiteral("planningBox"));
    QVERIFY(planning && planning->isVisible());
  }

  // Item 1: an engine that fails the same way twice in a row is left stopped, with the reason shown.
  void secondIdenticalFailureStopsRestarts() {
    AppSettings s;
    s.enginePath = QStringLiteral("/bin/false");  // exits at once, always the same way
    App app = startApp(s);
    EngineProcess* proc = app.ws->process();
    QVERIFY(proc);
    QSignalSpy gaveUp(proc, &EngineProcess::gaveUp);
    QTRY_COMPARE_WITH_TIMEOUT(gaveUp.count(), 1, 30000);
    QCOMPARE(proc->state(), EngineProcess::State::Stopped);
    QCOMPARE(proc->launchCount(), 2);
    QCOMPARE(app.ws->state(), Workstation::EngineState::Stopped);
    QVERIFY(app.ws->modelProblem().contains(QStringLiteral("the engine exited with code 1")));
    QVERIFY(app.window->problemPanel()->isVisible());
    QVERIFY(!app.window->chatView()->sendButton()->isEnabled());
    // Try again: a deliberate restart is a new first try.
    app.window->problemPanel()->retryButton()->click();
    QTRY_COMPARE_WITH_TIMEOUT(gaveUp.count(), 2, 30000);
    QCOMPARE(proc->launchCount(), 4);
  }

  // Item 3: the editor shows what the engine has (GET placement and devices), not a default, and
  // follows a change made by another client.
  void placementEditorShowsTheEnginesPlacement() {
    if (!QFile::exists(modelPath())) QFAIL("stories260K.gguf is not in the shared models folder (setup puts it beside the checkout)");
    AppSettings s;
    s.enginePath = engineBinary();
    s.lastModel = modelPath();
    s.threads = 1;
    s.ctx = 256;
    s.devices = QStringLiteral("cpu,sim:gpu0:1GiB,sim:gpu1:1GiB");
    App app = startApp(s);
    Workstation* ws = app.ws.get();
    QTRY_COMPARE_WITH_TIMEOUT(ws->state(), Workstation::EngineState::Ready, 60000);
    app.window->showTab(MainWindow::Tab::Placement);

    EngineClient other;  // another client of the same engine
    other.setEndpoint(ws->client()->baseUrl(), ws->client()->apiKey());
    QSignalSpy got(&other, &EngineClient::placementReceived);
    other.fetchPlacement();
    QVERIFY(got.wait(20000));
    const QJsonObject engineJson = got.takeFirst().first().toJsonObject();
    const int nLayers = ws->lastStatus().value("model").toObject().value("n_layers").toInt();
    QString error;
    const strata::ui::PlacementData engine = strata::ui::PlacementData::fromJson(engineJson, nLayers, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(engine.nCtx, 256);

    strata::ui::PlacementModel* m = app.window->placementEditor()->model();
    QTRY_COMPARE_WITH_TIMEOUT(m->devices().size(), 3, 20000);
    QTRY_VERIFY_WITH_TIMEOUT(m->placement() == engine, 20000);
    QCOMPARE(m->placement().nCtx, 256);
    QCOMPARE(m->changedTileCount(), 0);
    // The figures are the engine's answer to the editor's estimate request: they come a moment later.
    QTRY_COMPARE_WITH_TIMEOUT(m->applyBlocker(), QStringLiteral("nothing moved"), 20000);
    QVERIFY(m->estimateCurrent());
    QVERIFY(m->fits());
    QCOMPARE(m->memoryOf(QStringLiteral("gpu0")).capacity, 1ull << 30);
    QCOMPARE(app.window->placementEditor()->applyButton()->text(), QStringLiteral("Apply"));
    for (QLabel* l : app.window->placementEditor()->findChildren<QLabel*>())
      QVERIFY2(!l->text().contains(QStringLiteral("which is not among")), qPrintable(l->text()));

    // Another client moves every block to the CPU: the editor follows.
    strata::ui::PlacementData moved = engine;
    for (auto& l : moved.layers) l = strata::ui::LayerTarget{{QStringLiteral("cpu")}, {}, {}};
    moved.embeddingDevice = moved.headDevice = QStringLiteral("cpu");
    QSignalSpy applied(&other, &EngineClient::placementApplied);
    QSignalSpy failed(&other, &EngineClient::requestFailed);
    other.applyPlacement(moved.toJson());
    QVERIFY2(applied.wait(30000), failed.isEmpty() ? "" : qPrintable(failed.first().value(1).toString()));
    QTRY_VERIFY_WITH_TIMEOUT(m->placement() == moved, 20000);
    QCOMPARE(m->changedTileCount(), 0);
    // ... and shows the engine's figures for it: everything on the CPU.
    QTRY_VERIFY_WITH_TIMEOUT(m->estimateCurrent(), 20000);
    QCOMPARE(m->memoryOf(QStringLiteral("gpu0")).total, 0ull);
    QVERIFY(m->memoryOf(QStringLiteral("cpu")).weights > 0);
  }

  // Items 5 and 11: the message box has the keyboard at start, after a reply, after Stop (not the
  // temperature box), and after New chat.
  void messageBoxKeepsTheKeyboard() {
    FakeEngine engine;
    engine.pieceIntervalMs = 20;
    AppSettings s;
    s.engineMode = AppSettings::EngineMode::Remote;
    s.remoteUrl = engine.url();
    App app = startApp(s);
    app.window->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(app.window.get()));
    ChatView* chat = app.window->chatView();
    QTRY_COMPARE(QApplication::focusWidget(), static_cast<QWidget*>(chat->input()));  // at start
    QTRY_COMPARE_WITH_TIMEOUT(app.ws->state(), Workstation::EngineState::Ready, 10000);

    QSignalSpy finished(app.ws->chat(), &ChatController::replyFinished);
    QTest::keyClicks(QApplication::focusWidget(), QStringLiteral("Hi"));
    QTest::keyClick(QApplication::focusWidget(), Qt::Key_Return);
    QVERIFY(finished.wait(10000));
    QCOMPARE(QApplication::focusWidget(), static_cast<QWidget*>(chat->input()));  // after a reply

    engine.pieceIntervalMs = 300;
    QTest::keyClicks(chat->input(), QStringLiteral("Again"));
    QTest::keyClick(chat->input(), Qt::Key_Return);
    QTRY_VERIFY(app.ws->chat()->isStreaming());
    auto* temperature = chat->findChild<QDoubleSpinBox*>(QStringLiteral("temperature"));
    QVERIFY(temperature);
    const double before = temperature->value();
    QTest::mouseClick(chat->stopButton(), Qt::LeftButton);  // takes the focus, then is disabled
    QTRY_VERIFY(!app.ws->chat()->isStreaming());
    QCOMPARE(QApplication::focusWidget(), static_cast<QWidget*>(chat->input()));  // after Stop
    QTest::keyClick(QApplication::focusWidget(), Qt::Key_Up);
    QTest::keyClicks(QApplication::focusWidget(), QStringLiteral("9"));
    QCOMPARE(temperature->value(), before);
    QVERIFY(chat->input()->toPlainText().endsWith(QLatin1Char('9')));

    app.window->conversationList()->setFocus();
    app.ws->chat()->newConversation();  // File ▸ New chat
    QCOMPARE(QApplication::focusWidget(), static_cast<QWidget*>(chat->input()));  // after New chat
  }

  // Item 7: a long explanation in the Placement tab wraps; the chat list keeps its width.
  void longTextDoesNotSqueezeTheChatList() {
    AppSettings s;
    Workstation ws(s, /*persist=*/false);
    MainWindow window(&ws);
    window.resize(1100, 760);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    const int before = window.conversationList()->width();
    QVERIFY2(before >= 170, qPrintable(QString::number(before)));
    QString longLine;
    for (int i = 0; i < 12; ++i) longLine += QStringLiteral("gpu%1: layers 0-17 + embedding, 22.6 GiB of 24.0 GiB, 3.21 ms per token; ").arg(i);
    window.placementEditor()->showError(longLine);
    window.showTab(MainWindow::Tab::Placement);
    QCoreApplication::processEvents();
    QTRY_COMPARE(window.conversationList()->width(), before);
    QVERIFY(window.width() <= 1100);
    window.showTab(MainWindow::Tab::Chat);
    QCoreApplication::processEvents();
    QCOMPARE(window.conversationList()->width(), before);
  }

  // Item 9: the window fits the screen whatever it was told, and its size is remembered.
  void windowFitsTheScreenAndIsRemembered() {
    QSettings().remove(QStringLiteral("ui/windowGeometry"));
    const QRect avail = QGuiApplication::primaryScreen()->availableGeometry();
    AppSettings s;
    QSize wanted;
    {
      Workstation ws(s, /*persist=*/true);
      MainWindow window(&ws);
      window.show();
      QVERIFY(QTest::qWaitForWindowExposed(&window));
      QVERIFY2(window.frameGeometry().width() <= avail.width() && window.frameGeometry().height() <= avail.height(),
               qPrintable(QStringLiteral("%1x%2 on %3x%4").arg(window.frameGeometry().width()).arg(window.frameGeometry().height())
                              .arg(avail.width()).arg(avail.height())));
      QVERIFY(avail.contains(window.frameGeometry()));
      window.resize(window.size() - QSize(37, 23));  // the user makes it a little smaller
      QCoreApplication::processEvents();
      wanted = window.size();
      window.close();
    }
    QSize remembered;
    {
      Workstation ws(s, /*persist=*/true);
      MainWindow window(&ws);
      window.show();
      QVERIFY(QTest::qWaitForWindowExposed(&window));
      remembered = window.size();
      QCOMPARE(remembered, wanted);
    }
    QSettings().remove(QStringLiteral("ui/windowGeometry"));
  }

  // Item 9: the current chat is highlighted at start; "loading …" goes when the model is ready.
  void currentChatHighlightedAndLoadingNoticeCleared() {
    FakeEngine engine;
    const QString db = dir_.filePath(QStringLiteral("highlight.sqlite3"));
    {
      ConversationStore store;
      QVERIFY(store.open(db));
      store.createConversation(QStringLiteral("older"), {}, {});
      store.createConversation(QStringLiteral("newer"), {}, {});
    }
    AppSettings s;
    s.engineMode = AppSettings::EngineMode::Remote;
    s.remoteUrl = engine.url();
    Workstation ws(s, /*persist=*/false);
    ws.openStore(db);
    MainWindow window(&ws);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    const qint64 current = ws.chat()->currentConversation();
    QVERIFY(current != 0);
    const QModelIndex index = window.conversationList()->currentIndex();
    QVERIFY(index.isValid());
    QCOMPARE(index.data(ConversationListModel::IdRole).toLongLong(), current);
    QVERIFY(window.conversationList()->selectionModel()->isSelected(index));

    // New chat: a draft row at the top, highlighted; another chat opened: the empty draft goes.
    ws.chat()->newConversation();
    QCOMPARE(ws.chat()->conversationModel()->rowCount(), 3);
    const QModelIndex draft = window.conversationList()->currentIndex();
    QCOMPARE(draft.row(), 0);
    QCOMPARE(draft.data(ConversationListModel::IdRole).toLongLong(), 0);
    QCOMPARE(draft.data(ConversationListModel::TitleRole).toString(), QStringLiteral("New chat"));
    QVERIFY(window.conversationList()->selectionModel()->isSelected(draft));
    ws.chat()->openConversation(current);
    QCOMPARE(ws.chat()->conversationModel()->rowCount(), 2);
    QCOMPARE(window.conversationList()->currentIndex().data(ConversationListModel::IdRole).toLongLong(), current);

    ws.start();
    QTRY_COMPARE_WITH_TIMEOUT(ws.state(), Workstation::EngineState::Ready, 10000);
    const QString path = dir_.filePath(QStringLiteral("fake.gguf"));
    QFile(path).open(QIODevice::WriteOnly);
    ws.loadModel(path);
    QVERIFY(window.statusBar()->currentMessage().startsWith(QStringLiteral("loading")));
    QTRY_COMPARE_WITH_TIMEOUT(ws.state(), Workstation::EngineState::Ready, 10000);
    QVERIFY2(!window.statusBar()->currentMessage().startsWith(QStringLiteral("loading")),
             qPrintable(window.statusBar()->currentMessage()));
  }

  // Item 10: min-p, repeat penalty and seed in the sampling bar, as the engine's request fields.
  void samplingBarHasMinPRepeatPenaltyAndSeed_data() {
    QTest::addColumn<QString>("box");
    QTest::addColumn<double>("value");
    QTest::addColumn<QString>("field");
    QTest::newRow("min-p") << QStringLiteral("minP") << 0.05 << QStringLiteral("min_p");
    QTest::newRow("repeat penalty") << QStringLiteral("repeatPenalty") << 1.15 << QStringLiteral("repeat_penalty");
    QTest::newRow("seed") << QStringLiteral("seed") << 42.0 << QStringLiteral("seed");
  }
  void samplingBarHasMinPRepeatPenaltyAndSeed() {
    QFETCH(QString, box);
    QFETCH(double, value);
    QFETCH(QString, field);
    SamplingBar bar;
    bar.setSampling(QJsonObject{{"temperature", 0.7}, {"max_tokens", 64}});
    QVERIFY(!bar.sampling().contains(field));  // off by default: the engine's default applies
    QSignalSpy edited(&bar, &SamplingBar::samplingEdited);
    QAbstractSpinBox* w = bar.findChild<QAbstractSpinBox*>(box);
    QVERIFY(w);
    if (auto* d = qobject_cast<QDoubleSpinBox*>(w)) d->setValue(value);
    else qobject_cast<QSpinBox*>(w)->setValue(int(value));
    QCOMPARE(edited.count(), 1);
    const QJsonObject out = edited.first().first().toJsonObject();
    QCOMPARE(out.value(field).toDouble(), value);
    QCOMPARE(out.value("max_tokens").toInt(), 64);
    SamplingBar other;
    other.setSampling(out);  // and back: the conversation's settings show
    QCOMPARE(other.sampling().value(field).toDouble(), value);
  }

  // Item 10: a conversation exported as Markdown and as JSON.
  void exportConversationAsMarkdownAndJson() {
    StoredConversation c;
    c.title = QStringLiteral("Dragons");
    c.systemPrompt = QStringLiteral("Be brief.");
    c.sampling = QJsonObject{{"temperature", 0.2}};
    StoredMessage q;
    q.role = QStringLiteral("user");
    q.content = QStringLiteral("Tell me a story.");
    StoredMessage a;
    a.role = QStringLiteral("assistant");
    a.content = QStringLiteral("Once upon a time.\n\n```\ncode\n```");
    a.tokens = 12;
    a.tokensPerSecond = 40;
    a.finishReason = QStringLiteral("stop");
    QCOMPARE(conversationMarkdown(c, {q, a}),
             QStringLiteral("# Dragons\n\n**System:** Be brief.\n\n## You\n\nTell me a story.\n\n## Strata\n\n"
                            "Once upon a time.\n\n```\ncode\n```\n\n*12 tokens · 40.0 tok/s*\n"));
    const QJsonObject json = conversationJson(c, {q, a});
    QCOMPARE(json.value("title").toString(), c.title);
    QCOMPARE(json.value("system_prompt").toString(), c.systemPrompt);
    QCOMPARE(json.value("sampling").toObject(), c.sampling);
    const QJsonArray messages = json.value("messages").toArray();
    QCOMPARE(messages.size(), 2);
    QCOMPARE(messages[0].toObject(), (QJsonObject{{"role", "user"}, {"content", q.content}, {"complete", true}}));
    QCOMPARE(messages[1].toObject().value("tokens").toInt(), 12);
    QCOMPARE(messages[1].toObject().value("finish_reason").toString(), QStringLiteral("stop"));
    const QString md = dir_.filePath(QStringLiteral("chat.md")), js = dir_.filePath(QStringLiteral("chat.json"));
    QVERIFY(exportConversation(md, c, {q, a}));
    QVERIFY(exportConversation(js, c, {q, a}));
    QFile fm(md), fj(js);
    QVERIFY(fm.open(QIODevice::ReadOnly) && fj.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(fm.readAll()), conversationMarkdown(c, {q, a}));
    QCOMPARE(QJsonDocument::fromJson(fj.readAll()).object(), json);
  }

  // Item 10: deleting a chat asks first; Cancel keeps it.
  void deletingAChatAsksFirst_data() {
    QTest::addColumn<bool>("confirm");
    QTest::newRow("cancel") << false;
    QTest::newRow("yes") << true;
  }
  void deletingAChatAsksFirst() {
    QFETCH(bool, confirm);
    const QString db = dir_.filePath(QStringLiteral("delete%1.sqlite3").arg(confirm));
    {
      ConversationStore store;
      QVERIFY(store.open(db));
      store.createConversation(QStringLiteral("keep me?"), {}, {});
    }
    AppSettings s;
    Workstation ws(s, /*persist=*/false);
    ws.openStore(db);
    MainWindow window(&ws);
    window.show();
    const qint64 id = ws.chat()->currentConversation();
    QVERIFY(id != 0);
    QAction* del = nullptr;
    for (QAction* a : window.menuBar()->findChildren<QAction*>())
      if (a->text() == QStringLiteral("&Delete chat…")) del = a;
    QVERIFY(del);
    QString asked;
    QTimer::singleShot(0, this, [&] {
      auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
      if (!box) return;
      asked = box->text();
      box->button(confirm ? QMessageBox::Yes : QMessageBox::Cancel)->click();
    });
    del->trigger();
    QVERIFY2(asked.contains(QStringLiteral("keep me?")), qPrintable(asked));
    QCOMPARE(ws.chat()->conversationModel()->rowOf(id) >= 0, !confirm);
    QCOMPARE(ws.store()->conversation(id).id != 0, !confirm);
  }

  // Item 10: search across conversations, by title and by any message.
  void searchAcrossConversations_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QStringList>("shown");
    QTest::newRow("empty: all") << QString() << QStringList{"Cooking", "Dragons", "Rust help"};
    QTest::newRow("title") << QStringLiteral("rust") << QStringList{"Rust help"};
    QTest::newRow("message") << QStringLiteral("borrow CHECKER") << QStringList{"Rust help"};
    QTest::newRow("reply") << QStringLiteral("dragon") << QStringList{"Dragons"};
    QTest::newRow("in two") << QStringLiteral("once") << QStringList{"Cooking", "Dragons"};
    QTest::newRow("none") << QStringLiteral("zebra") << QStringList{};
    QTest::newRow("wildcards are literal") << QStringLiteral("100%") << QStringList{"Cooking"};
  }
  void searchAcrossConversations() {
    QFETCH(QString, text);
    QFETCH(QStringList, shown);
    const QString db = dir_.filePath(QStringLiteral("search.sqlite3"));
    if (!QFile::exists(db)) {
      ConversationStore store;
      QVERIFY(store.open(db));
      auto add = [&](const QString& title, const QStringList& contents) {
        const qint64 id = store.createConversation(title, {}, {});
        for (int i = 0; i < contents.size(); ++i) {
          StoredMessage m;
          m.conversationId = id;
          m.position = i;
          m.role = i % 2 ? QStringLiteral("assistant") : QStringLiteral("user");
          m.content = contents[i];
          QVERIFY(store.addMessage(m) != 0);
        }
      };
      add(QStringLiteral("Rust help"), {QStringLiteral("Why does the borrow checker complain?")});
      add(QStringLiteral("Dragons"), {QStringLiteral("Tell me a story"), QStringLiteral("Once there was a dragon.")});
      add(QStringLiteral("Cooking"), {QStringLiteral("Bake at 100% power once")});
    }
    AppSettings s;
    Workstation ws(s, /*persist=*/false);
    ws.openStore(db);
    MainWindow window(&ws);
    window.show();
    window.chatSearch()->setText(text);
    QStringList visible;
    QListView* list = window.conversationList();
    for (int row = 0; row < list->model()->rowCount(); ++row)
      if (!list->isRowHidden(row)) visible << list->model()->index(row, 0).data(ConversationListModel::TitleRole).toString();
    visible.sort();
    QCOMPARE(visible, shown);
  }

  // Item 10: code blocks are highlighted (in colours that read on their shade) and each has a
  // "copy code" link that copies exactly its code.
  void codeBlocksHaveCopyAndHighlighting() {
    const QString md = QStringLiteral("Here:\n\n```python\ndef f(x):\n    return \"hi\"  # note\n```\n\nand\n\n```\nls -l\n```\n");
    QCOMPARE(fencedCodeBlocks(md), (QStringList{QStringLiteral("def f(x):\n    return \"hi\"  # note"), QStringLiteral("ls -l")}));
    MessageWidget w;
    w.resize(600, 400);
    StoredMessage m;
    m.role = QStringLiteral("assistant");
    m.content = md;
    w.setMessage(m, false, true);
    w.show();
    QTextBrowser* browser = w.browser();
    QVERIFY(browser->toHtml().contains(QStringLiteral("strata-copy:0")));
    QVERIFY(browser->toHtml().contains(QStringLiteral("strata-copy:1")));
    QSignalSpy copied(&w, &MessageWidget::codeCopied);
    emit browser->anchorClicked(QUrl(QStringLiteral("strata-copy:1")));
    QCOMPARE(copied.count(), 1);
    QCOMPARE(QApplication::clipboard()->text(), QStringLiteral("ls -l"));
    emit browser->anchorClicked(QUrl(QStringLiteral("strata-copy:0")));
    QCOMPARE(QApplication::clipboard()->text(), fencedCodeBlocks(md)[0]);

    // "def" in the first code line has the keyword colour; the comment the comment colour.
    QTextBlock block = browser->document()->begin();
    while (block.isValid() && !block.text().startsWith(QStringLiteral("def"))) block = block.next();
    QVERIFY(block.isValid());
    const QColor shade = browser->palette().color(QPalette::AlternateBase);
    auto colourAt = [&](int pos) {
      for (const QTextLayout::FormatRange& r : block.layout()->formats())
        if (pos >= r.start && pos < r.start + r.length && r.format.hasProperty(QTextFormat::ForegroundBrush))
          return r.format.foreground().color();
      return QColor();
    };
    const QTextBlock ret = block.next();
    CodeHighlighter probe(nullptr);
    probe.setBackground(shade);
    QCOMPARE(colourAt(0), probe.colour(CodeHighlighter::Token::Keyword));
    QVERIFY(strata::ui::contrastRatio(colourAt(0), shade) >= 4.5);
    block = ret;
    const int hash = int(block.text().indexOf(QLatin1Char('#')));
    QVERIFY(hash > 0);
    QCOMPARE(colourAt(hash), probe.colour(CodeHighlighter::Token::Comment));
    const int quote = int(block.text().indexOf(QLatin1Char('"')));
    QCOMPARE(colourAt(quote), probe.colour(CodeHighlighter::Token::String));
  }

  // Item 10: the Models tab leaves out vocabulary-only files and shows whole names (elided in the
  // middle, the path as tooltip).
  void modelsTabHidesVocabularyOnlyFiles() {
    QTemporaryDir folder;
    auto gguf = [&](const QString& name, quint64 tensors) {
      QFile f(folder.filePath(name));
      QVERIFY(f.open(QIODevice::WriteOnly));
      QByteArray head("GGUF");
      head.append(char(3)).append(3, '\0');  // version 3
      for (int i = 0; i < 8; ++i) head.append(char((tensors >> (8 * i)) & 0xff));
      head.append(8, '\0');  // no metadata
      f.write(head);
    };
    gguf(QStringLiteral("ggml-vocab-llama-bpe.gguf"), 0);
    const QString longName = QStringLiteral("Meta-Llama-3.1-8B-Instruct-abliterated-GGUF-Q4_K_M.gguf");
    gguf(longName, 291);
    QCOMPARE(ModelFilesModel::ggufTensorCount(folder.filePath(longName)), 291);
    QCOMPARE(ModelFilesModel::ggufTensorCount(folder.filePath(QStringLiteral("ggml-vocab-llama-bpe.gguf"))), 0);
    const QList<ModelFile> found = ModelFilesModel::findFiles({ModelLocation{folder.path(), QStringLiteral("added")}});
    QCOMPARE(found.size(), 1);
    QCOMPARE(found[0].fileName, longName);

    ModelFilesModel model;
    model.setFiles(found);
    ModelsPanel panel(&model);
    auto* view = panel.findChild<QTreeView*>(QStringLiteral("modelFiles"));
    QVERIFY(view);
    QCOMPARE(view->textElideMode(), Qt::ElideMiddle);
    QCOMPARE(model.index(0, ModelFilesModel::NameColumn).data(Qt::ToolTipRole).toString(), found[0].path);
  }

  // Item 8: prompt processing shows progress from the server's stream, not "generating…".
  void promptProgressIsShown() {
    FakeEngine engine;
    engine.promptProgress = {{64, 200}, {128, 200}, {200, 200}};
    ConversationStore store;
    QVERIFY(store.open(dir_.filePath(QStringLiteral("progress.sqlite3"))));
    EngineClient client;
    client.setEndpoint(QUrl(engine.url()), {});
    ChatController chat(&store, &client);
    chat.loadConversations();
    ChatView view(&chat);
    view.show();
    QSignalSpy progress(&chat, &ChatController::promptProgress);
    QSignalSpy finished(&chat, &ChatController::replyFinished);
    QVERIFY(chat.send(QStringLiteral("Summarise this long text")));
    QVERIFY(finished.wait(10000));
    QCOMPARE(engine.chatBodies.last().value("return_progress").toBool(), true);
    QCOMPARE(progress.count(), 3);
    QCOMPARE(progress[0], (QVariantList{1, 64, 200}));
    QCOMPARE(progress[2], (QVariantList{1, 200, 200}));
    QCOMPARE(chat.chatModel()->message(1).content, QStringLiteral("Hello, **world**!"));

    MessageWidget w;
    StoredMessage m;
    m.role = QStringLiteral("assistant");
    w.setMessage(m, /*streaming=*/true, true);
    QCOMPARE(w.statsText(), QStringLiteral("generating…"));
    w.setPromptProgress(512, 4096);
    QCOMPARE(w.statsText(), QStringLiteral("reading the prompt: 512 / 4096 tokens (12%)"));
    w.setPromptProgress(4096, 4096);
    QCOMPARE(w.statsText(), QStringLiteral("generating…"));
  }

  // Item 2: options given on the command line are for that run; the saved settings change only
  // when the user changes them (in Settings or by loading a model in the window).
  void commandLineOptionsAreNotSaved_data() {
    QTest::addColumn<QString>("field");
    QTest::newRow("devices") << QStringLiteral("devices");
    QTest::newRow("ctx") << QStringLiteral("ctx");
    QTest::newRow("threads") << QStringLiteral("threads");
    QTest::newRow("engine") << QStringLiteral("engine");
    QTest::newRow("model") << QStringLiteral("model");
    QTest::newRow("remote") << QStringLiteral("remote");
  }
  void commandLineOptionsAreNotSaved() {
    QFETCH(QString, field);
    AppSettings saved;
    saved.devices = QStringLiteral("cpu");
    saved.ctx = 1024;
    saved.threads = 2;
    saved.enginePath = QStringLiteral("/opt/strata-engine");
    saved.lastModel = QStringLiteral("/models/saved.gguf");
    saved.lastPlacement = QJsonObject{{"n_ctx", 1024}};
    saved.save();

    RunOverrides o;
    if (field == QLatin1String("devices")) o.devices = QStringLiteral("cpu,sim:gpu0:64MiB");
    if (field == QLatin1String("ctx")) o.ctx = 4096;
    if (field == QLatin1String("threads")) o.threads = 8;
    if (field == QLatin1String("engine")) o.enginePath = QStringLiteral("/tmp/other-engine");
    if (field == QLatin1String("model")) o.model = QStringLiteral("/models/once.gguf");
    if (field == QLatin1String("remote")) o.remoteUrl = QStringLiteral("http://gpu-box:8080");

    Workstation ws(AppSettings::load(), /*persist=*/true);
    ws.setRunOverrides(o);
    // In effect for this run...
    if (o.devices) QCOMPARE(ws.settings().devices, *o.devices);
    if (o.ctx) QCOMPARE(ws.settings().ctx, *o.ctx);
    if (o.model) {
      QCOMPARE(ws.settings().lastModel, *o.model);
      QVERIFY(ws.settings().lastPlacement.isEmpty());
    }
    if (o.remoteUrl) QCOMPARE(ws.settings().engineMode, AppSettings::EngineMode::Remote);
    // ...but whatever else is saved meanwhile leaves them out.
    ws.settings().theme = QStringLiteral("dark");
    ws.saveSettings();
    AppSettings after = AppSettings::load();
    QCOMPARE(after.theme, QStringLiteral("dark"));
    QCOMPARE(after.devices, saved.devices);
    QCOMPARE(after.ctx, saved.ctx);
    QCOMPARE(after.threads, saved.threads);
    QCOMPARE(after.enginePath, saved.enginePath);
    QCOMPARE(after.lastModel, saved.lastModel);
    QCOMPARE(after.lastPlacement, saved.lastPlacement);
    QCOMPARE(after.engineMode, AppSettings::EngineMode::Local);
    QCOMPARE(after.remoteUrl, saved.remoteUrl);

    // Changed by the user during the run (in Settings): saved.
    if (o.devices) {
      ws.settings().devices = QStringLiteral("cpu,sim:gpu0:8GiB");
      ws.saveSettings();
      QCOMPARE(AppSettings::load().devices, QStringLiteral("cpu,sim:gpu0:8GiB"));
    }
  }

  // Speculative decoding's draft model: set in Settings, saved, and passed to the local engine as
  // --draft (the engine loads it beside every model; docs/api.md).
  void draftModelSettingReachesTheEngine() {
    AppSettings s = AppSettings::load();
    s.draftModel = QStringLiteral("/models/SmolLM2-135M-Instruct.Q4_1.gguf");
    SettingsDialog dialog(s);
    auto* line = dialog.findChild<QLineEdit*>(QStringLiteral("draftModel"));
    QVERIFY(line);
    QCOMPARE(line->text(), s.draftModel);
    line->setText(QStringLiteral("  /models/draft.gguf "));
    const AppSettings edited = dialog.settings();
    QCOMPARE(edited.draftModel, QStringLiteral("/models/draft.gguf"));
    edited.save();
    QCOMPARE(AppSettings::load().draftModel, QStringLiteral("/models/draft.gguf"));
    EngineClient client;
    EngineProcess process(&client);
    EngineProcess::Options o;
    o.draftModel = edited.draftModel;
    process.setOptions(o);
    const QStringList args = process.arguments();
    const qsizetype at = args.indexOf(QStringLiteral("--draft"));
    QVERIFY2(at >= 0 && args.value(at + 1) == QStringLiteral("/models/draft.gguf"), qPrintable(args.join(' ')));
    o.draftModel.clear();
    process.setOptions(o);
    QVERIFY(!process.arguments().contains(QStringLiteral("--draft")));
    AppSettings reset = AppSettings::load();
    reset.draftModel.clear();
    reset.save();
  }
};

QTEST_MAIN(TestFirstUse)
#include "test_first_use.moc"
