// ui/chat/chat_model.h — the messages of the open conversation, as a list model. Changed only on
// the GUI thread by ChatController; the view and tests read it through the Roles below.
#pragma once

#include <QAbstractListModel>
#include <QList>

#include "ui/storage/conversation_store.h"

class ChatModel : public QAbstractListModel {
  Q_OBJECT
 public:
  enum Roles {
    RoleRole = Qt::UserRole + 1,  // "user" | "assistant"
    ContentRole,                  // raw Markdown text
    StreamingRole,                // bool: this reply is being streamed now
    CompleteRole,                 // bool: the message ended normally
    TokensRole,                   // int: completion tokens (-1: unknown)
    TokensPerSecondRole,          // double
    TtftMsRole,                   // qint64: time to first token (-1: unknown)
    FinishReasonRole,             // "stop", "length", "stopped", "error: ..."
    StatsTextRole,                // "212 tokens · 41.3 tok/s · first token 180 ms"
    MessageIdRole,                // qint64 row id in the store
    NoteRole,                     // "gpu1 lost at token 37; re-planned onto gpu0 + cpu in 0.4 s" ("" for none)
  };
  Q_ENUM(Roles)

  explicit ChatModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QHash<int, QByteArray> roleNames() const override;

  void setMessages(const QList<StoredMessage>& messages);
  int appendMessage(const StoredMessage& message);          // returns its row
  void setMessage(int row, const StoredMessage& message);   // replaces the row's data
  void appendContent(int row, const QString& piece);        // streaming
  void setNote(int row, const QString& note);               // streaming: what the engine went through
  void setStreaming(int row, bool streaming);
  void removeFrom(int row);                                 // row and all after it
  StoredMessage message(int row) const { return messages_.value(row); }
  QList<StoredMessage> messages() const { return messages_; }
  int streamingRow() const { return streamingRow_; }

  static QString statsText(const StoredMessage& m);

 private:
  QList<StoredMessage> messages_;
  int streamingRow_ = -1;
};
