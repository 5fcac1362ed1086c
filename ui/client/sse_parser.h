// ui/client/sse_parser.h — incremental parser of a text/event-stream body (server-sent events).
// Pure Qt Core; fed whatever bytes QNetworkReply::readyRead delivered, returns complete events.
#pragma once

#include <QByteArray>
#include <QList>
#include <QString>

struct SseEvent {
  QString event = QStringLiteral("message");  // the "event:" field, "message" when absent
  QByteArray data;                             // "data:" lines joined with '\n'
  QString id;
};

class SseParser {
 public:
  // Appends bytes (any split: mid-line, mid-CRLF, several events) and returns the events
  // completed by them, in order.
  QList<SseEvent> feed(const QByteArray& bytes);
  // Bytes waiting for the end of their line or event.
  qsizetype pendingBytes() const { return buffer_.size(); }
  void reset();

 private:
  void processLine(const QByteArray& line, QList<SseEvent>& out);

  QByteArray buffer_;
  SseEvent current_;
  bool hasData_ = false;
  bool lastWasCr_ = false;
};
