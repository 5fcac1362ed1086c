// ui/client/engine_result.h — the outcome of one HTTP request to the engine: status, JSON body,
// and an error text (OpenAI-style error message, or the network error) when it failed.
#pragma once

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>

struct EngineResult {
  int httpStatus = 0;   // 0 when no HTTP answer came (connection refused, aborted, timeout)
  QJsonDocument json;   // the parsed body, null when it was not JSON
  QByteArray body;      // the raw body
  QString error;        // empty on success

  bool ok() const { return error.isEmpty() && httpStatus >= 200 && httpStatus < 300; }
  QJsonObject object() const { return json.object(); }
};
