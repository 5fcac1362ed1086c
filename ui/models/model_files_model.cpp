// ui/models/model_files_model.cpp — the directory walk (worker thread) and the table model.
#include "ui/models/model_files_model.h"

#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <QFont>
#include <QLocale>
#include <QSet>
#include <QThread>

namespace {
QString canonical(const QString& path) {
  const QFileInfo fi(path);
  const QString c = fi.canonicalFilePath();
  return c.isEmpty() ? fi.absoluteFilePath() : c;
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
      out.append({fi.absoluteFilePath(), fi.fileName(), real.size(), source, real.lastModified()});
    }
  }
}
}  // namespace

ModelFilesModel::ModelFilesModel(QObject* parent) : QAbstractTableModel(parent) {}

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

QVariant ModelFilesModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const ModelFile& f = files_.at(index.row());
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case NameColumn: return f.fileName;
        case SizeColumn: return formatSize(f.sizeBytes);
        case SourceColumn: return f.source;
      }
      return {};
    case Qt::ToolTipRole: return f.path;
    case Qt::TextAlignmentRole:
      return index.column() == SizeColumn ? QVariant(int(Qt::AlignRight | Qt::AlignVCenter)) : QVariant();
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
    default: return {};
  }
}

QVariant ModelFilesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
  switch (section) {
    case NameColumn: return tr("File");
    case SizeColumn: return tr("Size");
    case SourceColumn: return tr("Found in");
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
