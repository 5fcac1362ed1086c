// tests/ui/test_sse_parser.cpp — SseParser: events from every kind of split, line ends, comments,
// multi-line data; the same stream fed byte by byte gives the same events.
#include <QTest>

#include "ui/client/sse_parser.h"

class TestSseParser : public QObject {
  Q_OBJECT
 private slots:
  void events_data() {
    QTest::addColumn<QByteArray>("stream");
    QTest::addColumn<QStringList>("names");
    QTest::addColumn<QList<QByteArray>>("datas");
    QTest::newRow("one") << QByteArray("data: {\"a\":1}\n\n") << QStringList{"message"} << QList<QByteArray>{"{\"a\":1}"};
    QTest::newRow("crlf") << QByteArray("data: x\r\n\r\ndata: y\r\n\r\n") << QStringList{"message", "message"}
                          << QList<QByteArray>{"x", "y"};
    QTest::newRow("cr only") << QByteArray("data: x\r\r") << QStringList{"message"} << QList<QByteArray>{"x"};
    QTest::newRow("named trace") << QByteArray("event: trace\ndata: {}\n\n") << QStringList{"trace"} << QList<QByteArray>{"{}"};
    QTest::newRow("multi-line data") << QByteArray("data: a\ndata: b\n\n") << QStringList{"message"} << QList<QByteArray>{"a\nb"};
    QTest::newRow("comment and no space") << QByteArray(": keep-alive\n\ndata:z\n\n") << QStringList{"message"}
                                          << QList<QByteArray>{"z"};
    QTest::newRow("done marker") << QByteArray("data: [DONE]\n\n") << QStringList{"message"} << QList<QByteArray>{"[DONE]"};
    QTest::newRow("unfinished event held") << QByteArray("data: 1\n\ndata: 2\n") << QStringList{"message"}
                                           << QList<QByteArray>{"1"};
    QTest::newRow("utf-8 split") << QByteArray("data: \xc3\xa9t\xc3\xa9\n\n") << QStringList{"message"}
                                 << QList<QByteArray>{"\xc3\xa9t\xc3\xa9"};
  }
  void events() {
    QFETCH(QByteArray, stream);
    QFETCH(QStringList, names);
    QFETCH(QList<QByteArray>, datas);
    // Whole, then every split point in two, then byte by byte: all give the same events.
    QList<QList<SseEvent>> runs;
    {
      SseParser p;
      runs.append(p.feed(stream));
    }
    for (qsizetype cut = 1; cut < stream.size(); ++cut) {
      SseParser p;
      QList<SseEvent> ev = p.feed(stream.left(cut));
      ev += p.feed(stream.mid(cut));
      runs.append(ev);
    }
    {
      SseParser p;
      QList<SseEvent> ev;
      for (char c : stream) ev += p.feed(QByteArray(1, c));
      runs.append(ev);
    }
    for (const QList<SseEvent>& ev : runs) {
      QCOMPARE(ev.size(), names.size());
      for (int i = 0; i < ev.size(); ++i) {
        QCOMPARE(ev[i].event, names[i]);
        QCOMPARE(ev[i].data, datas[i]);
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestSseParser)
#include "test_sse_parser.moc"
