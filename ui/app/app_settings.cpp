// ui/app/app_settings.cpp — AppSettings ↔ QSettings (organisation "Strata", application "Strata").
#include "ui/app/app_settings.h"

#include <QJsonDocument>
#include <QSettings>

#include "ui/chat/chat_controller.h"

namespace {
QJsonObject parse(const QString& text) { return QJsonDocument::fromJson(text.toUtf8()).object(); }
QString dump(const QJsonObject& o) { return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact)); }
}  // namespace

AppSettings AppSettings::load() {
  QSettings s;
  AppSettings a;
  a.engineMode = s.value(QStringLiteral("engine/mode")).toString() == QLatin1String("remote") ? EngineMode::Remote
                                                                                              : EngineMode::Local;
  a.enginePath = s.value(QStringLiteral("engine/path")).toString();
  a.devices = s.value(QStringLiteral("engine/devices")).toString();
  a.ctx = s.value(QStringLiteral("engine/ctx"), 0).toInt();
  a.threads = s.value(QStringLiteral("engine/threads"), 0).toInt();
  a.draftModel = s.value(QStringLiteral("engine/draftModel")).toString();
  a.remoteUrl = s.value(QStringLiteral("engine/remoteUrl")).toString();
  a.remoteKey = s.value(QStringLiteral("engine/remoteKey")).toString();
  a.lastModel = s.value(QStringLiteral("models/last")).toString();
  a.lastPlacement = parse(s.value(QStringLiteral("models/lastPlacement")).toString());
  a.modelFolders = s.value(QStringLiteral("models/folders")).toStringList();
  a.defaultSampling = parse(s.value(QStringLiteral("chat/sampling")).toString());
  if (a.defaultSampling.isEmpty()) a.defaultSampling = ChatController::defaultSampling();
  a.defaultSystemPrompt = s.value(QStringLiteral("chat/systemPrompt")).toString();
  a.theme = s.value(QStringLiteral("ui/theme"), QStringLiteral("system")).toString();
  return a;
}

void AppSettings::save() const {
  QSettings s;
  s.setValue(QStringLiteral("engine/mode"), engineMode == EngineMode::Remote ? "remote" : "local");
  s.setValue(QStringLiteral("engine/path"), enginePath);
  s.setValue(QStringLiteral("engine/devices"), devices);
  s.setValue(QStringLiteral("engine/ctx"), ctx);
  s.setValue(QStringLiteral("engine/threads"), threads);
  s.setValue(QStringLiteral("engine/draftModel"), draftModel);
  s.setValue(QStringLiteral("engine/remoteUrl"), remoteUrl);
  s.setValue(QStringLiteral("engine/remoteKey"), remoteKey);
  s.setValue(QStringLiteral("models/last"), lastModel);
  s.setValue(QStringLiteral("models/lastPlacement"), dump(lastPlacement));
  s.setValue(QStringLiteral("models/folders"), modelFolders);
  s.setValue(QStringLiteral("chat/sampling"), dump(defaultSampling));
  s.setValue(QStringLiteral("chat/systemPrompt"), defaultSystemPrompt);
  s.setValue(QStringLiteral("ui/theme"), theme);
}

AppSettings RunOverrides::applied(const AppSettings& saved) const {
  AppSettings a = saved;
  if (model) {
    a.lastModel = *model;
    a.lastPlacement = {};
  }
  if (devices) a.devices = *devices;
  if (ctx) a.ctx = *ctx;
  if (threads) a.threads = *threads;
  if (enginePath) a.enginePath = *enginePath;
  if (remoteUrl) {
    a.engineMode = AppSettings::EngineMode::Remote;
    a.remoteUrl = *remoteUrl;
    a.remoteKey = remoteKey;
  }
  return a;
}

AppSettings RunOverrides::toSave(const AppSettings& current, const AppSettings& saved) const {
  AppSettings out = current;
  const AppSettings run = applied(saved);
  if (model && current.lastModel == run.lastModel) {
    out.lastModel = saved.lastModel;
    if (current.lastPlacement == run.lastPlacement) out.lastPlacement = saved.lastPlacement;
  }
  if (devices && current.devices == run.devices) out.devices = saved.devices;
  if (ctx && current.ctx == run.ctx) out.ctx = saved.ctx;
  if (threads && current.threads == run.threads) out.threads = saved.threads;
  if (enginePath && current.enginePath == run.enginePath) out.enginePath = saved.enginePath;
  if (remoteUrl && current.engineMode == run.engineMode && current.remoteUrl == run.remoteUrl &&
      current.remoteKey == run.remoteKey) {
    out.engineMode = saved.engineMode;
    out.remoteUrl = saved.remoteUrl;
    out.remoteKey = saved.remoteKey;
  }
  return out;
}
