// ui/chat/chat_controller.h — the chat's logic: conversations (open, new, delete), send, stop,
// regenerate, edit-and-resend, per-conversation system prompt and sampling. It streams replies
// through EngineClient into ChatModel and stores every message in ConversationStore as it goes.
#pragma once

#include <QJsonObject>
#include <QObject>
#include <QPointer>
#include <QTimer>

#include "ui/chat/chat_model.h"
#include "ui/chat/conversation_list_model.h"
#include "ui/client/chat_stream.h"

class ConversationStore;
class EngineClient;

class ChatController : public QObject {
  Q_OBJECT
 public:
  ChatController(ConversationStore* store, EngineClient* client, QObject* parent = nullptr);
  ~ChatController() override;

  ChatModel* chatModel() { return &chat_; }
  ConversationListModel* conversationModel() { return &conversations_; }

  static QJsonObject defaultSampling();   // temperature 0.7, top_p 0.9, max_tokens 1024, repeat_penalty 1.1
  // The line under a reply that lived through a re-plan, from the stream's "replan" object:
  // "gpu1 lost at token 37; re-planned onto gpu0 + cpu in 0.4 s".
  static QString replanNote(const QJsonObject& replan);
  // The line under a reply that speculated: "speculative decoding: 31 of 72 guessed tokens taken
  // (43%), 31 passes saved"; empty when nothing was guessed.
  static QString speculativeNote(int accepted, int rejected);
  // New chats start with it; so does the open draft (no message yet) when it still has the old default.
  void setDefaultSampling(const QJsonObject& s);
  void setDefaultSystemPrompt(const QString& s) { defaultSystemPrompt_ = s; }

  // Reads the stored conversations and opens the most recent one (none: an empty new chat).
  void loadConversations();
  qint64 currentConversation() const { return current_.id; }
  QString systemPrompt() const { return current_.systemPrompt; }
  QJsonObject sampling() const { return current_.sampling; }

  bool isStreaming() const { return stream_ != nullptr; }
  ChatStream* activeStream() const { return stream_; }
  // How often a streaming reply's text is written to the store (it is also written at the end).
  void setPersistIntervalMs(int ms) { persistTimer_.setInterval(ms); }
  // Other windows (or processes) writing the same database: every `ms` the store is asked whether
  // another connection committed (syncFromStore); 0 stops. Started at 1 s by loadConversations.
  void setSyncIntervalMs(int ms);
  // Takes what another connection committed: conversations added, renamed or deleted appear in the
  // list; the open conversation's messages are re-read when not streaming here. True when it did.
  bool syncFromStore();

 public slots:
  void newConversation();
  void openConversation(qint64 id);
  void deleteConversation(qint64 id);
  bool send(const QString& text);              // false when empty or a reply is streaming
  void stop();
  bool regenerate();                           // replaces the last assistant reply
  bool editAndResend(int row, const QString& text);  // row: a user message; later rows are dropped
  void setSystemPrompt(const QString& prompt);
  void setSampling(const QJsonObject& sampling);

 signals:
  void streamingChanged(bool streaming);
  void replyStarted(int row);
  void promptProgress(int row, int processed, int total);  // the engine is still reading the prompt
  void replyFinished(int row);
  void firstToken(int row, qint64 ttftMs);  // the reply's first text arrived, ttftMs after sending
  void replyFailed(int row, const QString& message);
  void currentConversationChanged(qint64 id);
  void settingsChanged();       // system prompt or sampling of the current conversation
  void storageError(const QString& message);

 private:
  bool ensureConversation(const QString& firstText);
  void startReply();
  void persistStreaming();
  void endReply(const QString& finishReason, bool complete);
  QJsonArray requestMessages() const;

  ConversationStore* store_;
  EngineClient* client_;
  ChatModel chat_;
  ConversationListModel conversations_;
  StoredConversation current_;
  QJsonObject defaultSampling_;
  QString defaultSystemPrompt_;
  QPointer<ChatStream> stream_;
  int streamRow_ = -1;
  bool switching_ = false;  // removing the draft row in openConversation
  bool dirty_ = false;
  QTimer persistTimer_;
  QTimer syncTimer_;
  qint64 storeVersion_ = -1;  // the store's data_version last seen
};
