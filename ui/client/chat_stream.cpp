// ui/client/chat_stream.cpp — SSE chunks of chat.completion.chunk objects to text deltas and stats.
#include "ui/client/chat_stream.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QNetworkReply>

ChatStream::ChatStream(QNetworkReply* reply, QObject* parent) : QObject(parent), reply_(reply) {
  clock_.start();
  reply->setParent(this);
  connect(reply, &QNetworkReply::readyRead, this, &ChatStream::onReadyRead);
  connect(reply, &QNetworkReply::finished, this, &ChatStream::onFinished);
}

ChatStream::~ChatStream() {
  done_ = true;
  if (reply_) {
    reply_->disconnect(this);
    reply_->abort();
  }
}

int ChatStream::completionTokens() const { return usageTokens_ >= 0 ? usageTokens_ : deltas_; }

double ChatStream::tokensPerSecond() const {
  const int n = completionTokens();
  if (n <= 0 || ttftMs_ < 0) return 0.0;
  const qint64 span = lastTokenMs_ - ttftMs_;
  if (n > 1 && span > 0) return (n - 1) * 1000.0 / span;
  const qint64 total = elapsedMs();
  return total > 0 ? n * 1000.0 / total : 0.0;
}

void ChatStream::abort() {
  if (done_) return;
  finish(QStringLiteral("stopped"));
}

void ChatStream::onReadyRead() {
  if (done_ || !reply_) return;
  const int status = reply_->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
  if (status >= 400) return;  // the error body is read in onFinished
  const QByteArray bytes = reply_->readAll();
  for (const SseEvent& e : parser_.feed(bytes)) {
    handleEvent(e.data);
    if (done_) return;
  }
}

void ChatStream::handleEvent(const QByteArray& data) {
  if (data.trimmed() == "[DONE]") {
    sawDone_ = true;
    finish(finishReason_.isEmpty() ? QStringLiteral("stop") : finishReason_);
    return;
  }
  const QJsonObject chunk = QJsonDocument::fromJson(data).object();
  if (chunk.contains(QStringLiteral("error"))) {
    fail(chunk.value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString());
    return;
  }
  const QJsonObject usage = chunk.value(QStringLiteral("usage")).toObject();
  if (!usage.isEmpty()) {
    usageTokens_ = usage.value(QStringLiteral("completion_tokens")).toInt(-1);
    promptTokens_ = usage.value(QStringLiteral("prompt_tokens")).toInt(-1);
    const QJsonObject details = usage.value(QStringLiteral("completion_tokens_details")).toObject();
    acceptedDraft_ = details.value(QStringLiteral("accepted_prediction_tokens")).toInt(0);
    rejectedDraft_ = details.value(QStringLiteral("rejected_prediction_tokens")).toInt(0);
  }
  const QJsonObject progress = chunk.value(QStringLiteral("prompt_progress")).toObject();
  if (!progress.isEmpty())
    emit promptProgress(progress.value(QStringLiteral("processed")).toInt(), progress.value(QStringLiteral("total")).toInt());
  const QJsonObject replan = chunk.value(QStringLiteral("replan")).toObject();
  if (!replan.isEmpty()) emit replanned(replan);
  const QJsonArray choices = chunk.value(QStringLiteral("choices")).toArray();
  if (choices.isEmpty()) return;
  const QJsonObject choice = choices.first().toObject();
  const QString piece = choice.value(QStringLiteral("delta")).toObject().value(QStringLiteral("content")).toString();
  if (!piece.isEmpty()) {
    const qint64 now = clock_.elapsed();
    if (ttftMs_ < 0) ttftMs_ = now;
    lastTokenMs_ = now;
    ++deltas_;
    text_ += piece;
    emit contentDelta(piece);
  }
  const QJsonValue reason = choice.value(QStringLiteral("finish_reason"));
  if (reason.isString()) finishReason_ = reason.toString();
}

void ChatStream::onFinished() {
  if (done_ || !reply_) return;
  const QByteArray rest = reply_->readAll();
  const int status = reply_->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
  if (status >= 400) {
    const QJsonObject err = QJsonDocument::fromJson(rest).object().value(QStringLiteral("error")).toObject();
    const QString msg = err.value(QStringLiteral("message")).toString();
    fail(msg.isEmpty() ? QStringLiteral("engine answered HTTP %1").arg(status) : msg);
    return;
  }
  for (const SseEvent& e : parser_.feed(rest + "\n\n")) {
    handleEvent(e.data);
    if (done_) return;
  }
  if (reply_->error() != QNetworkReply::NoError) {
    fail(reply_->errorString());
    return;
  }
  // The body ended without [DONE]: a finish reason counts as a clean end, otherwise it was cut.
  if (!finishReason_.isEmpty()) finish(finishReason_);
  else fail(QStringLiteral("the engine closed the stream before the reply ended"));
}

void ChatStream::finish(const QString& reason) {
  done_ = true;
  elapsedMs_ = clock_.elapsed();
  if (reply_) {
    reply_->disconnect(this);
    if (reply_->isRunning()) reply_->abort();
  }
  emit finished(reason);
}

void ChatStream::fail(const QString& message) {
  done_ = true;
  elapsedMs_ = clock_.elapsed();
  if (reply_) {
    reply_->disconnect(this);
    if (reply_->isRunning()) reply_->abort();
  }
  emit failed(message);
}
