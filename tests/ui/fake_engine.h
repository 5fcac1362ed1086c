// tests/ui/fake_engine.h — a scripted stand-in for `strata-engine serve` on loopback, for client and
// chat tests that must not depend on the engine: /strata/v1/status, /strata/v1/models/inspect
// (a path containing "bad" gets 400), /strata/v1/model/load (always ready) and a streaming /v1/chat/completions (chunked SSE, one piece every `pieceIntervalMs`). Header-only, no moc.
#pragma once

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QList>
#include <QPointer>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTimer>

class FakeEngine : public QObject {
 public:
  QStringList pieces{QStringLiteral("Hello"), QStringLiteral(", "), QStringLiteral("**world**"), QStringLiteral("!")};
  int pieceIntervalMs = 5;
  QList<QPair<int, int>> promptProgress;  // (processed, total) chunks sent before the pieces
  // A chunk with this "replan" object (a lost device; docs/api.md) is sent before piece
  // replanBeforePiece (-1: none).
  QJsonObject replan;
  int replanBeforePiece = -1;
  QString apiKey;                 // when set, requests without "Bearer apiKey" get 401
  // The usage chunk's "completion_tokens_details" (speculative decoding's accepted / rejected
  // guesses, OpenAI's prediction names); empty: not sent.
  QJsonObject completionDetails;
  int chatStatus = 200;           // e.g. 503 to test errors
  QList<QJsonObject> chatBodies;  // every chat request body received
  int statusRequests = 0;
  int loadRequests = 0;
  QList<QJsonObject> inspectBodies;  // every models/inspect request body received
  QList<QJsonObject> loadBodies;     // every model/load request body received
  int statusCtx = 512;
  QJsonValue statusPlacement = QJsonValue::Null;  // the status's "placement"
  QJsonArray devices;                // GET /strata/v1/devices answers {"devices": this} when not empty               // the status's model n_ctx (a load with n_ctx sets it)

  FakeEngine() {
    server_.listen(QHostAddress::LocalHost, 0);
    QObject::connect(&server_, &QTcpServer::newConnection, this, [this] {
      while (QTcpSocket* s = server_.nextPendingConnection()) {
        s->setParent(this);
        QObject::connect(s, &QTcpSocket::readyRead, this, [this, s] { onData(s); });
      }
    });
  }
  QString url() const { return QStringLiteral("http://127.0.0.1:%1").arg(server_.serverPort()); }
  // Closes every connection at once (an engine crash, as the client sees it).
  void dropAll() {
    for (QTcpSocket* s : findChildren<QTcpSocket*>()) s->abort();
  }

 private:
  void onData(QTcpSocket* s) {
    QByteArray& buf = buffers_[s];
    buf += s->readAll();
    const qsizetype end = buf.indexOf("\r\n\r\n");
    if (end < 0) return;
    const QByteArray head = buf.left(end);
    const QList<QByteArray> lines = head.split('\n');
    const QList<QByteArray> first = lines.value(0).trimmed().split(' ');
    qsizetype length = 0;
    QByteArray auth;
    for (const QByteArray& l : lines) {
      const QByteArray lower = l.toLower();
      if (lower.startsWith("content-length:")) length = l.mid(15).trimmed().toLongLong();
      if (lower.startsWith("authorization:")) auth = l.mid(14).trimmed();
    }
    if (buf.size() < end + 4 + length) return;
    const QByteArray body = buf.mid(end + 4, length);
    buffers_.remove(s);
    const QByteArray method = first.value(0), path = first.value(1);
    if (!apiKey.isEmpty() && auth != "Bearer " + apiKey.toUtf8()) {
      reply(s, 401, R"({"error":{"message":"missing or wrong API key","type":"authentication_error"}})");
      return;
    }
    if (path.startsWith("/strata/v1/status")) {
      ++statusRequests;
      reply(s, 200, QJsonDocument(QJsonObject{{"state", "ready"},
                                              {"model", QJsonObject{{"id", "fake"}, {"path", "/models/fake.gguf"},
                                                                    {"architecture", "llama"}, {"n_layers", 2},
                                                                    {"n_ctx", statusCtx}, {"n_ctx_train", 2048}, {"parameters", 260000},
                                                                    {"weight_bytes", 1000000}}},
                                              {"placement", statusPlacement}})
                            .toJson(QJsonDocument::Compact));
    } else if (path.startsWith("/strata/v1/devices") && method == "GET" && !devices.isEmpty()) {
      reply(s, 200, QJsonDocument(QJsonObject{{"devices", devices}}).toJson(QJsonDocument::Compact));
    } else if (path.startsWith("/strata/v1/model/load") && method == "POST") {
      ++loadRequests;
      loadBodies.append(QJsonDocument::fromJson(body).object());
      if (loadBodies.last().value("n_ctx").toInt() > 0) statusCtx = loadBodies.last().value("n_ctx").toInt();
      reply(s, 200, QJsonDocument(QJsonObject{{"state", "ready"}, {"model", QJsonObject{{"id", "fake"}, {"path", "/models/fake.gguf"}, {"n_layers", 2}}}})
                        .toJson(QJsonDocument::Compact));
    } else if (path.startsWith("/strata/v1/models/inspect") && method == "POST") {
      const QJsonObject req = QJsonDocument::fromJson(body).object();
      inspectBodies.append(req);
      const QString file = req.value("path").toString();
      if (file.contains("bad")) {
        reply(s, 400, R"({"error":{"message":"not a GGUF file","type":"invalid_request_error"}})");
        return;
      }
      const int nCtx = req.value("n_ctx").toInt() > 0 ? req.value("n_ctx").toInt() : 2048;
      const qint64 kv = qint64(nCtx) * 1024;
      reply(s, 200, QJsonDocument(QJsonObject{
                        {"path", file}, {"file_bytes", 1000000}, {"architecture", "llama"}, {"parameters", 260000},
                        {"types", QJsonObject{{"f32", QJsonObject{{"tensors", 5}, {"bytes", 1000}}},
                                              {"q4_k", QJsonObject{{"tensors", 14}, {"bytes", 900000}}}}},
                        {"runnable", true}, {"name", "fake"}, {"n_layers", 2}, {"n_ctx_train", 2048},
                        {"n_embd", 64}, {"n_ctx", nCtx},
                        {"memory", QJsonObject{{"weights", 901000}, {"kv", kv}, {"scratch", 4096},
                                               {"total", 901000 + kv + 4096}}}})
                        .toJson(QJsonDocument::Compact));
    } else if (path.startsWith("/v1/chat/completions") && method == "POST") {
      chatBodies.append(QJsonDocument::fromJson(body).object());
      if (chatStatus != 200) {
        reply(s, chatStatus, R"({"error":{"message":"no model loaded","type":"invalid_request_error"}})");
        return;
      }
      stream(s);
    } else {
      reply(s, 404, R"({"error":{"message":"unknown route","type":"invalid_request_error"}})");
    }
  }

  static void reply(QTcpSocket* s, int status, const QByteArray& json) {
    s->write("HTTP/1.1 " + QByteArray::number(status) + " X\r\nContent-Type: application/json\r\nContent-Length: " +
             QByteArray::number(json.size()) + "\r\nConnection: close\r\n\r\n" + json);
    s->disconnectFromHost();
  }

  static void chunk(QTcpSocket* s, const QByteArray& data) {
    s->write(QByteArray::number(data.size(), 16) + "\r\n" + data + "\r\n");
  }

  static QByteArray event(const QJsonObject& delta, const QJsonValue& finish) {
    const QJsonObject o{{"object", "chat.completion.chunk"},
                        {"choices", QJsonArray{QJsonObject{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
    return "data: " + QJsonDocument(o).toJson(QJsonDocument::Compact) + "\n\n";
  }

  void stream(QTcpSocket* s) {
    s->write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
    chunk(s, event(QJsonObject{{"role", "assistant"}}, QJsonValue::Null));
    auto* timer = new QTimer(s);
    auto next = std::make_shared<int>(0);
    QPointer<QTcpSocket> sock(s);
    QObject::connect(timer, &QTimer::timeout, s, [this, sock, timer, next] {
      if (!sock || sock->state() != QAbstractSocket::ConnectedState) return timer->stop();
      if (*next < promptProgress.size()) {
        QJsonObject c{{"object", "chat.completion.chunk"},
                      {"choices", QJsonArray{QJsonObject{{"index", 0}, {"delta", QJsonObject{{"content", ""}}},
                                                         {"finish_reason", QJsonValue::Null}}}},
                      {"prompt_progress", QJsonObject{{"processed", promptProgress[*next].first},
                                                      {"total", promptProgress[*next].second}}}};
        chunk(sock, "data: " + QJsonDocument(c).toJson(QJsonDocument::Compact) + "\n\n");
        ++*next;
        return;
      }
      const int piece = *next - int(promptProgress.size());
      if (piece == replanBeforePiece && !sock->property("replanSent").toBool()) {
        sock->setProperty("replanSent", true);
        QJsonObject c{{"object", "chat.completion.chunk"},
                      {"choices", QJsonArray{QJsonObject{{"index", 0}, {"delta", QJsonObject{{"content", ""}}},
                                                         {"finish_reason", QJsonValue::Null}}}},
                      {"replan", replan}};
        chunk(sock, "data: " + QJsonDocument(c).toJson(QJsonDocument::Compact) + "\n\n");
        return;
      }
      if (piece < pieces.size()) {
        // Split each event in two writes to exercise the incremental parser.
        const QByteArray e = event(QJsonObject{{"content", pieces.at(piece)}}, QJsonValue::Null);
        chunk(sock, e.left(e.size() / 2));
        chunk(sock, e.mid(e.size() / 2));
        ++*next;
        return;
      }
      timer->stop();
      chunk(sock, event(QJsonObject{}, QStringLiteral("stop")));
      QJsonObject counts{{"prompt_tokens", 3}, {"completion_tokens", int(pieces.size())},
                         {"total_tokens", 3 + int(pieces.size())}};
      if (!completionDetails.isEmpty()) counts.insert(QStringLiteral("completion_tokens_details"), completionDetails);
      const QJsonObject usage{{"choices", QJsonArray{}}, {"usage", counts}};
      chunk(sock, "data: " + QJsonDocument(usage).toJson(QJsonDocument::Compact) + "\n\n");
      chunk(sock, "data: [DONE]\n\n");
      sock->write("0\r\n\r\n");
      sock->disconnectFromHost();
    });
    timer->start(pieceIntervalMs);
  }

  QTcpServer server_;
  QHash<QTcpSocket*, QByteArray> buffers_;
};
