// ui/client/engine_client.h — the GUI's only way to the engine: HTTP requests on the GUI thread
// (QNetworkAccessManager), typed control-API calls with results as signals, chat streams, and
// the live trace stream. Results of superseded requests and of a previous engine are dropped.
#pragma once

#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QNetworkRequest>
#include <QObject>
#include <QPointer>
#include <QTimer>
#include <QUrl>
#include <functional>

#include "ui/client/engine_result.h"
#include "ui/client/sse_parser.h"

class QNetworkAccessManager;
class QNetworkReply;
class ChatStream;

class EngineClient : public QObject {
  Q_OBJECT
 public:
  using Callback = std::function<void(const EngineResult&)>;

  explicit EngineClient(QObject* parent = nullptr);
  ~EngineClient() override;

  // Points the client at an engine ("http://127.0.0.1:PORT", key may be empty). Every request
  // in flight to the previous endpoint is aborted and its result dropped.
  void setEndpoint(const QUrl& baseUrl, const QString& apiKey);
  QUrl baseUrl() const { return baseUrl_; }
  QString apiKey() const { return apiKey_; }
  bool hasEndpoint() const { return baseUrl_.isValid() && !baseUrl_.isEmpty(); }

  // One request. `body` is sent as JSON unless it is undefined. `cb` runs on the GUI thread
  // unless `context` is gone. A non-empty `channel` makes this request supersede (abort, drop)
  // the one before it on the same channel: only the latest answer is delivered.
  void send(const QByteArray& verb, const QString& path, const QJsonValue& body, QObject* context,
            Callback cb, const QString& channel = {}, int timeoutMs = 30000);

  // Control API; answers come as the signals below, failures as requestFailed(operation, message).
  void fetchStatus();
  void fetchDevices();
  void fetchPlacement();
  void applyPlacement(const QJsonObject& placement);
  void plan(const QString& goal, int nCtx, int nSeq);     // goal: fit | balance | fewest-transfers
  // POST /strata/v1/devices/ID/fault (simulated devices; the engine needs an API key): fault is
  // {"kind":"lost"|"hang"|"oom"|"slow", ...} as in docs/api.md. Answers faultInjected.
  void injectFault(const QString& deviceId, const QJsonObject& fault);
  void loadModel(const QString& path, const QJsonValue& placement, int nCtx);
  void unloadModel();
  void fetchTraceJson(int seconds, QObject* context, Callback cb);
  // POST /strata/v1/models/inspect {"path", "n_ctx"} (nCtx <= 0: the model's own context): what a
  // GGUF file holds and the memory it needs, without loading it. `cb` gets the engine's answer
  // ({path, file_bytes, architecture, parameters, types, runnable, error?, name, n_layers, n_ctx_train,
  // n_embd, n_ctx, memory{weights, kv, scratch, total}}) on the GUI thread unless `context` is gone.
  // Not superseded: each call gets its answer.
  void inspectModel(const QString& path, int nCtx, QObject* context, Callback cb);

  // POST /v1/chat/completions with "stream": true. `sampling` holds the OpenAI fields
  // (temperature, top_p, max_tokens, ...). The stream is owned by `parent`.
  ChatStream* streamChat(const QJsonArray& messages, const QJsonObject& sampling, QObject* parent);

  // GET /strata/v1/trace/stream, reconnected after a drop while wanted.
  void startTraceStream();
  void stopTraceStream();
  bool traceStreamWanted() const { return traceWanted_; }

  int requestsInFlight() const { return inFlight_; }

 signals:
  void statusReceived(const QJsonObject& status);
  void devicesReceived(const QJsonArray& devices);
  void placementReceived(const QJsonObject& placement);
  void placementApplied(const QJsonObject& result);     // {moved_layers, placement, memory}
  void planReceived(const QJsonObject& plan);           // {placement, memory, cost, explanation}
  void modelLoaded(const QJsonObject& status);
  void modelUnloaded();
  void requestFailed(const QString& operation, const QString& message);
  void traceBatch(const QJsonObject& batch);
  // The trace stream's "strata.replan" event: a lost device and the re-plan that followed
  // ({time_ns, ok, lost, excluded, cause, moved_blocks, ms, placement, error}; docs/api.md).
  void replanned(const QJsonObject& record);
  void faultInjected(const QString& deviceId, const QString& kind);
  void traceStreamConnected(bool connected);
  void endpointChanged();

 private:
  QNetworkRequest makeRequest(const QString& path) const;
  void openTraceStream();
  void closeTraceStream();

  QNetworkAccessManager* nam_;
  QUrl baseUrl_;
  QString apiKey_;
  int generation_ = 0;                       // bumped by setEndpoint
  QHash<QString, QPointer<QNetworkReply>> channels_;
  int inFlight_ = 0;

  bool traceWanted_ = false;
  QPointer<QNetworkReply> traceReply_;
  SseParser traceParser_;
  QTimer traceRetry_;
};
