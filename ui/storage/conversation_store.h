// ui/storage/conversation_store.h — conversations and their messages in SQLite (Qt SQL), in the
// user's data folder. Every call commits at once (WAL journal), so an engine or GUI crash loses
// nothing that was stored. GUI thread only; each call is one small statement.
#pragma once

#include <QDateTime>
#include <QJsonObject>
#include <QList>
#include <QString>

struct StoredConversation {
  qint64 id = 0;
  QString title;
  QString systemPrompt;
  QJsonObject sampling;  // OpenAI fields: temperature, top_p, max_tokens, ...
  QDateTime created;
  QDateTime updated;
};

struct StoredMessage {
  qint64 id = 0;
  qint64 conversationId = 0;
  int position = 0;        // 0, 1, ... within the conversation
  QString role;            // "user" | "assistant"
  QString content;
  bool complete = true;    // false while streaming, or when the reply was cut off
  int tokens = -1;         // completion tokens of an assistant reply
  double tokensPerSecond = 0.0;
  qint64 ttftMs = -1;
  QString finishReason;    // "stop", "length", "stopped", "error: ..."
  QString note;            // what the engine went through meanwhile: "gpu1 lost at token 37; re-planned onto gpu0 + cpu in 0.4 s"
};

class ConversationStore {
 public:
  ConversationStore() = default;
  ~ConversationStore();
  ConversationStore(const ConversationStore&) = delete;
  ConversationStore& operator=(const ConversationStore&) = delete;

  // Opens (creating) the database; an empty path means <AppDataLocation>/strata.sqlite3.
  bool open(const QString& path = {});
  bool isOpen() const { return !connection_.isEmpty(); }
  QString path() const { return path_; }
  QString lastError() const { return lastError_; }
  static QString defaultPath();

  QList<StoredConversation> conversations() const;  // most recently updated first
  StoredConversation conversation(qint64 id) const;
  qint64 createConversation(const QString& title, const QString& systemPrompt, const QJsonObject& sampling);
  bool updateConversation(const StoredConversation& c);  // title, system prompt, sampling
  bool deleteConversation(qint64 id);                     // and its messages
  // Conversations whose title or any message contains `text` (case-insensitive for ASCII).
  QList<qint64> searchConversations(const QString& text) const;

  QList<StoredMessage> messages(qint64 conversationId) const;  // by position
  qint64 addMessage(const StoredMessage& m);                   // returns the new id (0 on error)
  bool updateMessage(const StoredMessage& m);                  // content, complete, stats
  bool deleteMessagesFrom(qint64 conversationId, int position);  // position and after
  int messageCount() const;                                     // all conversations
  // SQLite's PRAGMA data_version: changes when another connection (another window, another
  // process) has committed to the database since the last call; -1 when closed. Cheap: for polling.
  qint64 dataVersion() const;

 private:
  bool exec(const QString& sql);
  bool addNoteColumn();
  void touch(qint64 conversationId);

  QString connection_;
  QString path_;
  mutable QString lastError_;
};
