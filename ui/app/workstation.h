// ui/app/workstation.h — the GUI's non-widget core: settings, the conversation store, the engine
// client and (local mode) the engine child process, the chat controller, the model files list, and
// the engine state the window shows. Widgets are built over it by MainWindow; tests drive it directly.
// With sharing on (the `strata` executable), a local-mode workstation first looks for the engine of
// a workstation already running for this user (shared_engine.h) and attaches to it; the one that
// starts an engine publishes it there.
#pragma once

#include <QJsonObject>
#include <QObject>
#include <QTimer>
#include <memory>

#include "ui/app/app_settings.h"
#include "ui/app/shared_engine.h"

class ChatController;
class ConversationStore;
class EngineClient;
class EngineProcess;
class ModelFilesModel;

class Workstation : public QObject {
  Q_OBJECT
 public:
  enum class EngineState { Stopped, Starting, Loading, NoModel, Ready, Crashed, Unreachable };
  Q_ENUM(EngineState)

  // `persist`: write settings changes back to QSettings (false in tests and screenshot runs).
  explicit Workstation(const AppSettings& settings, bool persist = true, QObject* parent = nullptr);
  ~Workstation() override;

  // Opens the SQLite store (empty: the default file in the user's data folder) and the conversations.
  bool openStore(const QString& path = {});
  // Off by default (tests, screenshot runs); set before start().
  void setShareEngine(bool share) { share_ = share; }
  // Local mode: starts the engine child (with the last model when there is one). Remote: attaches.
  void start();
  void attachRemote(const QString& url, const QString& key);
  void useLocalEngine();
  void rescanModels();
  void addModelFolder(const QString& folder);

  void loadModel(const QString& path);               // remembered for restarts
  // summary: what moves, for the notice when the engine has applied it ("" : the engine's count).
  void applyPlacement(const QJsonObject& placement, const QString& summary);
  // The context length models are loaded with (0: the engine's default, min(the model's, 4096)),
  // saved; the loaded model is loaded again with it when it differs from `current` (the engine's n_ctx).
  void setContextLength(int nCtx, int current);
  void applyPlacement(const QJsonObject& placement);  // PUT, remembered for restarts on success

  // Command-line options of this run (before start()): in effect in settings(), never saved.
  void setRunOverrides(const RunOverrides& overrides);
  AppSettings& settings() { return settings_; }  // in effect now
  bool persists() const { return persist_; }
  void saveSettings();  // settings() less the run's command-line options the user has not changed
  EngineClient* client() const { return client_; }
  EngineProcess* process() const { return process_; }  // null in remote mode
  ConversationStore* store() const { return store_.get(); }
  ChatController* chat() const { return chat_; }
  ModelFilesModel* modelFiles() const { return modelFiles_; }

  EngineState state() const { return state_; }
  QString stateText() const;       // "engine ready", "engine crashed — restarting (2)", ...
  // Why no model is being served, when the engine says so (its status "startup" error: the devices
  // are too small for it) or the local engine failed twice the same way and is not restarted; empty
  // otherwise. The window shows it with ways out.
  QString modelProblem() const { return modelProblem_; }
  // Whether a chat message can be sent now (an engine answers and has a model).
  bool canChat() const { return state_ == EngineState::Ready; }
  QJsonObject lastStatus() const { return status_; }
  bool isRemote() const { return settings_.engineMode == AppSettings::EngineMode::Remote; }
  // Attached to the engine of another workstation (local mode, not remembered in the settings).
  bool isShared() const { return shared_.isValid(); }
  SharedEngine sharedEngine() const { return shared_; }

 signals:
  void stateChanged(Workstation::EngineState state);
  void statusChanged(const QJsonObject& status);
  void devicesChanged(const QJsonArray& devices);
  void notice(const QString& text);    // one line for the status bar
  void engineRestarted(int count);
  void modelProblemChanged(const QString& problem);  // empty: solved

 private:
  void setState(EngineState s);
  void setModelProblem(const QString& problem);
  void onStatus(const QJsonObject& status);
  void connectProcess();
  void startLocal();
  void attachShared(const SharedEngine& engine);
  void onSharedUnreachable();
  void leaveShared();

  AppSettings settings_;
  AppSettings savedSettings_;  // as loaded, before the run's overrides
  RunOverrides overrides_;
  bool persist_;
  std::unique_ptr<ConversationStore> store_;
  EngineClient* client_;
  EngineProcess* process_ = nullptr;
  ChatController* chat_;
  ModelFilesModel* modelFiles_;
  QTimer statusTimer_;
  EngineState state_ = EngineState::Stopped;
  QJsonObject status_;
  QString modelProblem_;
  int statusFailures_ = 0;
  bool share_ = false;
  SharedEngine shared_;  // valid while attached to another workstation's engine
  QString applySummary_;  // what the placement being applied moves, in words (for the notice)
  int attachId_ = 0;     // drops the answer of an attach check that was superseded
};
