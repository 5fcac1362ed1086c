// ui/models/model_inspector.h — asks the engine to inspect the GGUF files the Models tab shows
// (POST /strata/v1/models/inspect), lazily and one request at a time, and caches each answer in the
// ModelFilesModel per path + context. GUI thread only; no engine headers.
#pragma once

#include <QList>
#include <QObject>
#include <QPointer>
#include <QSet>
#include <QString>

class EngineClient;
class ModelFilesModel;

class ModelInspector : public QObject {
  Q_OBJECT
 public:
  ModelInspector(EngineClient* client, ModelFilesModel* model, QObject* parent = nullptr);

  // Queues the file of `row` unless its inspection at the model's context is cached or queued;
  // `urgent` (the selected row) goes first. Answers the engine gave (errors included) are cached;
  // a request that got no answer (no engine yet, connection refused) is not, and may be asked again.
  void request(int row, bool urgent = false);
  int queued() const { return int(queue_.size()); }
  bool isBusy() const { return busy_; }

 signals:
  void inspected(const QString& path);  // an answer was cached
  void idle();                          // the queue ran empty

 private:
  void pump();

  QPointer<EngineClient> client_;
  ModelFilesModel* model_;
  QList<QString> queue_;  // paths, inspected at the model's context when their turn comes
  QSet<QString> queuedSet_;
  bool busy_ = false;
};
