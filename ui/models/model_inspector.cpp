// ui/models/model_inspector.cpp — the inspect queue: one request in flight, answers into the model.
#include "ui/models/model_inspector.h"

#include "ui/client/engine_client.h"
#include "ui/models/model_files_model.h"

ModelInspector::ModelInspector(EngineClient* client, ModelFilesModel* model, QObject* parent)
    : QObject(parent), client_(client), model_(model) {
  // A new engine (or the first one) may answer what failed before: go on with the queue.
  connect(client, &EngineClient::endpointChanged, this, &ModelInspector::pump);
}

void ModelInspector::request(int row, bool urgent) {
  const QString path = model_->file(row).path;
  if (path.isEmpty() || model_->hasInspection(path, model_->contextLength())) return;
  if (queuedSet_.contains(path)) {
    if (!urgent) return;
    queue_.removeOne(path);
  }
  queuedSet_.insert(path);
  if (urgent) queue_.prepend(path);
  else queue_.append(path);
  pump();
}

void ModelInspector::pump() {
  if (busy_ || !client_ || !client_->hasEndpoint()) return;
  while (!queue_.isEmpty()) {
    const QString path = queue_.takeFirst();
    queuedSet_.remove(path);
    const int nCtx = model_->contextLength();
    if (model_->hasInspection(path, nCtx)) continue;
    busy_ = true;
    client_->inspectModel(path, nCtx, this, [this, path, nCtx](const EngineResult& r) {
      busy_ = false;
      if (r.httpStatus > 0 && r.json.isObject()) {
        QJsonObject result = r.object();
        // An error answer ({"error": {"message"}}) is cached as {"error": "message"}.
        if (!r.ok() || result.value(QStringLiteral("error")).isObject())
          result.insert(QStringLiteral("error"), r.error.isEmpty() ? QStringLiteral("inspection failed") : r.error);
        model_->setInspection(path, nCtx, result);
        emit inspected(path);
      }
      pump();
    });
    return;
  }
  emit idle();
}
