// ui/app/workstation.cpp — engine lifecycle wiring (local child or remote), status polling and state.
#include "ui/app/workstation.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QUrl>

#include "ui/chat/chat_controller.h"
#include "ui/client/engine_client.h"
#include "ui/client/engine_process.h"
#include "ui/models/model_files_model.h"
#include "ui/storage/conversation_store.h"

Workstation::Workstation(const AppSettings& settings, bool persist, QObject* parent)
    : QObject(parent),
      settings_(settings),
      persist_(persist),
      store_(std::make_unique<ConversationStore>()),
      client_(new EngineClient(this)),
      chat_(new ChatController(store_.get(), client_, this)),
      modelFiles_(new ModelFilesModel(this)) {
  chat_->setDefaultSampling(settings_.defaultSampling.isEmpty() ? ChatController::defaultSampling()
                                                                : settings_.defaultSampling);
  chat_->setDefaultSystemPrompt(settings_.defaultSystemPrompt);
  statusTimer_.setInterval(1000);
  connect(&statusTimer_, &QTimer::timeout, client_, &EngineClient::fetchStatus);
  connect(client_, &EngineClient::statusReceived, this, &Workstation::onStatus);
  connect(client_, &EngineClient::devicesReceived, this, &Workstation::devicesChanged);
  connect(client_, &EngineClient::modelLoaded, this, &Workstation::onStatus);
  connect(client_, &EngineClient::requestFailed, this, [this](const QString& op, const QString& message) {
    if (op == QLatin1String("status")) {
      if (isRemote() && ++statusFailures_ >= 2) setState(EngineState::Unreachable);
      return;
    }
    emit notice(tr("%1 failed: %2").arg(op, message));
  });
  connect(client_, &EngineClient::placementApplied, this, [this](const QJsonObject& result) {
    const QJsonObject placement = result.value(QStringLiteral("placement")).toObject();
    if (process_) process_->setPlacement(placement);
    settings_.lastPlacement = placement;
    saveSettings();
    emit notice(tr("placement applied: %n layer(s) moved", nullptr, result.value(QStringLiteral("moved_layers")).toInt()));
    client_->fetchStatus();
  });
  connect(chat_, &ChatController::storageError, this, [this](const QString& m) { emit notice(tr("storage: %1").arg(m)); });
}

Workstation::~Workstation() {
  delete chat_;  // it stores the reply in progress: before the store goes
  chat_ = nullptr;
  delete process_;
  process_ = nullptr;
}

bool Workstation::openStore(const QString& path) {
  if (!store_->open(path)) {
    emit notice(tr("could not open the conversation store %1: %2").arg(store_->path(), store_->lastError()));
    return false;
  }
  chat_->loadConversations();
  return true;
}

void Workstation::saveSettings() {
  if (persist_) settings_.save();
}

void Workstation::connectProcess() {
  connect(process_, &EngineProcess::stateChanged, this, [this](EngineProcess::State s) {
    switch (s) {
      case EngineProcess::State::Starting: setState(EngineState::Starting); break;
      case EngineProcess::State::Loading: setState(EngineState::Loading); break;
      case EngineProcess::State::Crashed: setState(EngineState::Crashed); break;
      case EngineProcess::State::Stopped: setState(EngineState::Stopped); break;
      case EngineProcess::State::Ready: break;  // decided by the status that comes with ready()
    }
  });
  connect(process_, &EngineProcess::ready, this, [this](const QJsonObject& status) {
    onStatus(status);
    client_->fetchDevices();
    client_->fetchStatus();
    statusTimer_.start();
    if (process_->restartCount() > 0) emit engineRestarted(process_->restartCount());
  });
  connect(process_, &EngineProcess::crashed, this, [this](const QString& reason) {
    statusTimer_.stop();
    emit notice(tr("%1 — restarting it").arg(reason));
  });
}

void Workstation::start() {
  if (isRemote()) {
    attachRemote(settings_.remoteUrl, settings_.remoteKey);
    return;
  }
  if (!process_) {
    process_ = new EngineProcess(client_, this);
    connectProcess();
  }
  EngineProcess::Options o;
  o.program = settings_.enginePath;
  o.devices = settings_.devices;
  o.ctx = settings_.ctx;
  o.threads = settings_.threads;
  process_->setOptions(o);
  if (!settings_.lastModel.isEmpty() && QFileInfo::exists(settings_.lastModel)) {
    process_->setModel(QFileInfo(settings_.lastModel).absoluteFilePath());
    process_->setPlacement(settings_.lastPlacement);
  }
  process_->start();
  if (process_->state() == EngineProcess::State::Stopped) emit notice(process_->lastError());
}

void Workstation::attachRemote(const QString& url, const QString& key) {
  if (process_) {
    process_->stop();
    process_->deleteLater();
    process_ = nullptr;
  }
  settings_.engineMode = AppSettings::EngineMode::Remote;
  settings_.remoteUrl = url;
  settings_.remoteKey = key;
  saveSettings();
  statusFailures_ = 0;
  client_->setEndpoint(QUrl(url), key);
  setState(EngineState::Starting);
  client_->fetchStatus();
  client_->fetchDevices();
  statusTimer_.start();
}

void Workstation::useLocalEngine() {
  statusTimer_.stop();
  settings_.engineMode = AppSettings::EngineMode::Local;
  saveSettings();
  start();
}

void Workstation::rescanModels() {
  modelFiles_->scan(modelLocations(settings_.modelFolders));
}

void Workstation::addModelFolder(const QString& folder) {
  if (!settings_.modelFolders.contains(folder)) settings_.modelFolders.append(folder);
  saveSettings();
  rescanModels();
}

void Workstation::loadModel(const QString& path) {
  const QString abs = QFileInfo(path).absoluteFilePath();
  settings_.lastModel = abs;
  settings_.lastPlacement = {};
  saveSettings();
  modelFiles_->addFile(abs, QStringLiteral("opened"));
  if (process_) {
    process_->setModel(abs);
    process_->setPlacement({});
  }
  setState(EngineState::Loading);
  emit notice(tr("loading %1…").arg(QFileInfo(abs).fileName()));
  client_->loadModel(abs, QJsonValue::Undefined, settings_.ctx);
}

void Workstation::applyPlacement(const QJsonObject& placement) { client_->applyPlacement(placement); }

void Workstation::setState(EngineState s) {
  if (state_ == s) return;
  state_ = s;
  emit stateChanged(s);
}

void Workstation::onStatus(const QJsonObject& status) {
  statusFailures_ = 0;
  status_ = status;
  const QString st = status.value(QStringLiteral("state")).toString();
  if (state_ != EngineState::Crashed || (process_ && process_->state() == EngineProcess::State::Ready)) {
    if (st == QLatin1String("ready")) setState(EngineState::Ready);
    else if (st == QLatin1String("loading")) setState(EngineState::Loading);
    else if (st == QLatin1String("empty")) setState(EngineState::NoModel);
  }
  emit statusChanged(status);
}

QString Workstation::stateText() const {
  const QString model = status_.value(QStringLiteral("model")).toObject().value(QStringLiteral("id")).toString();
  switch (state_) {
    case EngineState::Stopped: return process_ && !process_->lastError().isEmpty() ? tr("engine stopped: %1").arg(process_->lastError()) : tr("engine stopped");
    case EngineState::Starting: return isRemote() ? tr("connecting to %1…").arg(settings_.remoteUrl) : tr("engine starting…");
    case EngineState::Loading: return tr("loading model…");
    case EngineState::NoModel: return tr("engine ready · no model");
    case EngineState::Ready: return model.isEmpty() ? tr("engine ready") : tr("engine ready · %1").arg(model);
    case EngineState::Crashed: return tr("engine crashed — restarting (%1)").arg(process_ ? process_->restartCount() : 0);
    case EngineState::Unreachable: return tr("engine unreachable at %1").arg(settings_.remoteUrl);
  }
  return {};
}
