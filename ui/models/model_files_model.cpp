// ui/models/model_files_model.cpp — the directory walk (worker thread) and the table model.
#include "ui/models/model_files_model.h"

#include <limits>

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QFont>
#include <QLocale>
#include <QSet>
#include <QThread>

#include <algorithm>

namespace {
QString canonical(const QString& path) {
  const QFileInfo fi(path);
  const QString c = fi.canonicalFilePath();
  return c.isEmpty() ? fi.absoluteFilePath() : c;
}

QString inspectionKey(const QString& path, int nCtx) { return canonical(path) + QLatin1Char('\n') + QString::number(nCtx); }

// Tensor type names of an inspection's "types" ({"q4_k": {"tensors", "bytes"}, ...}), most bytes first.
QStringList typeNames(const QJsonObject& inspection) {
  const QJsonObject types = inspection.value(QStringLiteral("types")).toObject();
  QStringList names = types.keys();
  std::stable_sort(names.begin(), names.end(), [&types](const QString& a, const QString& b) {
    return types.value(a).toObject().value(QStringLiteral("bytes")).toInteger() >
           types.value(b).toObject().value(QStringLiteral("bytes")).toInteger();
  });
  return names;
}

void walk(const QString& dir, const QString& source, int depth, int maxDepth, QSet<QString>& seenDirs,
          QSet<QString>& seenFiles, QList<ModelFile>& out) {
  if (depth > maxDepth || QThread::currentThread()->isInterruptionRequested()) return;
  const QString canonicalDir = QFileInfo(dir).canonicalFilePath();
  if (canonicalDir.isEmpty() || seenDirs.contains(canonicalDir)) return;
  seenDirs.insert(canonicalDir);
  const QFileInfoList entries =
      QDir(dir).entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot | QDir::Readable, QDir::Name);
  for (const QFileInfo& fi : entries) {
    if (fi.isDir()) {
      walk(fi.filePath(), source, depth + 1, maxDepth, seenDirs, seenFiles, out);
    } else if (fi.suffix().compare(QLatin1String("gguf"), Qt::CaseInsensitive) == 0) {
      const QString target = canonical(fi.filePath());
      if (seenFiles.contains(target)) continue;
      seenFiles.insert(target);
      const QFileInfo real(target);
      if (ModelFilesModel::ggufTensorCount(target) == 0) continue;  // vocabulary only: nothing to run
      out.append({fi.absoluteFilePath(), fi.fileName(), real.size(), source, real.lastModified()});
    }
  }
}
}  // namespace

ModelFilesModel::ModelFilesModel(QObject* parent) : QAbstractTableModel(parent) {}

qint64 ModelFilesModel::ggufTensorCount(const QString& path) {
  // GGUF header: magic "GGUF", uint32 version, uint64 tensor_count (little endian).
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return -1;
  const QByteArray head = f.read(16);
  if (head.size() < 16 || !head.startsWith("GGUF")) return -1;
  quint64 n = 0;
  for (int i = 0; i < 8; ++i) n |= quint64(quint8(head[8 + i])) << (8 * i);
  return n > quint64(std::numeric_limits<qint64>::max()) ? -1 : qint64(n);
}

ModelFilesModel::~ModelFilesModel() {
  for (QThread* t : findChildren<QThread*>()) {
    t->requestInterruption();
    t->wait();
  }
}

int ModelFilesModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(files_.size()); }
int ModelFilesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QString ModelFilesModel::formatSize(qint64 bytes) {
  // Binary units with one decimal, as the engine prints them: "1.9 GiB", "512 B".
  if (bytes < 1024) return QStringLiteral("%1 B").arg(bytes);
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes) / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 3) {
    v /= 1024.0;
    ++u;
  }
  return QStringLiteral("%1 %2").arg(v, 0, 'f', 1).arg(QLatin1String(units[u]));
}

QString ModelFilesModel::formatParameters(qint64 n) {
  if (n >= 1000000000) return QStringLiteral("%1 B").arg(double(n) / 1e9, 0, 'f', 1);
  if (n >= 1000000) return QStringLiteral("%1 M").arg(double(n) / 1e6, 0, 'f', 1);
  return QStringLiteral("%1 K").arg(double(n) / 1e3, 0, 'f', 0);
}

QVariant ModelFilesModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const ModelFile& f = files_.at(index.row());
  const auto inspection = [&]() -> const QJsonObject* {
    const auto it = inspections_.constFind(inspectionKey(f.path, nCtx_));
    return it == inspections_.constEnd() ? nullptr : &it.value();
  };
  const QJsonObject* in = nullptr;
  if (role >= InspectedRole || (role == Qt::DisplayRole && index.column() != NameColumn && index.column() != SizeColumn &&
                                index.column() != SourceColumn) ||
      role == Qt::ToolTipRole)
    in = inspection();
  const QString inError = in ? in->value(QStringLiteral("error")).toString() : QString();
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case NameColumn: return f.fileName;
        case SizeColumn: return formatSize(f.sizeBytes);
        case SourceColumn: return f.source;
      }
      if (!in) return QString();
      if (!inError.isEmpty() && !in->contains(QStringLiteral("architecture")))
        return index.column() == ArchitectureColumn ? tr("unreadable") : QString();
      switch (index.column()) {
        case ArchitectureColumn: return in->value(QStringLiteral("architecture")).toString();
        case ParametersColumn: return formatParameters(in->value(QStringLiteral("parameters")).toInteger());
        case TypesColumn: return typeNames(*in).join(QStringLiteral(", "));
        case ContextColumn: return QLocale::c().toString(in->value(QStringLiteral("n_ctx_train")).toInt());
        case MemoryColumn: {
          const qint64 total = in->value(QStringLiteral("memory")).toObject().value(QStringLiteral("total")).toInteger();
          return total > 0 ? formatSize(total) : QString();
        }
      }
      return {};
    case Qt::ToolTipRole:
      if (in && !inError.isEmpty()) return f.path + QStringLiteral("\n") + inError;
      if (in && index.column() == MemoryColumn) {
        const QJsonObject m = in->value(QStringLiteral("memory")).toObject();
        return tr("at context %1: weights %2, KV %3, scratch %4")
            .arg(in->value(QStringLiteral("n_ctx")).toInt())
            .arg(formatSize(m.value(QStringLiteral("weights")).toInteger()),
                 formatSize(m.value(QStringLiteral("kv")).toInteger()),
                 formatSize(m.value(QStringLiteral("scratch")).toInteger()));
      }
      return f.path;
    case Qt::TextAlignmentRole:
      switch (index.column()) {
        case SizeColumn:
        case MemoryColumn:
        case ParametersColumn:
        case ContextColumn: return QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
      }
      return {};
    case Qt::FontRole:
      if (canonical(f.path) == loadedPath_) {
        QFont bold;
        bold.setBold(true);
        return bold;
      }
      return {};
    case PathRole: return f.path;
    case FileNameRole: return f.fileName;
    case SizeBytesRole: return f.sizeBytes;
    case SourceRole: return f.source;
    case ModifiedRole: return f.modified;
    case LoadedRole: return !loadedPath_.isEmpty() && canonical(f.path) == loadedPath_;
    case InspectedRole: return in != nullptr;
    case InspectErrorRole: return in ? QVariant(inError) : QVariant();
    case InspectionRole: return in ? QVariant(*in) : QVariant();
  }
  if (!in || (!inError.isEmpty() && !in->contains(QStringLiteral("architecture")))) return {};
  switch (role) {
    case ArchitectureRole: return in->value(QStringLiteral("architecture")).toString();
    case ParametersRole: return in->value(QStringLiteral("parameters")).toInteger();
    case TensorTypesRole: return typeNames(*in);
    case ContextTrainRole: return in->value(QStringLiteral("n_ctx_train")).toInt();
    case MemoryBytesRole: return in->value(QStringLiteral("memory")).toObject().value(QStringLiteral("total")).toInteger();
    case RunnableRole: return in->value(QStringLiteral("runnable")).toBool();
    default: return {};
  }
}

QVariant ModelFilesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
  switch (section) {
    case NameColumn: return tr("File");
    case SizeColumn: return tr("Size");
    case SourceColumn: return tr("Found in");
    case ArchitectureColumn: return tr("Architecture");
    case ParametersColumn: return tr("Parameters");
    case TypesColumn: return tr("Tensor types");
    case ContextColumn: return tr("Context");
    case MemoryColumn: return nCtx_ > 0 ? tr("Memory at %1").arg(nCtx_) : tr("Memory");
  }
  return {};
}

QHash<int, QByteArray> ModelFilesModel::roleNames() const {
  QHash<int, QByteArray> names = QAbstractTableModel::roleNames();
  names.insert(PathRole, "path");
  names.insert(FileNameRole, "fileName");
  names.insert(SizeBytesRole, "sizeBytes");
  names.insert(SourceRole, "source");
  names.insert(ModifiedRole, "modified");
  names.insert(LoadedRole, "loaded");
  names.insert(InspectedRole, "inspected");
  names.insert(ArchitectureRole, "architecture");
  names.insert(ParametersRole, "parameters");
  names.insert(TensorTypesRole, "tensorTypes");
  names.insert(ContextTrainRole, "contextTrain");
  names.insert(MemoryBytesRole, "memoryBytes");
  names.insert(RunnableRole, "runnable");
  names.insert(InspectErrorRole, "inspectError");
  names.insert(InspectionRole, "inspection");
  return names;
}

QList<ModelFile> ModelFilesModel::findFiles(const QList<ModelLocation>& locations, int maxDepth) {
  QList<ModelFile> out;
  QSet<QString> seenDirs, seenFiles;
  for (const ModelLocation& loc : locations) walk(loc.path, loc.source, 0, maxDepth, seenDirs, seenFiles, out);
  return out;
}

void ModelFilesModel::scan(const QList<ModelLocation>& locations) {
  scanning_ = true;
  const int gen = ++scanGeneration_;
  QThread* worker = QThread::create([this, locations, gen] {
    QList<ModelFile> found = findFiles(locations);
    if (QThread::currentThread()->isInterruptionRequested()) return;
    QMetaObject::invokeMethod(this, [this, found, gen] {
      if (gen != scanGeneration_) return;  // a newer scan replaced this one
      scanning_ = false;
      // Files opened by hand stay listed.
      QList<ModelFile> merged = found;
      for (const ModelFile& f : files_) {
        if (f.source != QLatin1String("opened")) continue;
        bool present = false;
        for (const ModelFile& g : found) present = present || canonical(g.path) == canonical(f.path);
        if (!present) merged.append(f);
      }
      setFiles(merged);
      emit scanFinished(int(found.size()));
    }, Qt::QueuedConnection);
  });
  worker->setParent(this);
  connect(worker, &QThread::finished, worker, &QObject::deleteLater);
  worker->start(QThread::LowPriority);
}

void ModelFilesModel::setFiles(const QList<ModelFile>& files) {
  beginResetModel();
  files_ = files;
  endResetModel();
}

int ModelFilesModel::rowOfPath(const QString& path) const {
  const QString c = canonical(path);
  for (int i = 0; i < files_.size(); ++i)
    if (canonical(files_.at(i).path) == c) return i;
  return -1;
}

void ModelFilesModel::addFile(const QString& path, const QString& source) {
  if (rowOfPath(path) >= 0) return;
  const QFileInfo fi(path);
  const int row = int(files_.size());
  beginInsertRows({}, row, row);
  files_.append({fi.absoluteFilePath(), fi.fileName(), fi.size(), source, fi.lastModified()});
  endInsertRows();
}

void ModelFilesModel::setStatus(const QJsonObject& status) {
  const QString path = status.value(QStringLiteral("model")).toObject().value(QStringLiteral("path")).toString();
  const QString next = path.isEmpty() ? QString() : canonical(path);
  if (next == loadedPath_) return;
  const int oldRow = loadedPath_.isEmpty() ? -1 : rowOfPath(loadedPath_);
  loadedPath_ = next;
  if (!path.isEmpty() && rowOfPath(path) < 0) addFile(path, QStringLiteral("opened"));
  const int newRow = next.isEmpty() ? -1 : rowOfPath(next);
  for (int row : {oldRow, newRow})
    if (row >= 0) emit dataChanged(index(row, 0), index(row, ColumnCount - 1));
}

void ModelFilesModel::setContextLength(int nCtx) {
  nCtx = std::max(nCtx, 0);
  if (nCtx == nCtx_) return;
  nCtx_ = nCtx;
  emit headerDataChanged(Qt::Horizontal, MemoryColumn, MemoryColumn);
  if (!files_.isEmpty()) emit dataChanged(index(0, 0), index(int(files_.size()) - 1, ColumnCount - 1));
}

bool ModelFilesModel::hasInspection(const QString& path, int nCtx) const {
  return inspections_.contains(inspectionKey(path, nCtx));
}

void ModelFilesModel::setInspection(const QString& path, int nCtx, const QJsonObject& result) {
  inspections_.insert(inspectionKey(path, nCtx), result);
  if (nCtx != nCtx_) return;
  const int row = rowOfPath(path);
  if (row >= 0) emit dataChanged(index(row, 0), index(row, ColumnCount - 1));
}
