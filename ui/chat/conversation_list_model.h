// ui/chat/conversation_list_model.h — the conversations sidebar: one row per stored conversation,
// most recent first; titles are editable in place (the controller stores the new title).
#pragma once

#include <QAbstractListModel>
#include <QList>

#include "ui/storage/conversation_store.h"

class ConversationListModel : public QAbstractListModel {
  Q_OBJECT
 public:
  enum Roles {
    IdRole = Qt::UserRole + 1,  // qint64
    TitleRole,                  // QString
    SystemPromptRole,           // QString
    UpdatedRole,                // QDateTime
  };
  Q_ENUM(Roles)

  explicit ConversationListModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QHash<int, QByteArray> roleNames() const override;

  void setConversations(const QList<StoredConversation>& conversations);
  void upsert(const StoredConversation& conversation);  // inserts or updates, then moves it to the top
  void remove(qint64 id);
  // The draft row (id 0, a new chat not stored yet) becomes `c` in place (no row removed, so a
  // view's current row stays); without a draft row, as upsert.
  void replaceDraft(const StoredConversation& c);
  int rowOf(qint64 id) const;
  StoredConversation conversation(int row) const { return items_.value(row); }

 signals:
  void titleEdited(qint64 id, const QString& title);

 private:
  QList<StoredConversation> items_;
};
