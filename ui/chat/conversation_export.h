// ui/chat/conversation_export.h — one conversation as Markdown (to read or paste) or JSON (to keep
// or process: the conversation, its settings and every message with its figures). Pure functions.
#pragma once

#include <QJsonObject>
#include <QList>
#include <QString>

#include "ui/storage/conversation_store.h"

// "# Title\n\n**System:** …\n\n## You\n\n…\n\n## Strata\n\n…\n\n*12 tokens · 40.0 tok/s*\n"
QString conversationMarkdown(const StoredConversation& conversation, const QList<StoredMessage>& messages);
// {"title","system_prompt","sampling","created","updated","messages":[{"role","content","complete",
//  "finish_reason","tokens","tokens_per_s","ttft_ms"}]} (times ISO 8601 UTC; figures only where known).
QJsonObject conversationJson(const StoredConversation& conversation, const QList<StoredMessage>& messages);
// Writes Markdown for *.md / *.markdown, JSON otherwise. False with *error.
bool exportConversation(const QString& path, const StoredConversation& conversation,
                        const QList<StoredMessage>& messages, QString* error = nullptr);
