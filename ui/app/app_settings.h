// ui/app/app_settings.h — what the user set, kept in QSettings: how to reach the engine (local child
// process or a remote URL + key), model folders, the last model and placement, chat defaults, theme.
#pragma once

#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <optional>

struct AppSettings {
  enum class EngineMode { Local, Remote };
  EngineMode engineMode = EngineMode::Local;
  QString enginePath;        // empty: found automatically
  QString devices;           // --devices for the local engine, e.g. "cpu,sim:gpu0:24GiB"
  int ctx = 0;               // 0: the model's
  int threads = 0;           // 0: the engine's default
  QString draftModel;        // --draft for the local engine (speculative decoding); empty: none
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

// The options of one run given on the command line (--model, --devices, --ctx, --threads, --engine,
// --remote/--api-key): they replace the saved settings for that run and are never saved themselves.
struct RunOverrides {
  std::optional<QString> model;       // also clears the last placement (it belongs to another model)
  std::optional<QString> devices;
  std::optional<int> ctx;
  std::optional<int> threads;
  std::optional<QString> enginePath;
  std::optional<QString> remoteUrl;   // remote mode, with remoteKey
  QString remoteKey;

  bool isEmpty() const { return !model && !devices && !ctx && !threads && !enginePath && !remoteUrl; }
  // `saved` with these options in effect.
  AppSettings applied(const AppSettings& saved) const;
  // What to save from `current` (the settings in effect now): each overridden value the user has not
  // changed since the start is put back to its value in `saved`.
  AppSettings toSave(const AppSettings& current, const AppSettings& saved) const;
};
