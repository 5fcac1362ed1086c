// tests/ui/test_conversation_store.cpp — ConversationStore: conversations and messages survive closing
// and reopening the file; updates, deletion from a position, ordering, counts.
#include <QTemporaryDir>
#include <QTest>

#include "ui/storage/conversation_store.h"

class TestConversationStore : public QObject {
  Q_OBJECT
 private slots:
  void roundTrip() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("s.sqlite3"));
    qint64 cid = 0, replyId = 0;
    {
      ConversationStore s;
      QVERIFY2(s.open(path), qPrintable(s.lastError()));
      cid = s.createConversation(QStringLiteral("Story"), QStringLiteral("Be brief."),
                                 QJsonObject{{QStringLiteral("temperature"), 0.0}, {QStringLiteral("max_tokens"), 64}});
      QVERIFY(cid > 0);
      StoredMessage u{0, cid, 0, QStringLiteral("user"), QStringLiteral("Once upon a time")};
      QVERIFY(s.addMessage(u) > 0);
      StoredMessage r{0, cid, 1, QStringLiteral("assistant"), QString(), false};
      replyId = s.addMessage(r);
      QVERIFY(replyId > 0);
      r.id = replyId;
      r.content = QStringLiteral(", there was a little girl");
      r.complete = true;
      r.tokens = 7;
      r.tokensPerSecond = 41.5;
      r.ttftMs = 180;
      r.finishReason = QStringLiteral("length");
      QVERIFY(s.updateMessage(r));
      QCOMPARE(s.messageCount(), 2);
    }
    ConversationStore s;
    QVERIFY(s.open(path));
    const QList<StoredConversation> cs = s.conversations();
    QCOMPARE(cs.size(), 1);
    QCOMPARE(cs[0].title, QStringLiteral("Story"));
    QCOMPARE(cs[0].systemPrompt, QStringLiteral("Be brief."));
    QCOMPARE(cs[0].sampling.value(QStringLiteral("max_tokens")).toInt(), 64);
    const QList<StoredMessage> ms = s.messages(cid);
    QCOMPARE(ms.size(), 2);
    QCOMPARE(ms[0].role, QStringLiteral("user"));
    QCOMPARE(ms[0].content, QStringLiteral("Once upon a time"));
    QCOMPARE(ms[1].id, replyId);
    QCOMPARE(ms[1].content, QStringLiteral(", there was a little girl"));
    QVERIFY(ms[1].complete);
    QCOMPARE(ms[1].tokens, 7);
    QCOMPARE(ms[1].tokensPerSecond, 41.5);
    QCOMPARE(ms[1].ttftMs, qint64(180));
    QCOMPARE(ms[1].finishReason, QStringLiteral("length"));

    QVERIFY(s.deleteMessagesFrom(cid, 1));
    QCOMPARE(s.messages(cid).size(), 1);
    const qint64 second = s.createConversation(QStringLiteral("Second"), {}, {});
    QTest::qWait(5);
    s.addMessage(StoredMessage{0, second, 0, QStringLiteral("user"), QStringLiteral("hi")});
    QCOMPARE(s.conversations().first().id, second);  // most recently updated first
    QVERIFY(s.deleteConversation(cid));
    QCOMPARE(s.conversations().size(), 1);
    QCOMPARE(s.messageCount(), 1);
  }
};

QTEST_GUILESS_MAIN(TestConversationStore)
#include "test_conversation_store.moc"
