// ui/client/engine_client.cpp — requests, JSON and error decoding, channel supersession, trace SSE.
#include "ui/client/engine_client.h"

#include <QNetworkAccessManager>
#include <QNetworkReply>

#include "ui/client/chat_stream.h"

namespace {
QString errorMessage(QNetworkReply* reply, const QJsonDocument& json, int status) {
  const QString msg = json.object().value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString();
  if (!msg.isEmpty()) return msg;
  if (status >= 400) return QStringLiteral("engine answered HTTP %1").arg(status);
  return reply->errorString();
}
}  // namespace

EngineClient::EngineClient(QObject* parent) : QObject(parent), nam_(new QNetworkAccessManager(this)) {
  traceRetry_.setSingleShot(true);
  traceRetry_.setInterval(1000);
  connect(&traceRetry_, &QTimer::timeout, this, &EngineClient::openTraceStream);
}

EngineClient::~EngineClient() { closeTraceStream(); }

void EngineClient::setEndpoint(const QUrl& baseUrl, const QString& apiKey) {
  ++generation_;
  for (auto& r : channels_)
    if (r) r->abort();
  channels_.clear();
  closeTraceStream();
  baseUrl_ = baseUrl;
  apiKey_ = apiKey;
  emit endpointChanged();
  if (traceWanted_) openTraceStream();
}

QNetworkRequest EngineClient::makeRequest(const QString& path) const {
  QUrl url = baseUrl_;
  const QString base = url.path().endsWith('/') ? url.path().chopped(1) : url.path();
  const qsizetype q = path.indexOf('?');
  url.setPath(base + (q < 0 ? path : path.left(q)));
  if (q >= 0) url.setQuery(path.mid(q + 1));
  QNetworkRequest req(url);
  req.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
  if (!apiKey_.isEmpty()) req.setRawHeader("Authorization", "Bearer " + apiKey_.toUtf8());
  req.setAttribute(QNetworkRequest::Http2AllowedAttribute, false);
  return req;
}

void EngineClient::send(const QByteArray& verb, const QString& path, const QJsonValue& body, QObject* context,
                        Callback cb, const QString& channel, int timeoutMs) {
  QPointer<QObject> ctx(context);
  const bool hadContext = context != nullptr;
  if (!hasEndpoint()) {
    EngineResult r;
    r.error = QStringLiteral("no engine");
    QTimer::singleShot(0, this, [ctx, hadContext, cb, r] {
      if (!hadContext || ctx) cb(r);
    });
    return;
  }
  QNetworkRequest req = makeRequest(path);
  req.setTransferTimeout(timeoutMs);
  QByteArray payload;
  if (!body.isUndefined()) {
    payload = body.isObject() ? QJsonDocument(body.toObject()).toJson(QJsonDocument::Compact)
                              : QJsonDocument(body.toArray()).toJson(QJsonDocument::Compact);
  }
  QNetworkReply* reply = nam_->sendCustomRequest(req, verb, payload);
  ++inFlight_;
  if (!channel.isEmpty()) {
    QPointer<QNetworkReply> old = channels_.value(channel);
    channels_.insert(channel, reply);
    if (old) old->abort();  // its finished handler sees it is no longer current and drops it
  }
  const int gen = generation_;
  connect(reply, &QNetworkReply::finished, this, [this, reply, ctx, hadContext, cb, channel, gen] {
    --inFlight_;
    reply->deleteLater();
    if (gen != generation_) return;  // answer from a previous engine
    if (!channel.isEmpty()) {
      if (channels_.value(channel) != reply) return;  // superseded
      channels_.remove(channel);
    }
    if (hadContext && !ctx) return;
    EngineResult r;
    r.httpStatus = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    r.body = reply->readAll();
    QJsonParseError perr{};
    r.json = QJsonDocument::fromJson(r.body, &perr);
    if (reply->error() != QNetworkReply::NoError || r.httpStatus >= 400 || r.httpStatus == 0)
      r.error = errorMessage(reply, r.json, r.httpStatus);
    cb(r);
  });
}

void EngineClient::fetchStatus() {
  send("GET", QStringLiteral("/strata/v1/status"), QJsonValue::Undefined, this, [this](const EngineResult& r) {
    if (r.ok()) emit statusReceived(r.object());
    else emit requestFailed(QStringLiteral("status"), r.error);
  }, QStringLiteral("status"), 10000);
}

void EngineClient::fetchDevices() {
  send("GET", QStringLiteral("/strata/v1/devices"), QJsonValue::Undefined, this, [this](const EngineResult& r) {
    if (r.ok()) emit devicesReceived(r.object().value(QStringLiteral("devices")).toArray());
    else emit requestFailed(QStringLiteral("devices"), r.error);
  }, QStringLiteral("devices"), 10000);
}

void EngineClient::fetchPlacement() {
  send("GET", QStringLiteral("/strata/v1/placement"), QJsonValue::Undefined, this, [this](const EngineResult& r) {
    if (r.ok()) emit placementReceived(r.object());
    else emit requestFailed(QStringLiteral("placement"), r.error);
  }, QStringLiteral("placement"), 10000);
}

void EngineClient::applyPlacement(const QJsonObject& placement) {
  send("PUT", QStringLiteral("/strata/v1/placement"), placement, this, [this](const EngineResult& r) {
    if (r.ok()) emit placementApplied(r.object());
    else emit requestFailed(QStringLiteral("apply placement"), r.error);
  }, QStringLiteral("apply"), 600000);
}

void EngineClient::injectFault(const QString& deviceId, const QJsonObject& fault) {
  const QString kind = fault.value(QStringLiteral("kind")).toString();
  send("POST", QStringLiteral("/strata/v1/devices/%1/fault").arg(QString::fromUtf8(QUrl::toPercentEncoding(deviceId))), fault,
       this, [this, deviceId, kind](const EngineResult& r) {
         if (r.ok()) emit faultInjected(deviceId, kind);
         else emit requestFailed(QStringLiteral("inject fault"), r.error);
       });
}

void EngineClient::plan(const QString& goal, int nCtx, int nSeq) {
  QJsonObject body{{QStringLiteral("goal"), goal}};
  if (nCtx > 0) body.insert(QStringLiteral("n_ctx"), nCtx);
  if (nSeq > 0) body.insert(QStringLiteral("n_seq"), nSeq);
  send("POST", QStringLiteral("/strata/v1/plan"), body, this, [this](const EngineResult& r) {
    if (r.ok()) emit planReceived(r.object());
    else emit requestFailed(QStringLiteral("plan"), r.error);
  }, QStringLiteral("plan"), 60000);
}

void EngineClient::loadModel(const QString& path, const QJsonValue& placement, int nCtx) {
  QJsonObject body{{QStringLiteral("path"), path}};
  if (!placement.isUndefined()) body.insert(QStringLiteral("placement"), placement);
  if (nCtx > 0) body.insert(QStringLiteral("n_ctx"), nCtx);
  send("POST", QStringLiteral("/strata/v1/model/load"), body, this, [this](const EngineResult& r) {
    if (r.ok()) emit modelLoaded(r.object());
    else emit requestFailed(QStringLiteral("load model"), r.error);
  }, QStringLiteral("load"), 600000);
}

void EngineClient::unloadModel() {
  send("POST", QStringLiteral("/strata/v1/model/unload"), QJsonObject{}, this, [this](const EngineResult& r) {
    if (r.ok()) emit modelUnloaded();
    else emit requestFailed(QStringLiteral("unload model"), r.error);
  }, QStringLiteral("load"), 60000);
}

void EngineClient::fetchTraceJson(int seconds, QObject* context, Callback cb) {
  send("GET", QStringLiteral("/strata/v1/trace.json?seconds=%1").arg(seconds), QJsonValue::Undefined, context,
       std::move(cb), QStringLiteral("trace.json"), 60000);
}

void EngineClient::inspectModel(const QString& path, int nCtx, QObject* context, Callback cb) {
  QJsonObject body{{QStringLiteral("path"), path}};
  if (nCtx > 0) body.insert(QStringLiteral("n_ctx"), nCtx);
  send("POST", QStringLiteral("/strata/v1/models/inspect"), body, context, std::move(cb), {}, 60000);
}

ChatStream* EngineClient::streamChat(const QJsonArray& messages, const QJsonObject& sampling, QObject* parent) {
  QJsonObject body = sampling;
  body.insert(QStringLiteral("messages"), messages);
  body.insert(QStringLiteral("stream"), true);
  body.insert(QStringLiteral("stream_options"), QJsonObject{{QStringLiteral("include_usage"), true}});
  body.insert(QStringLiteral("return_progress"), true);  // prompt processing shown as it goes
  QNetworkRequest req = makeRequest(QStringLiteral("/v1/chat/completions"));
  req.setRawHeader("Accept", "text/event-stream");
  QNetworkReply* reply = nam_->post(req, QJsonDocument(body).toJson(QJsonDocument::Compact));
  return new ChatStream(reply, parent);
}

void EngineClient::startTraceStream() {
  traceWanted_ = true;
  if (!traceReply_) openTraceStream();
}

void EngineClient::stopTraceStream() {
  traceWanted_ = false;
  closeTraceStream();
}

void EngineClient::closeTraceStream() {
  traceRetry_.stop();
  if (traceReply_) {
    QNetworkReply* r = traceReply_;
    traceReply_ = nullptr;
    r->disconnect(this);
    r->abort();
    r->deleteLater();
    emit traceStreamConnected(false);
  }
  traceParser_.reset();
}

void EngineClient::openTraceStream() {
  if (!traceWanted_ || !hasEndpoint() || traceReply_) return;
  traceParser_.reset();
  QNetworkRequest req = makeRequest(QStringLiteral("/strata/v1/trace/stream"));
  req.setRawHeader("Accept", "text/event-stream");
  QNetworkReply* reply = nam_->get(req);
  traceReply_ = reply;
  connect(reply, &QNetworkReply::readyRead, this, [this, reply] {
    if (reply != traceReply_) return;
    if (reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt() >= 400) return;
    if (!reply->property("strataAnnounced").toBool()) {
      reply->setProperty("strataAnnounced", true);
      emit traceStreamConnected(true);
    }
    for (const SseEvent& e : traceParser_.feed(reply->readAll())) {
      if (e.event == QLatin1String("strata.replan")) {
        const QJsonObject record = QJsonDocument::fromJson(e.data).object();
        if (!record.isEmpty()) emit replanned(record);
        continue;
      }
      if (e.event != QLatin1String("trace") && e.event != QLatin1String("message")) continue;
      const QJsonObject batch = QJsonDocument::fromJson(e.data).object();
      if (!batch.isEmpty()) emit traceBatch(batch);
    }
  });
  connect(reply, &QNetworkReply::finished, this, [this, reply] {
    reply->deleteLater();
    if (reply != traceReply_) return;
    traceReply_ = nullptr;
    emit traceStreamConnected(false);
    if (traceWanted_) traceRetry_.start();  // the engine restarted or dropped us: try again
  });
}
