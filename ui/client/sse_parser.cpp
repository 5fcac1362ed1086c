// ui/client/sse_parser.cpp — server-sent events, line by line, per the WHATWG event-stream rules
// (CR, LF or CRLF line ends; blank line dispatches; lines starting with ':' are comments).
#include "ui/client/sse_parser.h"

QList<SseEvent> SseParser::feed(const QByteArray& bytes) {
  QList<SseEvent> out;
  qsizetype start = 0;
  if (lastWasCr_ && !bytes.isEmpty() && bytes.at(0) == '\n') start = 1;  // CRLF split across feeds
  lastWasCr_ = false;
  for (qsizetype i = start; i < bytes.size(); ++i) {
    const char c = bytes.at(i);
    if (c != '\n' && c != '\r') continue;
    buffer_.append(bytes.constData() + start, i - start);
    processLine(buffer_, out);
    buffer_.clear();
    if (c == '\r') {
      if (i + 1 < bytes.size()) {
        if (bytes.at(i + 1) == '\n') ++i;
      } else {
        lastWasCr_ = true;
      }
    }
    start = i + 1;
  }
  buffer_.append(bytes.constData() + start, bytes.size() - start);
  return out;
}

void SseParser::reset() {
  buffer_.clear();
  current_ = SseEvent{};
  hasData_ = false;
  lastWasCr_ = false;
}

void SseParser::processLine(const QByteArray& line, QList<SseEvent>& out) {
  if (line.isEmpty()) {
    if (hasData_) out.append(current_);
    current_ = SseEvent{};
    hasData_ = false;
    return;
  }
  if (line.startsWith(':')) return;
  const qsizetype colon = line.indexOf(':');
  QByteArray field = colon < 0 ? line : line.left(colon);
  QByteArray value = colon < 0 ? QByteArray() : line.mid(colon + 1);
  if (value.startsWith(' ')) value.remove(0, 1);
  if (field == "data") {
    if (hasData_) current_.data.append('\n');
    current_.data.append(value);
    hasData_ = true;
  } else if (field == "event") {
    current_.event = QString::fromUtf8(value);
  } else if (field == "id") {
    current_.id = QString::fromUtf8(value);
  }
}
