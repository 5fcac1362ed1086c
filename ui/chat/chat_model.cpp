// ui/chat/chat_model.cpp — list model over StoredMessage rows.
#include "ui/chat/chat_model.h"

#include <QLocale>

ChatModel::ChatModel(QObject* parent) : QAbstractListModel(parent) {}

int ChatModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(messages_.size()); }

QString ChatModel::statsText(const StoredMessage& m) {
  if (m.role != QLatin1String("assistant")) return {};
  QStringList parts;
  if (m.tokens >= 0) parts << QObject::tr("%n tokens", nullptr, m.tokens);
  if (m.tokensPerSecond > 0) parts << QObject::tr("%1 tok/s").arg(m.tokensPerSecond, 0, 'f', 1);
  if (m.ttftMs >= 0) parts << QObject::tr("first token %1 ms").arg(m.ttftMs);
  if (m.finishReason == QLatin1String("length")) parts << QObject::tr("stopped at max tokens");
  else if (m.finishReason == QLatin1String("stopped")) parts << QObject::tr("stopped");
  else if (m.finishReason.startsWith(QLatin1String("error"))) parts << m.finishReason;
  return parts.join(QStringLiteral(" · "));
}

QVariant ChatModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const StoredMessage& m = messages_.at(index.row());
  switch (role) {
    case Qt::DisplayRole:
    case ContentRole: return m.content;
    case Qt::ToolTipRole: return statsText(m);
    case RoleRole: return m.role;
    case StreamingRole: return index.row() == streamingRow_;
    case CompleteRole: return m.complete;
    case TokensRole: return m.tokens;
    case TokensPerSecondRole: return m.tokensPerSecond;
    case TtftMsRole: return m.ttftMs;
    case FinishReasonRole: return m.finishReason;
    case StatsTextRole: return statsText(m);
    case MessageIdRole: return m.id;
    case NoteRole: return m.note;
    default: return {};
  }
}

QHash<int, QByteArray> ChatModel::roleNames() const {
  QHash<int, QByteArray> names = QAbstractListModel::roleNames();
  names.insert(RoleRole, "role");
  names.insert(ContentRole, "content");
  names.insert(StreamingRole, "streaming");
  names.insert(CompleteRole, "complete");
  names.insert(TokensRole, "tokens");
  names.insert(TokensPerSecondRole, "tokensPerSecond");
  names.insert(TtftMsRole, "ttftMs");
  names.insert(FinishReasonRole, "finishReason");
  names.insert(StatsTextRole, "statsText");
  names.insert(MessageIdRole, "messageId");
  names.insert(NoteRole, "note");
  return names;
}

void ChatModel::setMessages(const QList<StoredMessage>& messages) {
  beginResetModel();
  messages_ = messages;
  streamingRow_ = -1;
  endResetModel();
}

int ChatModel::appendMessage(const StoredMessage& message) {
  const int row = int(messages_.size());
  beginInsertRows({}, row, row);
  messages_.append(message);
  endInsertRows();
  return row;
}

void ChatModel::setMessage(int row, const StoredMessage& message) {
  if (row < 0 || row >= messages_.size()) return;
  messages_[row] = message;
  emit dataChanged(index(row), index(row));
}

void ChatModel::appendContent(int row, const QString& piece) {
  if (row < 0 || row >= messages_.size() || piece.isEmpty()) return;
  messages_[row].content += piece;
  emit dataChanged(index(row), index(row), {Qt::DisplayRole, ContentRole});
}

void ChatModel::setNote(int row, const QString& note) {
  if (row < 0 || row >= messages_.size() || messages_[row].note == note) return;
  messages_[row].note = note;
  emit dataChanged(index(row), index(row), {NoteRole});
}

void ChatModel::setStreaming(int row, bool streaming) {
  const int old = streamingRow_;
  streamingRow_ = streaming ? row : (row == streamingRow_ ? -1 : streamingRow_);
  if (old >= 0 && old < messages_.size() && old != streamingRow_) emit dataChanged(index(old), index(old), {StreamingRole});
  if (streamingRow_ >= 0 && streamingRow_ != old) emit dataChanged(index(streamingRow_), index(streamingRow_), {StreamingRole});
}

void ChatModel::removeFrom(int row) {
  if (row < 0 || row >= messages_.size()) return;
  beginRemoveRows({}, row, int(messages_.size()) - 1);
  messages_.erase(messages_.begin() + row, messages_.end());
  if (streamingRow_ >= row) streamingRow_ = -1;
  endRemoveRows();
}
