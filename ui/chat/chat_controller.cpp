// ui/chat/chat_controller.cpp — conversation bookkeeping and the streaming reply state machine.
#include "ui/chat/chat_controller.h"

#include <QJsonArray>

#include "ui/client/chat_stream.h"
#include "ui/client/engine_client.h"
#include "ui/storage/conversation_store.h"

ChatController::ChatController(ConversationStore* store, EngineClient* client, QObject* parent)
    : QObject(parent), store_(store), client_(client), defaultSampling_(defaultSampling()) {
  persistTimer_.setInterval(1000);
  connect(&persistTimer_, &QTimer::timeout, this, &ChatController::persistStreaming);
  syncTimer_.setInterval(1000);
  connect(&syncTimer_, &QTimer::timeout, this, &ChatController::syncFromStore);
  connect(&conversations_, &ConversationListModel::titleEdited, this, [this](qint64 id, const QString& title) {
    StoredConversation c = id == current_.id ? current_ : store_->conversation(id);
    if (c.id == 0) return;
    c.title = title;
    if (id == current_.id) current_.title = title;
    store_->updateConversation(c);
  });
}

ChatController::~ChatController() {
  if (stream_) endReply(QStringLiteral("stopped"), true);
}

QString ChatController::speculativeNote(int accepted, int rejected) {
  const int guessed = accepted + rejected;
  if (guessed <= 0) return {};
  return tr("speculative decoding: %1 of %2 guessed tokens taken (%3%), %1 passes saved")
      .arg(accepted)
      .arg(guessed)
      .arg(qRound(100.0 * accepted / guessed));
}

QString ChatController::replanNote(const QJsonObject& replan) {
  QStringList lost;
  for (const QJsonValue& v : replan.value(QStringLiteral("lost")).toArray()) lost << v.toString();
  QStringList onto;
  for (const QJsonValue& v : replan.value(QStringLiteral("devices")).toArray()) onto << v.toString();
  const int atToken = replan.value(QStringLiteral("at_token")).toInt();
  const QString where = atToken > 0 ? tr("at token %1").arg(atToken) : tr("while reading the prompt");
  const double seconds = replan.value(QStringLiteral("ms")).toDouble() / 1000.0;
  QStringList full;
  for (const QJsonValue& v : replan.value(QStringLiteral("full")).toArray()) full << v.toString();
  QStringList what;
  if (!lost.isEmpty()) what << tr("%1 lost").arg(lost.join(QStringLiteral(", ")));
  if (!full.isEmpty()) what << tr("%1 out of memory").arg(full.join(QStringLiteral(", ")));
  if (what.isEmpty()) what << tr("a device lost");
  return tr("%1 %2; re-planned onto %3 in %4 s")
      .arg(what.join(QStringLiteral(", ")), where,
           onto.isEmpty() ? tr("the devices left") : onto.join(QStringLiteral(" + ")),
           QString::number(seconds, 'f', seconds < 0.1 ? 2 : 1));
}

QJsonObject ChatController::defaultSampling() {
  // Repeat penalty 1.1 as LM Studio has it: without it small models (SmolLM2) repeat a sentence.
  return QJsonObject{{QStringLiteral("temperature"), 0.7}, {QStringLiteral("top_p"), 0.9},
                     {QStringLiteral("max_tokens"), 1024}, {QStringLiteral("repeat_penalty"), 1.1}};
}

void ChatController::setDefaultSampling(const QJsonObject& s) {
  const bool untouchedDraft = current_.id == 0 && chat_.rowCount() == 0 && current_.sampling == defaultSampling_;
  defaultSampling_ = s;
  if (untouchedDraft && current_.sampling != s) {
    current_.sampling = s;
    emit settingsChanged();
  }
}

void ChatController::setSyncIntervalMs(int ms) {
  if (ms <= 0) return syncTimer_.stop();
  syncTimer_.start(ms);
}

bool ChatController::syncFromStore() {
  const qint64 version = store_->dataVersion();
  if (version < 0 || version == storeVersion_) return false;
  storeVersion_ = version;
  switching_ = true;  // a view's current row moving meanwhile is not a request to open another chat
  conversations_.setConversations(store_->conversations());
  if (current_.id == 0) conversations_.upsert(current_);  // the draft stays on top
  switching_ = false;
  if (current_.id != 0) {
    const StoredConversation c = store_->conversation(current_.id);
    if (c.id == 0) {  // deleted elsewhere
      if (stream_) stop();
      if (conversations_.rowCount() > 0) openConversation(conversations_.conversation(0).id);
      else newConversation();
      return true;
    }
    if (!stream_) {
      const QList<StoredMessage> stored = store_->messages(current_.id);
      // Messages added or removed elsewhere (a reply another window sent here): read again.
      if (stored.size() != chat_.rowCount()) chat_.setMessages(stored);
      if (c.title != current_.title || c.systemPrompt != current_.systemPrompt || c.sampling != current_.sampling) {
        current_.title = c.title;
        current_.systemPrompt = c.systemPrompt;
        if (!c.sampling.isEmpty()) current_.sampling = c.sampling;
        emit settingsChanged();
      }
    }
  }
  emit currentConversationChanged(current_.id);  // views select the open chat's row again
  return true;
}

void ChatController::loadConversations() {
  storeVersion_ = store_->dataVersion();
  if (!syncTimer_.isActive()) syncTimer_.start();
  const QList<StoredConversation> all = store_->conversations();
  conversations_.setConversations(all);
  if (!all.isEmpty()) openConversation(all.first().id);
  else newConversation();
}

void ChatController::newConversation() {
  if (stream_) stop();
  current_ = StoredConversation{};
  current_.title = tr("New chat");
  current_.systemPrompt = defaultSystemPrompt_;
  current_.sampling = defaultSampling_;
  chat_.setMessages({});
  conversations_.upsert(current_);  // a draft row (id 0) at the top, highlighted; stored on the first message
  emit currentConversationChanged(0);
  emit settingsChanged();
}

void ChatController::openConversation(qint64 id) {
  if (id == current_.id && id != 0) return;
  if (stream_) stop();
  const StoredConversation c = store_->conversation(id);
  if (c.id == 0 || switching_) return;
  {
    // The empty draft, if any, goes. A view whose current row it was may pick another row and ask
    // to open it meanwhile: ignored (currentConversationChanged below puts the view right).
    switching_ = true;
    conversations_.remove(0);
    switching_ = false;
  }
  current_ = c;
  if (current_.sampling.isEmpty()) current_.sampling = defaultSampling_;
  chat_.setMessages(store_->messages(id));
  emit currentConversationChanged(id);
  emit settingsChanged();
}

void ChatController::deleteConversation(qint64 id) {
  if (id == current_.id && stream_) stop();
  store_->deleteConversation(id);
  conversations_.remove(id);
  if (id == current_.id) {
    if (conversations_.rowCount() > 0) openConversation(conversations_.conversation(0).id);
    else newConversation();
  }
}

bool ChatController::ensureConversation(const QString& firstText) {
  if (current_.id != 0) return true;
  QString title = firstText.simplified();
  if (title.size() > 48) title = title.left(47) + QChar(0x2026);
  if (title.isEmpty()) title = tr("New chat");
  current_.title = title;
  current_.id = store_->createConversation(current_.title, current_.systemPrompt, current_.sampling);
  if (current_.id == 0) {
    emit storageError(store_->lastError());
    return false;
  }
  current_ = store_->conversation(current_.id);
  conversations_.replaceDraft(current_);  // the draft row becomes the stored conversation
  emit currentConversationChanged(current_.id);
  return true;
}

bool ChatController::send(const QString& text) {
  if (stream_ || text.trimmed().isEmpty()) return false;
  if (!ensureConversation(text)) return false;
  StoredMessage m;
  m.conversationId = current_.id;
  m.position = chat_.rowCount();
  m.role = QStringLiteral("user");
  m.content = text;
  m.id = store_->addMessage(m);  // stored before anything is sent
  if (m.id == 0) emit storageError(store_->lastError());
  chat_.appendMessage(m);
  startReply();
  return true;
}

bool ChatController::regenerate() {
  if (stream_) return false;
  int last = chat_.rowCount() - 1;
  if (last < 0) return false;
  if (chat_.message(last).role == QLatin1String("assistant")) {
    store_->deleteMessagesFrom(current_.id, chat_.message(last).position);
    chat_.removeFrom(last);
  }
  if (chat_.rowCount() == 0) return false;
  startReply();
  return true;
}

bool ChatController::editAndResend(int row, const QString& text) {
  if (stream_ || row < 0 || row >= chat_.rowCount() || text.trimmed().isEmpty()) return false;
  StoredMessage m = chat_.message(row);
  if (m.role != QLatin1String("user")) return false;
  store_->deleteMessagesFrom(current_.id, m.position + 1);
  chat_.removeFrom(row + 1);
  m.content = text;
  store_->updateMessage(m);
  chat_.setMessage(row, m);
  startReply();
  return true;
}

void ChatController::setSystemPrompt(const QString& prompt) {
  if (prompt == current_.systemPrompt) return;
  current_.systemPrompt = prompt;
  if (current_.id != 0) store_->updateConversation(current_);
  emit settingsChanged();
}

void ChatController::setSampling(const QJsonObject& sampling) {
  if (sampling == current_.sampling) return;
  current_.sampling = sampling;
  if (current_.id != 0) store_->updateConversation(current_);
  emit settingsChanged();
}

QJsonArray ChatController::requestMessages() const {
  QJsonArray out;
  if (!current_.systemPrompt.trimmed().isEmpty())
    out.append(QJsonObject{{QStringLiteral("role"), QStringLiteral("system")},
                           {QStringLiteral("content"), current_.systemPrompt}});
  for (const StoredMessage& m : chat_.messages()) {
    if (m.role == QLatin1String("assistant") && m.content.isEmpty()) continue;
    out.append(QJsonObject{{QStringLiteral("role"), m.role}, {QStringLiteral("content"), m.content}});
  }
  return out;
}

void ChatController::startReply() {
  const QJsonArray messages = requestMessages();
  StoredMessage reply;
  reply.conversationId = current_.id;
  reply.position = chat_.rowCount() > 0 ? chat_.message(chat_.rowCount() - 1).position + 1 : 0;
  reply.role = QStringLiteral("assistant");
  reply.complete = false;
  reply.id = store_->addMessage(reply);  // the reply row exists from the start; its text follows
  streamRow_ = chat_.appendMessage(reply);
  chat_.setStreaming(streamRow_, true);
  dirty_ = false;

  stream_ = client_->streamChat(messages, current_.sampling, this);
  connect(stream_, &ChatStream::contentDelta, this, [this](const QString& piece) {
    const bool first = chat_.message(streamRow_).content.isEmpty();
    chat_.appendContent(streamRow_, piece);
    dirty_ = true;
    if (first && stream_) emit firstToken(streamRow_, stream_->timeToFirstTokenMs());
  });
  connect(stream_, &ChatStream::promptProgress, this, [this](int processed, int total) {
    emit promptProgress(streamRow_, processed, total);
  });
  connect(stream_, &ChatStream::replanned, this, [this](const QJsonObject& replan) {
    StoredMessage m = chat_.message(streamRow_);
    const QString line = replanNote(replan);
    chat_.setNote(streamRow_, m.note.isEmpty() ? line : m.note + QLatin1Char('\n') + line);
    dirty_ = true;
  });
  connect(stream_, &ChatStream::finished, this, [this](const QString& reason) { endReply(reason, true); });
  connect(stream_, &ChatStream::failed, this, [this](const QString& message) {
    endReply(QStringLiteral("error: ") + message, false);
  });
  persistTimer_.start();
  emit streamingChanged(true);
  emit replyStarted(streamRow_);
}

void ChatController::persistStreaming() {
  if (!dirty_ || streamRow_ < 0) return;
  dirty_ = false;
  store_->updateMessage(chat_.message(streamRow_));
}

void ChatController::stop() {
  if (stream_) stream_->abort();  // emits finished("stopped") → endReply
}

void ChatController::endReply(const QString& finishReason, bool complete) {
  if (!stream_) return;
  ChatStream* s = stream_;
  stream_ = nullptr;
  persistTimer_.stop();
  const int row = streamRow_;
  streamRow_ = -1;
  StoredMessage m = chat_.message(row);
  m.content = s->text();
  m.complete = complete;
  m.finishReason = finishReason;
  m.tokens = s->completionTokens();
  m.tokensPerSecond = s->tokensPerSecond();
  m.ttftMs = s->timeToFirstTokenMs();
  const QString spec = speculativeNote(s->acceptedDraftTokens(), s->rejectedDraftTokens());
  if (!spec.isEmpty()) m.note = m.note.isEmpty() ? spec : m.note + QLatin1Char('\n') + spec;
  s->disconnect(this);
  s->deleteLater();
  if (!store_->updateMessage(m)) emit storageError(store_->lastError());
  chat_.setMessage(row, m);
  chat_.setStreaming(row, false);
  current_.updated = QDateTime::currentDateTime();
  conversations_.upsert(current_);
  emit streamingChanged(false);
  if (complete) emit replyFinished(row);
  else emit replyFailed(row, finishReason);
}
