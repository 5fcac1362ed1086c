// tests/ui/test_chat_controller.cpp — chat against a scripted engine (fake_engine.h): typing into the
// chat view streams the reply into the view and SQLite; stop, regenerate, edit-and-resend send the
// right messages; errors and a dropped connection keep every stored message; the API key is sent.
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QJsonArray>
#include <QSignalSpy>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>

#include "fake_engine.h"
#include "ui/chat/chat_controller.h"
#include "ui/chat/chat_view.h"
#include "ui/chat/sampling_bar.h"
#include "ui/chat/message_widget.h"
#include "ui/client/engine_client.h"
#include "ui/storage/conversation_store.h"

class TestChatController : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  int dbCounter_ = 0;

  struct Rig {
    FakeEngine engine;
    ConversationStore store;
    EngineClient client;
    ChatController* chat = nullptr;
    ~Rig() { delete chat; }
  };
  std::unique_ptr<Rig> makeRig() {
    auto rig = std::make_unique<Rig>();
    rig->engine.apiKey = QStringLiteral("k3y");
    rig->client.setEndpoint(QUrl(rig->engine.url()), QStringLiteral("k3y"));
    rig->store.open(dir_.filePath(QStringLiteral("db%1.sqlite3").arg(++dbCounter_)));
    rig->chat = new ChatController(&rig->store, &rig->client);
    rig->chat->loadConversations();
    return rig;
  }

 private slots:
  void typedPromptStreamsIntoView() {
    auto rig = makeRig();
    ChatView view(rig->chat);
    view.resize(700, 500);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QSignalSpy finished(rig->chat, &ChatController::replyFinished);
    int deltas = 0;
    connect(rig->chat->chatModel(), &QAbstractItemModel::dataChanged, this, [&] { ++deltas; });
    QTest::keyClicks(view.input(), QStringLiteral("Say hello"));
    QTest::keyClick(view.input(), Qt::Key_Return);
    QVERIFY(view.input()->toPlainText().isEmpty());
    QVERIFY(finished.wait(5000));
    QCOMPARE(rig->chat->chatModel()->rowCount(), 2);
    QCOMPARE(rig->chat->chatModel()->message(1).content, QStringLiteral("Hello, **world**!"));
    QVERIFY(deltas >= 4);  // streamed piece by piece
    QTRY_COMPARE(view.lastReplyText(), QStringLiteral("Hello, world!"));  // Markdown rendered
    const StoredMessage reply = rig->chat->chatModel()->message(1);
    QCOMPARE(reply.tokens, 4);  // from the usage chunk
    QVERIFY(reply.ttftMs >= 0);
    QCOMPARE(reply.finishReason, QStringLiteral("stop"));
    // The request: stream on, messages as typed, sampling of the conversation.
    const QJsonObject body = rig->engine.chatBodies.last();
    QCOMPARE(body.value("stream").toBool(), true);
    QCOMPARE(body.value("messages").toArray().size(), 1);
    QCOMPARE(body.value("messages")[0]["content"].toString(), QStringLiteral("Say hello"));
    QCOMPARE(body.value("max_tokens").toInt(), 1024);
    // Stored: both rows, the reply complete with its figures.
    const QList<StoredMessage> stored = rig->store.messages(rig->chat->currentConversation());
    QCOMPARE(stored.size(), 2);
    QCOMPARE(stored[1].content, QStringLiteral("Hello, **world**!"));
    QVERIFY(stored[1].complete);
    QCOMPARE(stored[1].tokens, 4);
    QCOMPARE(rig->store.conversations().first().title, QStringLiteral("Say hello"));
    // The stats line under the reply.
    QVERIFY(view.messageWidget(1)->findChild<QLabel*>(QStringLiteral("messageStats"))->text().startsWith(QStringLiteral("4 tokens")));
  }

  // A device lost mid-reply: the stream's "replan" chunk becomes a note under the reply, shown while
  // it streams, kept in the store, and the text is not touched.
  void replanNoteUnderTheReply() {
    auto rig = makeRig();
    rig->engine.replan = QJsonObject{{"lost", QJsonArray{"gpu1"}}, {"excluded", QJsonArray{}}, {"at_token", 2},
                                     {"devices", QJsonArray{"gpu0", "cpu"}}, {"moved_blocks", 11}, {"ms", 412.5},
                                     {"cause", "device 'gpu1' is lost"}};
    rig->engine.replanBeforePiece = 2;
    ChatView view(rig->chat);
    view.show();
    QSignalSpy finished(rig->chat, &ChatController::replyFinished);
    QVERIFY(rig->chat->send(QStringLiteral("Say hello")));
    QVERIFY(finished.wait(5000));
    const QString note = QStringLiteral("gpu1 lost at token 2; re-planned onto gpu0 + cpu in 0.4 s");
    const StoredMessage reply = rig->chat->chatModel()->message(1);
    QCOMPARE(reply.content, QStringLiteral("Hello, **world**!"));
    QCOMPARE(reply.note, note);
    QCOMPARE(rig->chat->chatModel()->index(1).data(ChatModel::NoteRole).toString(), note);
    QCOMPARE(rig->store.messages(rig->chat->currentConversation()).at(1).note, note);
    QTRY_COMPARE(view.messageWidget(1)->noteText(), note);
    QCOMPARE(view.messageWidget(0)->noteText(), QString());
    // The wording for each case.
    QCOMPARE(ChatController::replanNote(QJsonObject{{"lost", QJsonArray{"cuda1"}}, {"at_token", 0},
                                                    {"devices", QJsonArray{"cpu"}}, {"ms", 1234.0}}),
             QStringLiteral("cuda1 lost while reading the prompt; re-planned onto cpu in 1.2 s"));
    QCOMPARE(ChatController::replanNote(QJsonObject{{"lost", QJsonArray{"gpu0", "gpu2"}}, {"at_token", 37},
                                                    {"devices", QJsonArray{"gpu1", "cpu"}}, {"ms", 46.0}}),
             QStringLiteral("gpu0, gpu2 lost at token 37; re-planned onto gpu1 + cpu in 0.05 s"));
    QCOMPARE(ChatController::replanNote(QJsonObject{{"lost", QJsonArray{}}, {"full", QJsonArray{"gpu1"}}, {"at_token", 5},
                                                    {"devices", QJsonArray{"gpu0", "cpu"}}, {"ms", 300.0}}),
             QStringLiteral("gpu1 out of memory at token 5; re-planned onto gpu0 + cpu in 0.3 s"));
    // A store from before notes existed opens and gets the column.
    const QString old = dir_.filePath(QStringLiteral("old.sqlite3"));
    {
      QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("old"));
      db.setDatabaseName(old);
      QVERIFY(db.open());
      QSqlQuery q(db);
      QVERIFY(q.exec(QStringLiteral("CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, conversation_id INTEGER NOT NULL,"
                                    " position INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, complete INTEGER NOT NULL,"
                                    " tokens INTEGER NOT NULL, tokens_per_s REAL NOT NULL, ttft_ms INTEGER NOT NULL,"
                                    " finish_reason TEXT NOT NULL, created_ms INTEGER NOT NULL)")));
      QVERIFY(q.exec(QStringLiteral("INSERT INTO messages VALUES (1, 1, 0, 'user', 'hi', 1, -1, 0, -1, '', 0)")));
      db.close();
    }
    QSqlDatabase::removeDatabase(QStringLiteral("old"));
    ConversationStore reopened;
    QVERIFY2(reopened.open(old), qPrintable(reopened.lastError()));
    QCOMPARE(reopened.messages(1).size(), 1);
    QCOMPARE(reopened.messages(1).at(0).content, QStringLiteral("hi"));
    QCOMPARE(reopened.messages(1).at(0).note, QString());
  }

  // Speculative decoding per chat: the sampling bar's choice goes into the request as
  // "speculative", and the reply's accepted / rejected guesses become a note under it.
  void speculativePerChatAndItsNote() {
    SamplingBar bar;
    bar.setSampling(QJsonObject{{"temperature", 0.2}, {"max_tokens", 64}});
    QVERIFY(!bar.sampling().contains("speculative"));  // the engine's default
    auto* combo = bar.findChild<QComboBox*>(QStringLiteral("speculative"));
    QVERIFY(combo);
    QSignalSpy edited(&bar, &SamplingBar::samplingEdited);
    combo->setCurrentIndex(combo->findData(QStringLiteral("lookup")));
    QCOMPARE(edited.count(), 1);
    const QJsonObject sampling = edited.first().first().toJsonObject();
    QCOMPARE(sampling.value("speculative").toString(), QStringLiteral("lookup"));
    SamplingBar other;
    other.setSampling(sampling);  // a stored conversation shows its choice
    QCOMPARE(other.findChild<QComboBox*>(QStringLiteral("speculative"))->currentData().toString(), QStringLiteral("lookup"));
    other.setSampling(QJsonObject{{"speculative", false}});
    QCOMPARE(other.sampling().value("speculative").toString(), QStringLiteral("off"));

    auto rig = makeRig();
    rig->engine.completionDetails = QJsonObject{{"accepted_prediction_tokens", 3}, {"rejected_prediction_tokens", 1}};
    rig->chat->setSampling(sampling);
    QSignalSpy finished(rig->chat, &ChatController::replyFinished);
    QVERIFY(rig->chat->send(QStringLiteral("Rename x to y")));
    QVERIFY(finished.wait(5000));
    QCOMPARE(rig->engine.chatBodies.last().value("speculative").toString(), QStringLiteral("lookup"));
    const QString note = QStringLiteral("speculative decoding: 3 of 4 guessed tokens taken (75%), 3 passes saved");
    QCOMPARE(rig->chat->chatModel()->message(1).note, note);
    QCOMPARE(rig->store.messages(rig->chat->currentConversation()).at(1).note, note);
    QCOMPARE(ChatController::speculativeNote(0, 0), QString());
  }

  void systemPromptAndSampling() {
    auto rig = makeRig();
    rig->chat->setSystemPrompt(QStringLiteral("Be brief."));
    QJsonObject s = rig->chat->sampling();
    s.insert("temperature", 0.0);
    s.insert("max_tokens", 7);
    rig->chat->setSampling(s);
    QSignalSpy finished(rig->chat, &ChatController::replyFinished);
    QVERIFY(rig->chat->send(QStringLiteral("Hi")));
    QVERIFY(finished.wait(5000));
    const QJsonObject body = rig->engine.chatBodies.last();
    QCOMPARE(body.value("messages")[0]["role"].toString(), QStringLiteral("system"));
    QCOMPARE(body.value("messages")[0]["content"].toString(), QStringLiteral("Be brief."));
    QCOMPARE(body.value("temperature").toDouble(), 0.0);
    QCOMPARE(body.value("max_tokens").toInt(), 7);
    // Kept per conversation in the store.
    const StoredConversation c = rig->store.conversation(rig->chat->currentConversation());
    QCOMPARE(c.systemPrompt, QStringLiteral("Be brief."));
    QCOMPARE(c.sampling.value("max_tokens").toInt(), 7);
  }

  void stopRegenerateEdit() {
    auto rig = makeRig();
    rig->engine.pieceIntervalMs = 40;
    QSignalSpy finished(rig->chat, &ChatController::replyFinished);
    QSignalSpy started(rig->chat, &ChatController::replyStarted);
    QVERIFY(rig->chat->send(QStringLiteral("first")));
    QTRY_VERIFY(!rig->chat->chatModel()->message(1).content.isEmpty());
    rig->chat->stop();
    QCOMPARE(finished.size(), 1);
    QCOMPARE(rig->chat->chatModel()->message(1).finishReason, QStringLiteral("stopped"));
    QVERIFY(rig->chat->chatModel()->message(1).content.size() < QStringLiteral("Hello, **world**!").size());
    QCOMPARE(rig->store.messages(rig->chat->currentConversation()).size(), 2);

    rig->engine.pieceIntervalMs = 2;
    QVERIFY(rig->chat->regenerate());
    QVERIFY(finished.wait(5000));
    QCOMPARE(rig->chat->chatModel()->rowCount(), 2);  // the old reply was replaced
    QCOMPARE(rig->engine.chatBodies.last().value("messages").toArray().size(), 1);
    QCOMPARE(rig->chat->chatModel()->message(1).content, QStringLiteral("Hello, **world**!"));

    QVERIFY(rig->chat->send(QStringLiteral("second")));
    QVERIFY(finished.wait(5000));
    QCOMPARE(rig->engine.chatBodies.last().value("messages").toArray().size(), 3);  // user, assistant, user
    QCOMPARE(rig->chat->chatModel()->rowCount(), 4);

    QVERIFY(rig->chat->editAndResend(0, QStringLiteral("first, edited")));
    QVERIFY(finished.wait(5000));
    const QJsonArray sent = rig->engine.chatBodies.last().value("messages").toArray();
    QCOMPARE(sent.size(), 1);
    QCOMPARE(sent[0]["content"].toString(), QStringLiteral("first, edited"));
    const QList<StoredMessage> stored = rig->store.messages(rig->chat->currentConversation());
    QCOMPARE(stored.size(), 2);
    QCOMPARE(stored[0].content, QStringLiteral("first, edited"));
    QCOMPARE(stored[1].content, QStringLiteral("Hello, **world**!"));
  }

  void errorsKeepStoredMessages() {
    auto rig = makeRig();
    QSignalSpy failed(rig->chat, &ChatController::replyFailed);
    rig->engine.chatStatus = 503;
    QVERIFY(rig->chat->send(QStringLiteral("anyone?")));
    QVERIFY(failed.wait(5000));
    QCOMPARE(failed.last().at(1).toString(), QStringLiteral("error: no model loaded"));
    QCOMPARE(rig->store.messageCount(), 2);

    // The connection dropping mid-reply (an engine crash): the text so far is stored, not complete.
    rig->engine.chatStatus = 200;
    rig->engine.pieceIntervalMs = 50;
    rig->chat->setPersistIntervalMs(10);
    QVERIFY(rig->chat->regenerate());
    QTRY_VERIFY(!rig->chat->chatModel()->message(1).content.isEmpty());
    QTest::qWait(30);
    rig->engine.dropAll();
    QVERIFY(failed.wait(5000));
    const QList<StoredMessage> stored = rig->store.messages(rig->chat->currentConversation());
    QCOMPARE(stored.size(), 2);
    QVERIFY(!stored[1].complete);
    QVERIFY(stored[1].content.startsWith(QStringLiteral("Hello")));
    QVERIFY(stored[1].finishReason.startsWith(QStringLiteral("error")));
  }

  void conversationsSwitch() {
    auto rig = makeRig();
    QSignalSpy finished(rig->chat, &ChatController::replyFinished);
    rig->chat->send(QStringLiteral("one"));
    QVERIFY(finished.wait(5000));
    const qint64 first = rig->chat->currentConversation();
    rig->chat->newConversation();
    QCOMPARE(rig->chat->chatModel()->rowCount(), 0);
    rig->chat->send(QStringLiteral("two"));
    QVERIFY(finished.wait(5000));
    QCOMPARE(rig->chat->conversationModel()->rowCount(), 2);
    QCOMPARE(rig->chat->conversationModel()->index(0).data().toString(), QStringLiteral("two"));
    rig->chat->openConversation(first);
    QCOMPARE(rig->chat->chatModel()->message(0).content, QStringLiteral("one"));
    rig->chat->deleteConversation(first);
    QCOMPARE(rig->chat->conversationModel()->rowCount(), 1);
    QCOMPARE(rig->store.messageCount(), 2);
  }
};

QTEST_MAIN(TestChatController)
#include "test_chat_controller.moc"
