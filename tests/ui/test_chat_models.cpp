// tests/ui/test_chat_models.cpp — ChatModel, ConversationListModel and ModelFilesModel under
// QAbstractItemModelTester, with their roles' real values after each change.
#include <QAbstractItemModelTester>
#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "ui/chat/chat_model.h"
#include "ui/chat/conversation_list_model.h"
#include "ui/models/model_files_model.h"

class TestChatModels : public QObject {
  Q_OBJECT
 private slots:
  void chatModel() {
    ChatModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
    m.setMessages({StoredMessage{1, 9, 0, QStringLiteral("user"), QStringLiteral("Hi")}});
    QCOMPARE(m.rowCount(), 1);
    const int row = m.appendMessage(StoredMessage{2, 9, 1, QStringLiteral("assistant"), QString(), false});
    QCOMPARE(row, 1);
    m.setStreaming(row, true);
    m.appendContent(row, QStringLiteral("Hel"));
    m.appendContent(row, QStringLiteral("lo"));
    QCOMPARE(m.index(1).data(ChatModel::ContentRole).toString(), QStringLiteral("Hello"));
    QCOMPARE(m.index(1).data(ChatModel::StreamingRole).toBool(), true);
    QCOMPARE(m.index(0).data(ChatModel::StreamingRole).toBool(), false);
    StoredMessage done = m.message(row);
    done.complete = true;
    done.tokens = 212;
    done.tokensPerSecond = 41.26;
    done.ttftMs = 180;
    done.finishReason = QStringLiteral("stop");
    m.setMessage(row, done);
    m.setStreaming(row, false);
    QCOMPARE(m.streamingRow(), -1);
    QCOMPARE(m.index(1).data(ChatModel::TokensRole).toInt(), 212);
    QCOMPARE(m.index(1).data(ChatModel::TtftMsRole).toLongLong(), qint64(180));
    QCOMPARE(m.index(1).data(ChatModel::StatsTextRole).toString(),
             QStringLiteral("212 tokens · 41.3 tok/s · first token 180 ms"));
    QCOMPARE(m.index(1).data(ChatModel::RoleRole).toString(), QStringLiteral("assistant"));
    QCOMPARE(m.index(1).data(ChatModel::MessageIdRole).toLongLong(), qint64(2));
    QCOMPARE(m.index(0).data(ChatModel::StatsTextRole).toString(), QString());  // user rows have none
    QCOMPARE(m.roleNames().value(ChatModel::ContentRole), QByteArray("content"));
    m.removeFrom(1);
    QCOMPARE(m.rowCount(), 1);
    m.removeFrom(0);
    QCOMPARE(m.rowCount(), 0);
  }

  void conversationList() {
    ConversationListModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
    StoredConversation a{1, QStringLiteral("A")}, b{2, QStringLiteral("B")}, c{3, QStringLiteral("C")};
    m.setConversations({a, b, c});
    QCOMPARE(m.rowCount(), 3);
    StoredConversation c2 = c;
    c2.title = QStringLiteral("C, renamed");
    m.upsert(c2);  // moves to the top
    QCOMPARE(m.index(0).data(ConversationListModel::IdRole).toLongLong(), qint64(3));
    QCOMPARE(m.index(0).data().toString(), QStringLiteral("C, renamed"));
    QCOMPARE(m.index(1).data(ConversationListModel::TitleRole).toString(), QStringLiteral("A"));
    m.upsert(StoredConversation{4, QStringLiteral("D")});
    QCOMPARE(m.rowCount(), 4);
    QCOMPARE(m.rowOf(4), 0);
    qint64 editedId = 0;
    QString editedTitle;
    connect(&m, &ConversationListModel::titleEdited, this, [&](qint64 id, const QString& t) {
      editedId = id;
      editedTitle = t;
    });
    QVERIFY(m.setData(m.index(2), QStringLiteral("  A2 ")));
    QCOMPARE(editedId, qint64(1));
    QCOMPARE(editedTitle, QStringLiteral("A2"));
    QVERIFY(!m.setData(m.index(2), QStringLiteral("   ")));  // empty titles refused
    m.remove(3);
    QCOMPARE(m.rowCount(), 3);
    QCOMPARE(m.rowOf(3), -1);
  }

  void modelFiles_data() {
    QTest::addColumn<QStringList>("files");  // relative paths created under the temporary folder
    QTest::addColumn<QStringList>("expected");
    QTest::newRow("lm studio layout") << QStringList{"lmstudio-community/Qwen/qwen-q4_k_m.gguf", "x/readme.md"}
                                      << QStringList{"qwen-q4_k_m.gguf"};
    QTest::newRow("nested and upper case") << QStringList{"a/b/c/Model.GGUF", "one.gguf", "two.bin"}
                                           << QStringList{"Model.GGUF", "one.gguf"};
    QTest::newRow("none") << QStringList{"notes.txt"} << QStringList{};
  }
  void modelFiles() {
    QFETCH(QStringList, files);
    QFETCH(QStringList, expected);
    QTemporaryDir dir;
    for (const QString& f : files) {
      QDir(dir.path()).mkpath(QFileInfo(dir.filePath(f)).path());
      QFile file(dir.filePath(f));
      QVERIFY(file.open(QIODevice::WriteOnly));
      file.write(QByteArray(1234, 'x'));
    }
    ModelFilesModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
    QSignalSpy done(&m, &ModelFilesModel::scanFinished);
    m.scan({ModelLocation{dir.path(), QStringLiteral("added")}, ModelLocation{dir.filePath("missing"), "LM Studio"}});
    QVERIFY(done.wait(10000));
    QStringList names;
    for (int r = 0; r < m.rowCount(); ++r) {
      names << m.index(r, 0).data(ModelFilesModel::FileNameRole).toString();
      QCOMPARE(m.index(r, 0).data(ModelFilesModel::SizeBytesRole).toLongLong(), qint64(1234));
      QCOMPARE(m.index(r, ModelFilesModel::SizeColumn).data().toString(), QStringLiteral("1.2 KiB"));
      QCOMPARE(m.index(r, ModelFilesModel::SourceColumn).data().toString(), QStringLiteral("added"));
      QCOMPARE(m.index(r, 0).data(ModelFilesModel::LoadedRole).toBool(), false);
    }
    names.sort();
    QStringList want = expected;
    want.sort();
    QCOMPARE(names, want);
    if (!expected.isEmpty()) {
      const QString path = m.index(0, 0).data(ModelFilesModel::PathRole).toString();
      m.setStatus(QJsonObject{{"state", "ready"}, {"model", QJsonObject{{"path", path}}}});
      QCOMPARE(m.index(0, 0).data(ModelFilesModel::LoadedRole).toBool(), true);
    }
    // A file opened by hand (not in a scanned folder) is added and marked when loaded.
    m.setStatus(QJsonObject{{"state", "ready"}, {"model", QJsonObject{{"path", "/elsewhere/opened.gguf"}}}});
    const int row = m.rowOfPath(QStringLiteral("/elsewhere/opened.gguf"));
    QVERIFY(row >= 0);
    QCOMPARE(m.index(row, 0).data(ModelFilesModel::SourceRole).toString(), QStringLiteral("opened"));
    QCOMPARE(m.index(row, 0).data(ModelFilesModel::LoadedRole).toBool(), true);
  }
};

QTEST_MAIN(TestChatModels)
#include "test_chat_models.moc"
