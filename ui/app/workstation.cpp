// ui/app/workstation.cpp — engine lifecycle wiring (local child, another workstation's engine, or
// remote), status polling and state.
#include "ui/app/workstation.h"

#include <QCoreApplication>
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
      if (isShared()) {
        if (++statusFailures_ >= 2) onSharedUnreachable();
        return;
      }
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
    // What moved in words (a part of a block is not "1 layer"), else the engine's count.
    const int moved = result.value(QStringLiteral("moved_layers")).toInt();
    emit notice(!applySummary_.isEmpty() ? tr("placement applied: %1").arg(applySummary_)
                                         : tr("placement applied: %n block(s) moved", nullptr, moved));
    applySummary_.clear();
    client_->fetchStatus();
  });
  connect(chat_, &ChatController::storageError, this, [this](const QString& m) { emit notice(tr("storage: %1").arg(m)); });
}

Workstation::~Workstation() {
  delete chat_;  // it stores the reply in progress: before the store goes
  chat_ = nullptr;
  if (share_) SharedEngine::removeIfOwnedBy(QCoreApplication::applicationPid());  // before it goes
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

void Workstation::setRunOverrides(const RunOverrides& overrides) {
  savedSettings_ = settings_;
  overrides_ = overrides;
  settings_ = overrides.applied(savedSettings_);
}

void Workstation::saveSettings() {
  if (persist_) overrides_.toSave(settings_, savedSettings_).save();
}

void Workstation::connectProcess() {
  connect(process_, &EngineProcess::stateChanged, this, [this](EngineProcess::State s) {
    switch (s) {
      case EngineProcess::State::Starting:
        setModelProblem({});  // a new try: its status says again what is wrong, if anything
        setState(EngineState::Starting);
        break;
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
    if (share_) {
      // Published for the next workstation, unless another live one has published its own.
      const qint64 self = QCoreApplication::applicationPid();
      const SharedEngine listed = SharedEngine::read();
      if (listed.ownerPid == self || !SharedEngine::processAlive(listed.ownerPid)) {
        const SharedEngine me{client_->baseUrl(), client_->apiKey(), process_->pid(), self};
        QString error;
        if (!me.write(&error)) emit notice(tr("other workstations will not find this engine: %1").arg(error));
      }
    }
    if (process_->restartCount() > 0) emit engineRestarted(process_->restartCount());
  });
  connect(process_, &EngineProcess::crashed, this, [this](const QString& reason) {
    statusTimer_.stop();
    emit notice(tr("%1 — restarting it").arg(reason));
  });
  connect(process_, &EngineProcess::gaveUp, this, [this](const QString& reason) {
    statusTimer_.stop();
    setModelProblem(tr("The engine failed twice in the same way, so it is not restarted again: %1").arg(reason));
  });
}

void Workstation::start() {
  leaveShared();
  if (isRemote()) {
    attachRemote(settings_.remoteUrl, settings_.remoteKey);
    return;
  }
  if (share_ && !process_) {
    const SharedEngine other = SharedEngine::read();
    if (other.isValid() && other.ownerPid != QCoreApplication::applicationPid() &&
        SharedEngine::processAlive(other.ownerPid)) {
      attachShared(other);
      return;
    }
  }
  startLocal();
}

void Workstation::startLocal() {
  if (!process_) {
    process_ = new EngineProcess(client_, this);
    connectProcess();
  }
  EngineProcess::Options o;
  o.program = settings_.enginePath;
  o.devices = settings_.devices;
  o.ctx = settings_.ctx;
  o.threads = settings_.threads;
  o.draftModel = settings_.draftModel;
  process_->setOptions(o);
  if (!settings_.lastModel.isEmpty() && QFileInfo::exists(settings_.lastModel)) {
    process_->setModel(QFileInfo(settings_.lastModel).absoluteFilePath());
    process_->setPlacement(settings_.lastPlacement);
  }
  process_->start();
  if (process_->state() == EngineProcess::State::Stopped) emit notice(process_->lastError());
}

void Workstation::attachShared(const SharedEngine& engine) {
  const int id = ++attachId_;
  statusTimer_.stop();
  setState(EngineState::Starting);
  client_->setEndpoint(engine.url, engine.apiKey);
  client_->send("GET", QStringLiteral("/strata/v1/status"), QJsonValue::Undefined, this,
                [this, id, engine](const EngineResult& r) {
                  if (id != attachId_) return;
                  const QString who = tr("the workstation already running (pid %1)").arg(engine.ownerPid);
                  if (!r.ok()) {
                    const QString why = tr("%1 has an engine at %2, but it does not answer (%3): starting an engine of its own")
                                            .arg(who, engine.url.toString(), r.error);
                    qInfo("strata: %s", qPrintable(why));
                    emit notice(why);
                    startLocal();
                    return;
                  }
                  shared_ = engine;
                  statusFailures_ = 0;
                  const QString what = tr("attached to the engine of %1 at %2").arg(who, engine.url.toString());
                  qInfo("strata: %s", qPrintable(what));
                  emit notice(what);
                  onStatus(r.object());
                  client_->fetchDevices();
                  statusTimer_.start();
                },
                QString(), 3000);
}

void Workstation::onSharedUnreachable() {
  const SharedEngine was = shared_;
  if (SharedEngine::processAlive(was.ownerPid)) {
    // Its workstation is still there: it restarts its engine and lists the new one.
    const SharedEngine now = SharedEngine::read();
    if (now.isValid() && now.ownerPid == was.ownerPid && now.url != was.url) {
      leaveShared();
      attachShared(now);
    } else {
      setState(EngineState::Unreachable);
    }
    return;
  }
  leaveShared();
  emit notice(tr("the workstation (pid %1) whose engine this one used has quit: starting an engine").arg(was.ownerPid));
  start();  // another workstation may have published its engine meanwhile
}

void Workstation::leaveShared() {
  ++attachId_;
  if (!shared_.isValid()) return;
  shared_ = {};
  statusTimer_.stop();
}

void Workstation::attachRemote(const QString& url, const QString& key) {
  leaveShared();
  if (process_) {
    if (share_) SharedEngine::removeIfOwnedBy(QCoreApplication::applicationPid());
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

void Workstation::setContextLength(int nCtx, int current) {
  if (nCtx < 0) return;
  settings_.ctx = nCtx;
  saveSettings();
  modelFiles_->setContextLength(nCtx);
  if (process_) {  // restarts keep it
    EngineProcess::Options o = process_->options();
    o.ctx = nCtx;
    process_->setOptions(o);
  }
  if (nCtx > 0 && nCtx != current && !settings_.lastModel.isEmpty()) {
    setState(EngineState::Loading);
    emit notice(tr("loading %1 with a context of %2 tokens…").arg(QFileInfo(settings_.lastModel).fileName()).arg(nCtx));
    client_->loadModel(settings_.lastModel, QJsonValue::Undefined, nCtx);
  }
}

void Workstation::applyPlacement(const QJsonObject& placement) { applyPlacement(placement, QString()); }

void Workstation::applyPlacement(const QJsonObject& placement, const QString& summary) {
  applySummary_ = summary;
  client_->applyPlacement(placement);
}

void Workstation::setState(EngineState s) {
  if (state_ == s) return;
  state_ = s;
  emit stateChanged(s);
}

void Workstation::setModelProblem(const QString& problem) {
  if (modelProblem_ == problem) return;
  modelProblem_ = problem;
  emit modelProblemChanged(problem);
}

void Workstation::onStatus(const QJsonObject& status) {
  statusFailures_ = 0;
  status_ = status;
  const QString st = status.value(QStringLiteral("state")).toString();
  const QJsonValue startupError = status.value(QStringLiteral("startup")).toObject().value(QStringLiteral("error"));
  setModelProblem(st == QLatin1String("empty") && startupError.isString() ? startupError.toString() : QString());
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
    case EngineState::Stopped:
      if (!modelProblem_.isEmpty()) return tr("engine stopped (see above)");
      return process_ && !process_->lastError().isEmpty() ? tr("engine stopped: %1").arg(process_->lastError()) : tr("engine stopped");
    case EngineState::Starting: return isRemote() ? tr("connecting to %1…").arg(settings_.remoteUrl) : tr("engine starting…");
    case EngineState::Loading: return tr("loading model…");
    case EngineState::NoModel: return modelProblem_.isEmpty() ? tr("engine ready · no model") : tr("engine ready · model not loaded (see above)");
    case EngineState::Ready:
      if (isShared()) return tr("engine of workstation %1 ready%2").arg(shared_.ownerPid).arg(model.isEmpty() ? QString() : QStringLiteral(" · ") + model);
      return model.isEmpty() ? tr("engine ready") : tr("engine ready · %1").arg(model);
    case EngineState::Crashed: return tr("engine crashed — restarting (%1)").arg(process_ ? process_->restartCount() : 0);
    case EngineState::Unreachable:
      return isShared() ? tr("engine of workstation %1 unreachable at %2").arg(shared_.ownerPid).arg(shared_.url.toString())
                        : tr("engine unreachable at %1").arg(settings_.remoteUrl);
  }
  return {};
}
