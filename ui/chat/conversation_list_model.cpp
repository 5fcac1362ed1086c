// ui/chat/conversation_list_model.cpp — list model over StoredConversation rows.
#include "ui/chat/conversation_list_model.h"

ConversationListModel::ConversationListModel(QObject* parent) : QAbstractListModel(parent) {}

int ConversationListModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(items_.size()); }

QVariant ConversationListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const StoredConversation& c = items_.at(index.row());
  switch (role) {
    case Qt::DisplayRole:
    case Qt::EditRole:
    case TitleRole: return c.title;
    case Qt::ToolTipRole: return c.updated.toString(Qt::ISODate);
    case IdRole: return c.id;
    case SystemPromptRole: return c.systemPrompt;
    case UpdatedRole: return c.updated;
    default: return {};
  }
}

bool ConversationListModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return false;
  if (role != Qt::EditRole && role != TitleRole) return false;
  const QString title = value.toString().trimmed();
  if (title.isEmpty()) return false;
  StoredConversation& c = items_[index.row()];
  if (c.title == title) return true;
  c.title = title;
  emit dataChanged(index, index, {Qt::DisplayRole, Qt::EditRole, TitleRole});
  emit titleEdited(c.id, title);
  return true;
}

Qt::ItemFlags ConversationListModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags f = QAbstractListModel::flags(index);
  if (index.isValid()) f |= Qt::ItemIsEditable;
  return f;
}

QHash<int, QByteArray> ConversationListModel::roleNames() const {
  QHash<int, QByteArray> names = QAbstractListModel::roleNames();
  names.insert(IdRole, "conversationId");
  names.insert(TitleRole, "title");
  names.insert(SystemPromptRole, "systemPrompt");
  names.insert(UpdatedRole, "updated");
  return names;
}

void ConversationListModel::setConversations(const QList<StoredConversation>& conversations) {
  beginResetModel();
  items_ = conversations;
  endResetModel();
}

int ConversationListModel::rowOf(qint64 id) const {
  for (int i = 0; i < items_.size(); ++i)
    if (items_.at(i).id == id) return i;
  return -1;
}

void ConversationListModel::upsert(const StoredConversation& conversation) {
  int row = rowOf(conversation.id);
  if (row < 0) {
    beginInsertRows({}, 0, 0);
    items_.prepend(conversation);
    endInsertRows();
    return;
  }
  items_[row] = conversation;
  emit dataChanged(index(row), index(row));
  if (row > 0) {
    beginMoveRows({}, row, row, {}, 0);
    items_.move(row, 0);
    endMoveRows();
  }
}

void ConversationListModel::replaceDraft(const StoredConversation& c) {
  const int row = rowOf(0);
  if (row < 0) return upsert(c);
  items_[row] = c;
  emit dataChanged(index(row), index(row));
  upsert(c);  // to the top, if it was not there
}

void ConversationListModel::remove(qint64 id) {
  const int row = rowOf(id);
  if (row < 0) return;
  beginRemoveRows({}, row, row);
  items_.removeAt(row);
  endRemoveRows();
}
