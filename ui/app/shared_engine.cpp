// ui/app/shared_engine.cpp — reading, writing (0600, atomic rename) and removing the runtime file
// that names the running workstation's engine.
#include "ui/app/shared_engine.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStandardPaths>

#include <cerrno>
#include <cstdio>

#include <signal.h>

QString SharedEngine::filePath() {
  QString dir = QStandardPaths::writableLocation(QStandardPaths::RuntimeLocation);
  if (dir.isEmpty()) {  // no usable runtime folder: the user's own data folder, never a shared /tmp
    dir = QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation);
    QDir().mkpath(dir);
  }
  return QDir(dir).filePath(QStringLiteral("strata-engine.json"));
}

SharedEngine SharedEngine::read(QString* error) {
  SharedEngine e;
  QFile f(filePath());
  if (!f.open(QIODevice::ReadOnly)) {
    if (error) *error = f.exists() ? f.errorString() : QString();
    return e;
  }
  QJsonParseError pe;
  const QJsonObject o = QJsonDocument::fromJson(f.read(64 * 1024), &pe).object();
  if (pe.error != QJsonParseError::NoError) {
    if (error) *error = QStringLiteral("%1: %2").arg(f.fileName(), pe.errorString());
    return e;
  }
  e.url = QUrl(o.value(QStringLiteral("url")).toString());
  e.apiKey = o.value(QStringLiteral("api_key")).toString();
  e.enginePid = o.value(QStringLiteral("engine_pid")).toInteger();
  e.ownerPid = o.value(QStringLiteral("owner_pid")).toInteger();
  return e;
}

bool SharedEngine::write(QString* error) const {
  const QString path = filePath();
  const QString tmp = path + QStringLiteral(".%1.tmp").arg(ownerPid);
  QFile::remove(tmp);
  QFile f(tmp);
  // Created with these permissions (the umask can only take bits away): never readable by others.
  if (!f.open(QIODevice::WriteOnly | QIODevice::NewOnly, QFileDevice::ReadOwner | QFileDevice::WriteOwner)) {
    if (error) *error = QStringLiteral("%1: %2").arg(tmp, f.errorString());
    return false;
  }
  const QJsonObject o{{QStringLiteral("url"), url.toString()},
                      {QStringLiteral("api_key"), apiKey},
                      {QStringLiteral("engine_pid"), enginePid},
                      {QStringLiteral("owner_pid"), ownerPid}};
  const QByteArray bytes = QJsonDocument(o).toJson(QJsonDocument::Compact);
  const bool written = f.write(bytes) == bytes.size() && f.flush();
  f.close();
  if (!written || std::rename(QFile::encodeName(tmp).constData(), QFile::encodeName(path).constData()) != 0) {
    if (error) *error = QStringLiteral("%1: %2").arg(path, written ? qt_error_string(errno) : f.errorString());
    QFile::remove(tmp);
    return false;
  }
  return true;
}

void SharedEngine::removeIfOwnedBy(qint64 ownerPid) {
  if (read().ownerPid == ownerPid) QFile::remove(filePath());
}

bool SharedEngine::processAlive(qint64 pid) {
  // EPERM: the pid now belongs to another user's process, so not to a workstation of ours.
  return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) == 0;
}
