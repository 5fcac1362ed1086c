// ui/client/chat_stream.h — one streaming /v1/chat/completions request: parses its SSE body as it
// arrives (GUI thread) and reports text deltas, then the finish reason and timing figures.
#pragma once

#include <QElapsedTimer>
#include <QJsonObject>
#include <QObject>
#include <QPointer>

#include "ui/client/sse_parser.h"

class QNetworkReply;

class ChatStream : public QObject {
  Q_OBJECT
 public:
  // Takes ownership of `reply` (a POST with "stream": true) and starts its clock now.
  explicit ChatStream(QNetworkReply* reply, QObject* parent = nullptr);
  ~ChatStream() override;

  // Stops the reply; emits finished("stopped") with the text so far. No-op once done.
  void abort();
  bool isRunning() const { return !done_; }

  QString text() const { return text_; }
  qint64 timeToFirstTokenMs() const { return ttftMs_; }  // -1 before the first token
  int completionTokens() const;        // from the usage chunk, else the number of content deltas
  int promptTokens() const { return promptTokens_; }
  // Speculative decoding's guesses the model took / dropped (the usage chunk's
  // completion_tokens_details); 0 when the reply did not speculate or the engine did not say.
  int acceptedDraftTokens() const { return acceptedDraft_; }
  int rejectedDraftTokens() const { return rejectedDraft_; }
  double tokensPerSecond() const;      // decode speed: tokens after the first over their time
  qint64 elapsedMs() const { return elapsedMs_ >= 0 ? elapsedMs_ : clock_.elapsed(); }

 signals:
  void contentDelta(const QString& text);      // a piece of the reply, in order
  // Prompt processing ("return_progress"): prompt tokens in the engine's cache of `total`.
  void promptProgress(int processed, int total);
  // The engine lost a device while this reply streamed and re-planned (the chunk's "replan" object:
  // {lost, excluded, at_token, devices, moved_blocks, ms, cause}; docs/api.md "Lost devices").
  void replanned(const QJsonObject& note);
  void finished(const QString& finishReason);  // "stop", "length", "stopped" (by abort())
  void failed(const QString& message);         // network or engine error; text() keeps what came

 private:
  void onReadyRead();
  void onFinished();
  void handleEvent(const QByteArray& data);
  void finish(const QString& reason);
  void fail(const QString& message);

  QPointer<QNetworkReply> reply_;
  SseParser parser_;
  QElapsedTimer clock_;
  QString text_;
  QString finishReason_;
  qint64 ttftMs_ = -1;
  qint64 lastTokenMs_ = -1;
  qint64 elapsedMs_ = -1;
  int deltas_ = 0;
  int usageTokens_ = -1;
  int promptTokens_ = -1;
  int acceptedDraft_ = 0;
  int rejectedDraft_ = 0;
  bool sawDone_ = false;
  bool done_ = false;
};
