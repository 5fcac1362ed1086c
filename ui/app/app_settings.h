// ui/app/app_settings.h — what the user set, kept in QSettings: how to reach the engine (local child
// process or a remote URL + key), model folders, the last model and placement, chat defaults, theme.
#pragma once

#include <QJsonObject>
#include <QString>
#include <QStringList>

struct AppSettings {
  enum class EngineMode { Local, Remote };
  EngineMode engineMode = EngineMode::Local;
  QString enginePath;        // empty: found automatically
  QString devices;           // --devices for the local engine, e.g. "cpu,sim:gpu0:24GiB"
  int ctx = 0;               // 0: the model's
  int threads = 0;           // 0: the engine's default
  QString remoteUrl;         // e.g. http://gpu-box:8080
  QString remoteKey;
  QString lastModel;
  QJsonObject lastPlacement;  // the last placement applied through the GUI
  QStringList modelFolders;   // added by the user
  QJsonObject defaultSampling;
  QString defaultSystemPrompt;
  QString theme = QStringLiteral("system");  // system | light | dark

  static AppSettings load();
  void save() const;
};
