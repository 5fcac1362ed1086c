// ui/storage/conversation_store.cpp — schema, queries and row mapping for ConversationStore.
#include "ui/storage/conversation_store.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QUuid>

namespace {
QJsonObject parseObject(const QString& text) { return QJsonDocument::fromJson(text.toUtf8()).object(); }
QString toText(const QJsonObject& o) { return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact)); }
qint64 nowMs() { return QDateTime::currentMSecsSinceEpoch(); }
// A null QString binds as SQL NULL; the text columns are NOT NULL, so bind "" instead.
QString text(const QString& s) { return s.isNull() ? QStringLiteral("") : s; }
}  // namespace

ConversationStore::~ConversationStore() {
  if (connection_.isEmpty()) return;
  { QSqlDatabase::database(connection_).close(); }
  QSqlDatabase::removeDatabase(connection_);
}

QString ConversationStore::defaultPath() {
  return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/strata.sqlite3");
}

bool ConversationStore::open(const QString& path) {
  path_ = path.isEmpty() ? defaultPath() : path;
  QDir().mkpath(QFileInfo(path_).absolutePath());
  connection_ = QStringLiteral("strata-store-") + QUuid::createUuid().toString(QUuid::WithoutBraces);
  QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), connection_);
  db.setDatabaseName(path_);
  if (!db.open()) {
    lastError_ = db.lastError().text();
    db = QSqlDatabase();
    QSqlDatabase::removeDatabase(connection_);
    connection_.clear();
    return false;
  }
  // WAL + NORMAL: a commit survives a crash of this process without an fsync on the GUI thread.
  return exec(QStringLiteral("PRAGMA journal_mode=WAL")) && exec(QStringLiteral("PRAGMA synchronous=NORMAL")) &&
         exec(QStringLiteral("PRAGMA foreign_keys=ON")) &&
         exec(QStringLiteral("CREATE TABLE IF NOT EXISTS conversations ("
                             " id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, system_prompt TEXT NOT NULL,"
                             " sampling TEXT NOT NULL, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL)")) &&
         exec(QStringLiteral("CREATE TABLE IF NOT EXISTS messages ("
                             " id INTEGER PRIMARY KEY AUTOINCREMENT,"
                             " conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"
                             " position INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL,"
                             " complete INTEGER NOT NULL, tokens INTEGER NOT NULL, tokens_per_s REAL NOT NULL,"
                             " ttft_ms INTEGER NOT NULL, finish_reason TEXT NOT NULL, created_ms INTEGER NOT NULL)")) &&
         exec(QStringLiteral("CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages(conversation_id, position)")) &&
         addNoteColumn();
}

// Stores made before messages had a note get the column (empty for their rows).
bool ConversationStore::addNoteColumn() {
  QSqlQuery q(QSqlDatabase::database(connection_));
  if (!q.exec(QStringLiteral("PRAGMA table_info(messages)"))) {
    lastError_ = q.lastError().text();
    return false;
  }
  while (q.next()) {
    if (q.value(1).toString() == QLatin1String("note")) return true;
  }
  return exec(QStringLiteral("ALTER TABLE messages ADD COLUMN note TEXT NOT NULL DEFAULT ''"));
}

qint64 ConversationStore::dataVersion() const {
  if (!isOpen()) return -1;
  QSqlQuery q(QSqlDatabase::database(connection_));
  if (!q.exec(QStringLiteral("PRAGMA data_version")) || !q.next()) {
    lastError_ = q.lastError().text();
    return -1;
  }
  return q.value(0).toLongLong();
}

bool ConversationStore::exec(const QString& sql) {
  QSqlQuery q(QSqlDatabase::database(connection_));
  if (q.exec(sql)) return true;
  lastError_ = q.lastError().text() + QStringLiteral(" (") + sql + QStringLiteral(")");
  return false;
}

void ConversationStore::touch(qint64 conversationId) {
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare(QStringLiteral("UPDATE conversations SET updated_ms = ? WHERE id = ?"));
  q.addBindValue(nowMs());
  q.addBindValue(conversationId);
  q.exec();
}

QList<StoredConversation> ConversationStore::conversations() const {
  QList<StoredConversation> out;
  if (connection_.isEmpty()) return out;
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.exec(QStringLiteral("SELECT id, title, system_prompt, sampling, created_ms, updated_ms FROM conversations"
                        " ORDER BY updated_ms DESC, id DESC"));
  while (q.next()) {
    StoredConversation c;
    c.id = q.value(0).toLongLong();
    c.title = q.value(1).toString();
    c.systemPrompt = q.value(2).toString();
    c.sampling = parseObject(q.value(3).toString());
    c.created = QDateTime::fromMSecsSinceEpoch(q.value(4).toLongLong());
    c.updated = QDateTime::fromMSecsSinceEpoch(q.value(5).toLongLong());
    out.append(c);
  }
  return out;
}

StoredConversation ConversationStore::conversation(qint64 id) const {
  for (const StoredConversation& c : conversations())
    if (c.id == id) return c;
  return {};
}

qint64 ConversationStore::createConversation(const QString& title, const QString& systemPrompt,
                                             const QJsonObject& sampling) {
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare(QStringLiteral("INSERT INTO conversations (title, system_prompt, sampling, created_ms, updated_ms)"
                           " VALUES (?, ?, ?, ?, ?)"));
  const qint64 now = nowMs();
  q.addBindValue(text(title));
  q.addBindValue(text(systemPrompt));
  q.addBindValue(toText(sampling));
  q.addBindValue(now);
  q.addBindValue(now);
  if (!q.exec()) {
    lastError_ = q.lastError().text();
    return 0;
  }
  return q.lastInsertId().toLongLong();
}

bool ConversationStore::updateConversation(const StoredConversation& c) {
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare(QStringLiteral("UPDATE conversations SET title = ?, system_prompt = ?, sampling = ?, updated_ms = ? WHERE id = ?"));
  q.addBindValue(text(c.title));
  q.addBindValue(text(c.systemPrompt));
  q.addBindValue(toText(c.sampling));
  q.addBindValue(nowMs());
  q.addBindValue(c.id);
  if (q.exec()) return true;
  lastError_ = q.lastError().text();
  return false;
}

bool ConversationStore::deleteConversation(qint64 id) {
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare(QStringLiteral("DELETE FROM messages WHERE conversation_id = ?"));
  q.addBindValue(id);
  if (!q.exec()) return false;
  q.prepare(QStringLiteral("DELETE FROM conversations WHERE id = ?"));
  q.addBindValue(id);
  return q.exec();
}

QList<qint64> ConversationStore::searchConversations(const QString& text) const {
  QList<qint64> out;
  if (connection_.isEmpty()) return out;
  QString pattern = text;
  pattern.replace(QLatin1Char('\\'), QStringLiteral("\\\\")).replace(QLatin1Char('%'), QStringLiteral("\\%"))
      .replace(QLatin1Char('_'), QStringLiteral("\\_"));
  pattern = QLatin1Char('%') + pattern + QLatin1Char('%');
  QSqlQuery q(QSqlDatabase::database(connection_));
  // LIKE ignores ASCII case in SQLite; most recently updated first, as conversations().
  q.prepare(QStringLiteral("SELECT id FROM conversations WHERE title LIKE ? ESCAPE '\\' OR id IN"
                           " (SELECT conversation_id FROM messages WHERE content LIKE ? ESCAPE '\\')"
                           " ORDER BY updated_ms DESC, id DESC"));
  q.addBindValue(pattern);
  q.addBindValue(pattern);
  if (!q.exec()) lastError_ = q.lastError().text();
  while (q.next()) out.append(q.value(0).toLongLong());
  return out;
}

QList<StoredMessage> ConversationStore::messages(qint64 conversationId) const {
  QList<StoredMessage> out;
  if (connection_.isEmpty()) return out;
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare(QStringLiteral("SELECT id, position, role, content, complete, tokens, tokens_per_s, ttft_ms, finish_reason,"
                           " note FROM messages WHERE conversation_id = ? ORDER BY position, id"));
  q.addBindValue(conversationId);
  q.exec();
  while (q.next()) {
    StoredMessage m;
    m.id = q.value(0).toLongLong();
    m.conversationId = conversationId;
    m.position = q.value(1).toInt();
    m.role = q.value(2).toString();
    m.content = q.value(3).toString();
    m.complete = q.value(4).toBool();
    m.tokens = q.value(5).toInt();
    m.tokensPerSecond = q.value(6).toDouble();
    m.ttftMs = q.value(7).toLongLong();
    m.finishReason = q.value(8).toString();
    m.note = q.value(9).toString();
    out.append(m);
  }
  return out;
}

qint64 ConversationStore::addMessage(const StoredMessage& m) {
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare(QStringLiteral("INSERT INTO messages (conversation_id, position, role, content, complete, tokens,"
                           " tokens_per_s, ttft_ms, finish_reason, note, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  q.addBindValue(m.conversationId);
  q.addBindValue(m.position);
  q.addBindValue(text(m.role));
  q.addBindValue(text(m.content));
  q.addBindValue(m.complete ? 1 : 0);
  q.addBindValue(m.tokens);
  q.addBindValue(m.tokensPerSecond);
  q.addBindValue(m.ttftMs);
  q.addBindValue(text(m.finishReason));
  q.addBindValue(text(m.note));
  q.addBindValue(nowMs());
  if (!q.exec()) {
    lastError_ = q.lastError().text();
    return 0;
  }
  touch(m.conversationId);
  return q.lastInsertId().toLongLong();
}

bool ConversationStore::updateMessage(const StoredMessage& m) {
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare(QStringLiteral("UPDATE messages SET content = ?, complete = ?, tokens = ?, tokens_per_s = ?, ttft_ms = ?,"
                           " finish_reason = ?, note = ? WHERE id = ?"));
  q.addBindValue(text(m.content));
  q.addBindValue(m.complete ? 1 : 0);
  q.addBindValue(m.tokens);
  q.addBindValue(m.tokensPerSecond);
  q.addBindValue(m.ttftMs);
  q.addBindValue(text(m.finishReason));
  q.addBindValue(text(m.note));
  q.addBindValue(m.id);
  if (q.exec()) return true;
  lastError_ = q.lastError().text();
  return false;
}

bool ConversationStore::deleteMessagesFrom(qint64 conversationId, int position) {
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare(QStringLiteral("DELETE FROM messages WHERE conversation_id = ? AND position >= ?"));
  q.addBindValue(conversationId);
  q.addBindValue(position);
  if (!q.exec()) {
    lastError_ = q.lastError().text();
    return false;
  }
  touch(conversationId);
  return true;
}

int ConversationStore::messageCount() const {
  QSqlQuery q(QSqlDatabase::database(connection_));
  if (!q.exec(QStringLiteral("SELECT COUNT(*) FROM messages")) || !q.next()) return -1;
  return q.value(0).toInt();
}
