// ui/chat/conversation_export.cpp — Markdown and JSON of a conversation, and writing them to a file.
#include "ui/chat/conversation_export.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>

QString conversationMarkdown(const StoredConversation& c, const QList<StoredMessage>& messages) {
  QString out = QStringLiteral("# %1\n\n").arg(c.title.isEmpty() ? QStringLiteral("Chat") : c.title);
  if (!c.systemPrompt.isEmpty()) out += QStringLiteral("**System:** %1\n\n").arg(c.systemPrompt);
  for (const StoredMessage& m : messages) {
    const QString who = m.role == QLatin1String("assistant") ? QStringLiteral("Strata")
                        : m.role == QLatin1String("user")    ? QStringLiteral("You")
                                                             : m.role;
    out += QStringLiteral("## %1\n\n%2\n\n").arg(who, m.content.trimmed());
    if (m.role == QLatin1String("assistant") && m.tokens > 0)
      out += QStringLiteral("*%1 tokens · %2 tok/s*\n\n").arg(m.tokens).arg(m.tokensPerSecond, 0, 'f', 1);
  }
  out.chop(1);  // one newline at the end
  return out;
}

QJsonObject conversationJson(const StoredConversation& c, const QList<StoredMessage>& messages) {
  QJsonArray list;
  for (const StoredMessage& m : messages) {
    QJsonObject o{{QStringLiteral("role"), m.role},
                  {QStringLiteral("content"), m.content},
                  {QStringLiteral("complete"), m.complete}};
    if (!m.finishReason.isEmpty()) o.insert(QStringLiteral("finish_reason"), m.finishReason);
    if (m.tokens >= 0) o.insert(QStringLiteral("tokens"), m.tokens);
    if (m.tokensPerSecond > 0) o.insert(QStringLiteral("tokens_per_s"), m.tokensPerSecond);
    if (m.ttftMs >= 0) o.insert(QStringLiteral("ttft_ms"), m.ttftMs);
    list.append(o);
  }
  QJsonObject out{{QStringLiteral("title"), c.title},
                  {QStringLiteral("system_prompt"), c.systemPrompt},
                  {QStringLiteral("sampling"), c.sampling},
                  {QStringLiteral("messages"), list}};
  if (c.created.isValid()) out.insert(QStringLiteral("created"), c.created.toUTC().toString(Qt::ISODate));
  if (c.updated.isValid()) out.insert(QStringLiteral("updated"), c.updated.toUTC().toString(Qt::ISODate));
  return out;
}

bool exportConversation(const QString& path, const StoredConversation& c, const QList<StoredMessage>& messages,
                        QString* error) {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
    if (error) *error = QStringLiteral("cannot write '%1': %2").arg(path, f.errorString());
    return false;
  }
  const bool markdown = path.endsWith(QLatin1String(".md"), Qt::CaseInsensitive) ||
                        path.endsWith(QLatin1String(".markdown"), Qt::CaseInsensitive);
  const QByteArray bytes = markdown ? conversationMarkdown(c, messages).toUtf8()
                                    : QJsonDocument(conversationJson(c, messages)).toJson(QJsonDocument::Indented);
  if (f.write(bytes) != bytes.size()) {
    if (error) *error = QStringLiteral("cannot write '%1': %2").arg(path, f.errorString());
    return false;
  }
  return true;
}
