// ui/app/main_window.cpp — layout of the window and the wiring of panels to the engine client.
#include "ui/app/main_window.h"

#include <algorithm>

#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QLocale>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QSet>
#include <QSettings>
#include <QSignalBlocker>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/app/engine_problem_panel.h"
#include "ui/app/workstation.h"
#include "ui/chat/chat_controller.h"
#include "ui/chat/chat_view.h"
#include "ui/chat/family_sampling.h"
#include "ui/chat/conversation_list_model.h"
#include "ui/client/engine_client.h"
#include "ui/client/engine_process.h"
#include "ui/devices/devices_panel.h"
#include "ui/models/model_files_model.h"
#include "ui/models/model_inspector.h"
#include "ui/models/models_panel.h"
#include "ui/placement/gpu_offload.h"
#include "ui/placement/placement_editor.h"
#include "ui/placement/placement_estimator.h"
#include "ui/placement/placement_model.h"
#include "ui/profiler/profiler_panel.h"
#include "ui/profiler/timeline_model.h"
#include "ui/profiler/timeline_plot.h"
#include "ui/storage/conversation_store.h"

using namespace strata::ui;

MainWindow::MainWindow(Workstation* workstation, QWidget* parent) : QMainWindow(parent), ws_(workstation) {
  setWindowTitle(tr("Strata"));
  setObjectName(QStringLiteral("mainWindow"));
  setAcceptDrops(true);
  setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);
  buildCentral();
  buildDocks();
  buildToolbar();
  buildMenus();
  wirePanels();
  updateStateLabel();
  restoreWindowGeometry();
  // The current chat is highlighted and the message box has the keyboard from the start.
  const int row = ws_->chat()->conversationModel()->rowOf(ws_->chat()->currentConversation());
  if (row >= 0) {
    QSignalBlocker block(conversations_->selectionModel());
    conversations_->setCurrentIndex(ws_->chat()->conversationModel()->index(row));
  }
  showTab(Tab::Chat);
  chatView_->focusInput();
}

void MainWindow::restoreWindowGeometry() {
  if (!ws_->persists() || !restoreGeometry(QSettings().value(QStringLiteral("ui/windowGeometry")).toByteArray()))
    resize(1400, 900);
  fitOnScreen();
  // The docks' sizes as the user left them; the first time, a profiler tall enough for its lanes
  // (each at least 22 px: the plot's minimum height says so) and a Devices dock that leaves the
  // chat most of the width.
  if (!ws_->persists() || !restoreState(QSettings().value(QStringLiteral("ui/windowState")).toByteArray())) {
    resizeDocks({profilerDock_}, {qMax(profilerDock_->minimumSizeHint().height(), height() * 3 / 10)}, Qt::Vertical);
    resizeDocks({devicesDock_}, {qMax(devicesDock_->minimumSizeHint().width(), width() / 5)}, Qt::Horizontal);
  }
}

void MainWindow::fitOnScreen() {
  // Never larger than the screen's available area (at any QT_SCALE_FACTOR), and on it.
  const QScreen* screen = this->screen() ? this->screen() : QGuiApplication::primaryScreen();
  if (!screen || isMaximized() || isFullScreen()) return;
  const QRect avail = screen->availableGeometry();
  const QSize frameExtra = frameGeometry().size() - geometry().size();
  const QSize most = avail.size() - frameExtra;
  // A small screen (or a large QT_SCALE_FACTOR) wins over the panels' minimum sizes: they squeeze.
  const QSize hint = minimumSizeHint();
  if (hint.width() > most.width() || hint.height() > most.height()) setMinimumSize(hint.boundedTo(most));
  QSize size = this->size().boundedTo(most);
  size = size.expandedTo(hint.boundedTo(most));
  if (size != this->size()) resize(size);
  QRect frame = frameGeometry();
  if (!avail.contains(frame)) {
    frame.moveLeft(qBound(avail.left(), frame.left(), qMax(avail.left(), avail.right() - frame.width() + 1)));
    frame.moveTop(qBound(avail.top(), frame.top(), qMax(avail.top(), avail.bottom() - frame.height() + 1)));
    move(frame.topLeft());
  }
}

MainWindow::~MainWindow() = default;

void MainWindow::buildCentral() {
  auto* splitter = new QSplitter(Qt::Horizontal, this);

  auto* side = new QWidget(splitter);
  side->setMinimumWidth(180);  // the chat list never squeezed to nothing
  auto* sideLayout = new QVBoxLayout(side);
  sideLayout->setContentsMargins(6, 6, 0, 6);
  auto* sideHeader = new QHBoxLayout;
  sideHeader->addWidget(new QLabel(tr("<b>Chats</b>"), side), 1);
  auto* newChat = new QToolButton(side);
  newChat->setText(QStringLiteral("+"));
  newChat->setToolTip(tr("New chat (Ctrl+N)"));
  sideHeader->addWidget(newChat);
  sideLayout->addLayout(sideHeader);
  search_ = new QLineEdit(side);
  search_->setObjectName(QStringLiteral("chatSearch"));
  search_->setPlaceholderText(tr("Search chats…"));
  search_->setClearButtonEnabled(true);
  sideLayout->addWidget(search_);
  conversations_ = new QListView(side);
  conversations_->setObjectName(QStringLiteral("conversations"));
  conversations_->setModel(ws_->chat()->conversationModel());
  conversations_->setEditTriggers(QAbstractItemView::EditKeyPressed | QAbstractItemView::DoubleClicked);
  conversations_->setContextMenuPolicy(Qt::ActionsContextMenu);
  sideLayout->addWidget(conversations_, 1);
  connect(newChat, &QToolButton::clicked, ws_->chat(), &ChatController::newConversation);
  // Search across conversations (titles and every message): the others are hidden, not removed.
  connect(search_, &QLineEdit::textChanged, this, &MainWindow::applyChatSearch);
  QAbstractItemModel* list = ws_->chat()->conversationModel();
  connect(list, &QAbstractItemModel::rowsInserted, this, &MainWindow::applyChatSearch);
  connect(list, &QAbstractItemModel::rowsRemoved, this, &MainWindow::applyChatSearch);
  connect(list, &QAbstractItemModel::rowsMoved, this, &MainWindow::applyChatSearch);
  connect(list, &QAbstractItemModel::modelReset, this, &MainWindow::applyChatSearch);
  connect(list, &QAbstractItemModel::dataChanged, this, &MainWindow::applyChatSearch);
  connect(conversations_->selectionModel(), &QItemSelectionModel::currentChanged, this, [this](const QModelIndex& i) {
    if (i.isValid()) ws_->chat()->openConversation(i.data(ConversationListModel::IdRole).toLongLong());
  });
  connect(ws_->chat(), &ChatController::currentConversationChanged, this, [this](qint64 id) {
    const int row = ws_->chat()->conversationModel()->rowOf(id);
    QSignalBlocker block(conversations_->selectionModel());
    if (row >= 0) conversations_->setCurrentIndex(ws_->chat()->conversationModel()->index(row));
    else conversations_->clearSelection();
  });

  auto* middle = new QWidget(splitter);
  auto* middleLayout = new QVBoxLayout(middle);
  middleLayout->setContentsMargins(0, 0, 0, 0);
  problemPanel_ = new EngineProblemPanel(middle);
  middleLayout->addWidget(problemPanel_);
  tabs_ = new QTabWidget(middle);
  tabs_->setObjectName(QStringLiteral("mainTabs"));
  middleLayout->addWidget(tabs_, 1);
  chatView_ = new ChatView(ws_->chat(), tabs_);
  tabs_->addTab(chatView_, tr("Chat"));
  // The editor scrolls as a whole when the tab is lower than its controls need (a small screen, a
  // large QT_SCALE_FACTOR): its block rows keep their minimum instead of being squeezed to none.
  auto* placementScroll = new QScrollArea(tabs_);
  placementScroll->setObjectName(QStringLiteral("placementScroll"));
  placementScroll->setWidgetResizable(true);
  placementScroll->setFrameShape(QFrame::NoFrame);
  placementEditor_ = new PlacementEditor(placementScroll);
  placementScroll->setWidget(placementEditor_);
  tabs_->addTab(placementScroll, tr("Placement"));
  modelsPanel_ = new ModelsPanel(ws_->modelFiles(), tabs_);
  tabs_->addTab(modelsPanel_, tr("Models"));

  splitter->addWidget(side);
  splitter->addWidget(middle);
  middle->setMinimumWidth(360);
  splitter->setChildrenCollapsible(false);
  splitter->setStretchFactor(0, 0);
  splitter->setStretchFactor(1, 1);
  splitter->setSizes({220, 900});
  setCentralWidget(splitter);
  statusBar()->showMessage(tr("Welcome to Strata"), 3000);
  fallbackNotice_ = new QLabel(this);
  fallbackNotice_->setObjectName(QStringLiteral("cpuFallbackNotice"));
  fallbackNotice_->setStyleSheet(QStringLiteral("color: #b05a00;"));
  fallbackNotice_->setWordWrap(true);
  fallbackNotice_->setVisible(false);
  statusBar()->addPermanentWidget(fallbackNotice_, 1);
  loadProgress_ = new QProgressBar(this);
  loadProgress_->setObjectName(QStringLiteral("loadProgress"));
  loadProgress_->setRange(0, 0);  // busy
  loadProgress_->setMaximumWidth(160);
  loadProgress_->setTextVisible(false);
  loadProgress_->setVisible(false);
  statusBar()->addPermanentWidget(loadProgress_);
}

void MainWindow::buildDocks() {
  devicesDock_ = new QDockWidget(tr("Devices"), this);
  devicesDock_->setObjectName(QStringLiteral("devicesDock"));
  devicesPanel_ = new DevicesPanel(devicesDock_);
  devicesDock_->setWidget(devicesPanel_);
  addDockWidget(Qt::RightDockWidgetArea, devicesDock_);

  profilerDock_ = new QDockWidget(tr("Profiler"), this);
  profilerDock_->setObjectName(QStringLiteral("profilerDock"));
  profilerPanel_ = new ProfilerPanel(profilerDock_);
  profilerPanel_->setMinimumHeight(160);
  profilerDock_->setWidget(profilerPanel_);
  addDockWidget(Qt::BottomDockWidgetArea, profilerDock_);
  connect(profilerPanel_, &ProfilerPanel::traceExported, this, [this](const QString& path) {
    statusBar()->showMessage(tr("trace written to %1 (open it in ui.perfetto.dev)").arg(path), 8000);
  });
  connect(profilerPanel_, &ProfilerPanel::exportFailed, this, [this](const QString& reason) {
    statusBar()->showMessage(tr("export failed: %1").arg(reason), 8000);
  });
}

void MainWindow::buildToolbar() {
  QToolBar* tb = addToolBar(tr("Model"));
  tb->setObjectName(QStringLiteral("modelToolbar"));
  tb->setMovable(false);
  modelCombo_ = new QComboBox(tb);
  modelCombo_->setObjectName(QStringLiteral("modelCombo"));
  modelCombo_->setModel(ws_->modelFiles());
  modelCombo_->setMinimumWidth(320);
  modelCombo_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  modelCombo_->setPlaceholderText(tr("Choose a model…"));
  modelCombo_->setCurrentIndex(-1);
  tb->addWidget(modelCombo_);
  connect(modelCombo_, &QComboBox::activated, this, [this](int row) {
    const QString path = ws_->modelFiles()->file(row).path;
    if (!path.isEmpty() && path != ws_->modelFiles()->loadedPath()) loadModelFile(path);
  });
  // The context length, as LM Studio has it on the model bar: the engine's n_ctx, and choices up
  // to the model's trained context; a choice reloads the model with it and is kept.
  auto* ctxTitle = new QLabel(tr("ctx"), tb);
  ctxTitle->setContentsMargins(12, 0, 4, 0);
  tb->addWidget(ctxTitle);
  ctxCombo_ = new QComboBox(tb);
  ctxCombo_->setObjectName(QStringLiteral("contextLength"));
  ctxCombo_->setToolTip(tr("Context length: tokens of a chat the model keeps (KV cache). Choosing one reloads the model."));
  ctxCombo_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  ctxTitle->setBuddy(ctxCombo_);
  tb->addWidget(ctxCombo_);
  connect(ctxCombo_, &QComboBox::activated, this, [this](int index) {
    const int n = ctxCombo_->itemData(index).toInt();
    if (n > 0) ws_->setContextLength(n, engineCtx_);
  });
  updateContextChoices();
  auto* placement = new QPushButton(tr("Placement…"), tb);
  connect(placement, &QPushButton::clicked, this, [this] { showTab(Tab::Placement); });
  tb->addWidget(placement);
  auto* spacer = new QWidget(tb);
  spacer->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
  tb->addWidget(spacer);
  stateLabel_ = new QLabel(tb);
  stateLabel_->setObjectName(QStringLiteral("engineState"));
  stateLabel_->setContentsMargins(8, 0, 8, 0);
  tb->addWidget(stateLabel_);
}

void MainWindow::updateContextChoices() {
  QSignalBlocker block(ctxCombo_);
  ctxCombo_->clear();
  ctxCombo_->setEnabled(engineCtx_ > 0);
  if (engineCtx_ <= 0) {
    ctxCombo_->addItem(tr("no model"), 0);
    ctxCombo_->setMinimumWidth(ctxCombo_->sizeHint().width());
    return;
  }
  QList<int> choices;
  const int top = qMax(engineCtxTrain_, engineCtx_);
  for (int n = 1024; n < top; n *= 2) choices << n;
  if (!choices.contains(engineCtx_)) choices << engineCtx_;
  if (engineCtxTrain_ > 0 && !choices.contains(engineCtxTrain_)) choices << engineCtxTrain_;
  std::sort(choices.begin(), choices.end());
  for (int n : choices) {
    QString text = QLocale().toString(n);
    if (n == engineCtxTrain_) text += tr(" (the model's maximum)");
    ctxCombo_->addItem(text, n);
  }
  ctxCombo_->setCurrentIndex(ctxCombo_->findData(engineCtx_));
  ctxCombo_->setMinimumWidth(ctxCombo_->sizeHint().width());  // the toolbar never squeezes it into "2,04…"

}

void MainWindow::showTab(Tab tab) { tabs_->setCurrentIndex(int(tab)); }

void MainWindow::setProfilerPaused(bool paused) { profilerPanel_->setPaused(paused); }
TimelinePlot* MainWindow::timelinePlot() const { return profilerPanel_->timelinePlot(); }
TimelineModel* MainWindow::timelineModel() const { return profilerPanel_->timelineModel(); }

QJsonObject MainWindow::modelInfoFromStatus(const QJsonObject& status) {
  const QJsonObject m = status.value(QStringLiteral("model")).toObject();
  const int n = m.value(QStringLiteral("n_layers")).toInt();
  if (n <= 0) return {};
  QJsonObject info{{QStringLiteral("name"), m.value(QStringLiteral("id")).toString()}, {QStringLiteral("n_layers"), n}};
  if (m.contains(QStringLiteral("layer_bytes"))) {
    // layer_parts: each block's attention / FFN / experts bytes, so that parts rows have sizes
    // (without it they read "0 B"); n_expert*: the experts rows.
    for (const char* k : {"layer_bytes", "embedding_bytes", "head_bytes", "layer_parts", "n_expert", "n_expert_used"})
      if (m.contains(QLatin1String(k))) info.insert(QLatin1String(k), m.value(QLatin1String(k)));
    return info;
  }
  const double total = m.value(QStringLiteral("weight_bytes")).toDouble();
  const qint64 share = qint64(total / (n + 2));
  info.insert(QStringLiteral("name"), m.value(QStringLiteral("id")).toString() + tr(" (sizes approximate)"));
  info.insert(QStringLiteral("layer_bytes"), share);
  info.insert(QStringLiteral("embedding_bytes"), share);
  info.insert(QStringLiteral("head_bytes"), share);
  return info;
}

void MainWindow::wirePanels() {
  EngineClient* client = ws_->client();
  connect(ws_, &Workstation::stateChanged, this, &MainWindow::updateStateLabel);
  connect(ws_, &Workstation::stateChanged, this, [this](Workstation::EngineState s) {
    // A busy bar while a model loads (the engine reports no fraction: it maps the file).
    loadProgress_->setVisible(s == Workstation::EngineState::Loading);
    // "loading …" does not outlive the load.
    if (s != Workstation::EngineState::Loading && statusBar()->currentMessage().startsWith(tr("loading")))
      statusBar()->showMessage(s == Workstation::EngineState::Ready ? tr("model ready") : ws_->stateText(), 4000);
  });
  connect(ws_, &Workstation::statusChanged, this, &MainWindow::onStatus);
  connect(ws_, &Workstation::notice, this, [this](const QString& t) { statusBar()->showMessage(t, 10000); });
  // No model served (too-small devices, repeated failures): the reason and ways out; no sending.
  connect(ws_, &Workstation::modelProblemChanged, problemPanel_, &EngineProblemPanel::setProblem);
  problemPanel_->setProblem(ws_->modelProblem());
  connect(problemPanel_, &EngineProblemPanel::planRequested, this, [this] {
    showTab(Tab::Placement);
    placementEditor_->setPlanningMode(true);
  });
  connect(problemPanel_, &EngineProblemPanel::settingsRequested, this, &MainWindow::showSettings);
  connect(problemPanel_, &EngineProblemPanel::retryRequested, this, [this] {
    if (ws_->process()) ws_->process()->restart();
    else ws_->start();
  });
  auto updateChatBlock = [this] {
    QString why;
    if (!ws_->canChat()) why = ws_->modelProblem().isEmpty() ? ws_->stateText() : tr("no model is loaded (see above)");
    chatView_->setSendBlockedReason(why);
  };
  connect(ws_, &Workstation::stateChanged, this, updateChatBlock);
  connect(ws_, &Workstation::modelProblemChanged, this, updateChatBlock);
  updateChatBlock();
  connect(ws_, &Workstation::engineRestarted, this, [this](int n) {
    statusBar()->showMessage(tr("the engine was restarted (%1); the model and placement are back").arg(n), 10000);
  });

  // Devices.
  connect(ws_, &Workstation::devicesChanged, devicesPanel_, &DevicesPanel::setDevices);
  connect(ws_, &Workstation::devicesChanged, placementEditor_, [this](const QJsonArray& devices) {
    placementEditor_->setDevices(devices);
    editorSynced_ = {};  // a placement refused for unknown devices may fit these
    followEnginePlacement();
  });
  // The editor opens on the engine's placement and devices, asked for afresh, and follows changes
  // made elsewhere (the status poll carries the placement).
  connect(client, &EngineClient::placementReceived, this, [this](const QJsonObject& placement) {
    enginePlacement_ = placement;
    followEnginePlacement();
  });
  connect(tabs_, &QTabWidget::currentChanged, this, [this, client](int index) {
    if (index != int(Tab::Placement) || !client->hasEndpoint()) return;
    client->fetchDevices();
    if (ws_->state() == Workstation::EngineState::Ready) client->fetchPlacement();
  });

  // Placement editor: its figures are the engine's (one estimate request in flight, the latest edit
  // next), asked for again whenever the engine becomes ready (a restart, a new model).
  auto* estimator = new PlacementEstimator(client, placementEditor_->model(), placementEditor_);
  connect(ws_, &Workstation::stateChanged, estimator, [estimator](Workstation::EngineState s) {
    if (s == Workstation::EngineState::Ready) estimator->refresh();
  });
  // Plans, applies, simulated devices.
  connect(placementEditor_, &PlacementEditor::requestAutoPlan, this, [this, client](const QString& goal) {
    client->plan(goal, ws_->settings().ctx, 0);
  });
  connect(client, &EngineClient::planReceived, placementEditor_, &PlacementEditor::setPlacement);
  connect(placementEditor_, &PlacementEditor::applyRequested, ws_, qOverload<const QJsonObject&, const QString&>(&Workstation::applyPlacement));
  connect(client, &EngineClient::placementApplied, placementEditor_, [this](const QJsonObject&) {
    placementEditor_->applySucceeded();
  });
  connect(client, &EngineClient::requestFailed, this, [this](const QString& op, const QString& message) {
    if (op == QLatin1String("plan") || op == QLatin1String("apply placement")) placementEditor_->showError(message);
  });
  connect(placementEditor_, &PlacementEditor::devicesDeclared, this, [this](const QString& spec) {
    ws_->settings().devices = spec;
    ws_->saveSettings();
    if (ws_->process()) {
      EngineProcess::Options o = ws_->process()->options();
      o.devices = spec;
      ws_->process()->setOptions(o);
      ws_->process()->setPlacement({});
      ws_->process()->restart();
      statusBar()->showMessage(tr("restarting the engine with devices %1").arg(spec), 8000);
    }
  });

  // Trace stream: devices' live memory, the timeline, the charts' series.
  connect(client, &EngineClient::traceBatch, this, [this](const QJsonObject& batch) {
    devicesPanel_->applyMemorySnapshot(batch);
    profilerPanel_->appendBatch(batch);  // held by the panel while paused
  });
  // A lost device and the re-plan: a band on the timeline, the devices list again (the lost one
  // marked), a line in the status bar. The reply that was streaming gets its own note (ChatStream).
  connect(client, &EngineClient::replanned, this, [this, client](const QJsonObject& record) {
    profilerPanel_->timelineModel()->appendReplan(record);
    client->fetchDevices();
    client->fetchStatus();
    const QList<TraceFault>& faults = profilerPanel_->timelineModel()->faults();
    if (!faults.isEmpty()) statusBar()->showMessage(faults.last().text, 15000);
  });
  connect(client, &EngineClient::faultInjected, this, [this](const QString& device, const QString& kind) {
    statusBar()->showMessage(tr("fault injected: %1 on %2").arg(kind, device), 8000);
  });
  connect(ws_->chat(), &ChatController::firstToken, this, [this](int, qint64 ms) {
    profilerPanel_->setStreamingTtft(double(ms));
  });
  connect(ws_->chat(), &ChatController::replyFinished, this, [this](int row) {
    const StoredMessage m = ws_->chat()->chatModel()->message(row);
    profilerPanel_->addReplyStats(double(m.ttftMs), m.tokens, m.tokensPerSecond);
  });
  client->startTraceStream();

  // Models.
  connect(modelsPanel_, &ModelsPanel::loadRequested, this, &MainWindow::loadModelFile);
  connect(modelsPanel_, &ModelsPanel::folderAdded, ws_, &Workstation::addModelFolder);
  connect(modelsPanel_, &ModelsPanel::rescanRequested, ws_, &Workstation::rescanModels);
  // Each listed file described by the engine (architecture, parameters, types, memory at the context).
  ws_->modelFiles()->setContextLength(ws_->settings().ctx);
  modelsPanel_->setInspector(new ModelInspector(client, ws_->modelFiles(), this));
}

void MainWindow::onStatus(const QJsonObject& status) {
  ws_->modelFiles()->setContextLength(ws_->settings().ctx);  // the settings may have changed it
  devicesPanel_->setStatus(status);
  modelsPanel_->setStatus(status);
  // Re-plans the trace stream did not bring (it connected later, or reconnected): the timeline
  // takes each record once, whichever path brings it first.
  for (const QJsonValue& r : status.value(QStringLiteral("replans")).toArray())
    profilerPanel_->timelineModel()->appendReplan(r.toObject());
  const QJsonObject model = status.value(QStringLiteral("model")).toObject();
  const int row = ws_->modelFiles()->rowOfPath(model.value(QStringLiteral("path")).toString());
  if (row >= 0 && modelCombo_->currentIndex() != row) modelCombo_->setCurrentIndex(row);
  const int nCtx = model.value(QStringLiteral("n_ctx")).toInt();
  const int nCtxTrain = model.value(QStringLiteral("n_ctx_train")).toInt();
  if (nCtx != engineCtx_ || nCtxTrain != engineCtxTrain_) {
    engineCtx_ = nCtx;
    engineCtxTrain_ = nCtxTrain;
    updateContextChoices();
  }

  placementEditor_->setDraftModel(status.value(QStringLiteral("speculative")).toObject().value(QStringLiteral("draft")).toObject());
  const QString key = model.value(QStringLiteral("path")).toString() + QLatin1Char('#') +
                      QString::number(model.value(QStringLiteral("n_layers")).toInt());
  if (!model.isEmpty() && key != modelKey_) {
    modelKey_ = key;
    editorSynced_ = {};
    placementEditor_->setModelInfo(modelInfoFromStatus(status));
    // New chats sample as the model's makers suggest (family_sampling.h), unless the user set
    // defaults of their own in Settings: those win.
    const QJsonObject& own = ws_->settings().defaultSampling;
    const bool userDefaults = !own.isEmpty() && own != ChatController::defaultSampling();
    const FamilySampling family = familySampling(model.value(QStringLiteral("architecture")).toString(),
                                                 model.value(QStringLiteral("id")).toString() + QLatin1Char(' ') +
                                                     QFileInfo(model.value(QStringLiteral("path")).toString()).fileName());
    if (!userDefaults) ws_->chat()->setDefaultSampling(family.sampling);
  }
  const QJsonObject placement = status.value(QStringLiteral("placement")).toObject();
  if (!placement.isEmpty()) enginePlacement_ = placement;
  followEnginePlacement();
  updateStateLabel();
}

void MainWindow::applyChatSearch() {
  const QString text = search_->text().trimmed();
  ConversationListModel* list = ws_->chat()->conversationModel();
  QSet<qint64> match;
  if (!text.isEmpty())
    for (qint64 id : ws_->store()->searchConversations(text)) match.insert(id);
  for (int row = 0; row < list->rowCount(); ++row)
    conversations_->setRowHidden(row, !text.isEmpty() && !match.contains(list->conversation(row).id));
}

void MainWindow::followEnginePlacement() {
  PlacementModel* m = placementEditor_->model();
  if (enginePlacement_.isEmpty() || enginePlacement_ == editorSynced_ || m->modelInfo().nLayers <= 0) return;
  if (m->devices().isEmpty()) return;  // not known yet: devicesChanged comes back here
  updateFallbackNotice();
  if (m->hasPendingEdits()) return;    // the user's edits stay; Apply replaces the engine's
  QString error;
  if (m->resetPlacement(enginePlacement_, &error)) editorSynced_ = enginePlacement_;
  else placementEditor_->showError(error);
}

void MainWindow::updateFallbackNotice() {
  QString error;
  const PlacementModel* m = placementEditor_->model();
  const PlacementData engine = PlacementData::fromJson(enginePlacement_, m->modelInfo().nLayers, &error);
  const QString notice = error.isEmpty() ? cpuFallbackNotice(engine, m->devices()) : QString();
  if (notice == fallbackNotice_->text()) return;
  fallbackNotice_->setText(notice);
  fallbackNotice_->setVisible(!notice.isEmpty());
  if (!notice.isEmpty()) statusBar()->showMessage(notice, 10000);
}

void MainWindow::updateStateLabel() {
  using S = Workstation::EngineState;
  const S s = ws_->state();
  const char* colour = s == S::Ready ? "#2e9d4f" : (s == S::Crashed || s == S::Unreachable || s == S::Stopped) ? "#d0342c" : "#d08a1c";
  stateLabel_->setText(QStringLiteral("<span style='color:%1'>●</span> %2").arg(QLatin1String(colour), ws_->stateText().toHtmlEscaped()));
  stateLabel_->setToolTip(ws_->process() ? ws_->process()->recentOutput().right(2000) : ws_->client()->baseUrl().toString());
}

void MainWindow::loadModelFile(const QString& path) {
  if (!QFileInfo(path).isFile()) {
    QMessageBox::warning(this, tr("Open model"), tr("%1 is not a file").arg(path));
    return;
  }
  ws_->loadModel(path);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  ws_->chat()->stop();
  ws_->saveSettings();
  if (ws_->persists()) {
    QSettings().setValue(QStringLiteral("ui/windowGeometry"), saveGeometry());
    QSettings().setValue(QStringLiteral("ui/windowState"), saveState());  // the docks' sizes
  }
  QMainWindow::closeEvent(event);
}
