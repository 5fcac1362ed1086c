// ui/models/model_files_model.h — the GGUF files found on this machine, one row each (name, size,
// where it was found), with the loaded one marked and described by the engine's /status, and what the
// engine's /strata/v1/models/inspect says of each file (architecture, parameters, tensor types,
// trained context, memory at the chosen context), cached per path + context.
// Scanning runs on a worker thread; the rows change on the GUI thread only.
#pragma once

#include <QAbstractTableModel>
#include <QDateTime>
#include <QHash>
#include <QJsonObject>
#include <QList>

#include "ui/models/model_locations.h"

struct ModelFile {
  QString path;      // as found (canonical)
  QString fileName;
  qint64 sizeBytes = 0;
  QString source;    // "LM Studio", "Hugging Face", "llama.cpp", "added", "opened"
  QDateTime modified;
};

class ModelFilesModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Roles {
    PathRole = Qt::UserRole + 1,  // QString
    FileNameRole,                 // QString
    SizeBytesRole,                // qint64
    SourceRole,                   // QString
    ModifiedRole,                 // QDateTime
    LoadedRole,                   // bool: the engine has this file loaded
    // From the engine's inspection at contextLength(); invalid QVariant until it came.
    InspectedRole,                // bool: an answer (or an engine error) is cached for this row
    ArchitectureRole,             // QString, e.g. "llama"
    ParametersRole,               // qint64
    TensorTypesRole,              // QStringList: tensor types, most bytes first ("q4_k", "q6_k", "f32")
    ContextTrainRole,             // int: n_ctx_train, the context the model was trained for
    MemoryBytesRole,              // qint64: memory.total (weights + KV + scratch) at contextLength()
    RunnableRole,                 // bool: the engine can run this file
    InspectErrorRole,             // QString: why not / why inspection failed; empty when fine
    InspectionRole,               // QJsonObject: the whole answer
  };
  Q_ENUM(Roles)
  enum Column {
    NameColumn,
    ArchitectureColumn,
    ParametersColumn,
    TypesColumn,
    ContextColumn,
    SizeColumn,
    MemoryColumn,
    SourceColumn,
    ColumnCount
  };

  explicit ModelFilesModel(QObject* parent = nullptr);
  ~ModelFilesModel() override;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  QHash<int, QByteArray> roleNames() const override;

  // Scans `locations` on a worker thread; rows are replaced when it is done (scanFinished).
  void scan(const QList<ModelLocation>& locations);
  bool isScanning() const { return scanning_; }
  void setFiles(const QList<ModelFile>& files);
  void addFile(const QString& path, const QString& source);  // e.g. opened by dialog or drop
  // The engine's /strata/v1/status: marks the row of status.model.path as loaded.
  void setStatus(const QJsonObject& status);
  QString loadedPath() const { return loadedPath_; }
  ModelFile file(int row) const { return files_.value(row); }
  int rowOfPath(const QString& path) const;

  // Blocking directory walk (used by the worker; public for tests). Depth-limited, follows
  // links (the HF cache links snapshots to blobs), one row per canonical file. Files with no tensors
  // (llama.cpp's vocabulary-only ggml-vocab-*.gguf) are left out: there is nothing to run.
  static QList<ModelFile> findFiles(const QList<ModelLocation>& locations, int maxDepth = 6);
  // The tensor count in a GGUF file's header; -1 when it is not readable or not GGUF.
  static qint64 ggufTensorCount(const QString& path);
  static QString formatSize(qint64 bytes);
  static QString formatParameters(qint64 n);  // "3.2 B", "260.0 M", "12 K"

  // The context the memory column is for (the n_ctx a load would use; 0: the model's own).
  void setContextLength(int nCtx);
  int contextLength() const { return nCtx_; }
  // Caches the engine's inspection of `path` at `nCtx` (an answer with "error" for a file it cannot
  // read); rows showing that path at that context change.
  void setInspection(const QString& path, int nCtx, const QJsonObject& result);
  bool hasInspection(const QString& path, int nCtx) const;

 signals:
  void scanFinished(int files);

 private:
  QList<ModelFile> files_;
  QString loadedPath_;
  int nCtx_ = 0;
  QHash<QString, QJsonObject> inspections_;  // key: canonical path + '\n' + n_ctx
  bool scanning_ = false;
  int scanGeneration_ = 0;
};
