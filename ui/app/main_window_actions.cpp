// ui/app/main_window_actions.cpp — MainWindow's menus, keyboard shortcuts, dialogs, drag-and-drop
// of .gguf files, and following system palette changes.
#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QListView>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QRegularExpression>
#include <QPlainTextEdit>
#include <QShowEvent>
#include <QStatusBar>

#include "ui/app/about_box.h"
#include "ui/app/fault_dialog.h"
#include "ui/app/main_window.h"
#include "ui/app/settings_dialog.h"
#include "ui/app/theme.h"
#include "ui/app/workstation.h"
#include "ui/chat/chat_controller.h"
#include "ui/chat/chat_view.h"
#include "ui/chat/conversation_export.h"
#include "ui/storage/conversation_store.h"
#include "ui/client/engine_client.h"
#include "ui/client/engine_process.h"
#include "ui/devices/device_model.h"
#include "ui/devices/devices_panel.h"

namespace {
QString ggufFromMime(const QMimeData* mime) {
  if (!mime || !mime->hasUrls()) return {};
  for (const QUrl& url : mime->urls()) {
    const QString path = url.toLocalFile();
    if (path.endsWith(QLatin1String(".gguf"), Qt::CaseInsensitive) && QFileInfo(path).isFile()) return path;
  }
  return {};
}
}  // namespace

void MainWindow::buildMenus() {
  ChatController* chat = ws_->chat();
  auto add = [this](QMenu* menu, const QString& text, const QKeySequence& keys, auto&& slot) {
    QAction* a = menu->addAction(text);
    if (!keys.isEmpty()) a->setShortcut(keys);
    connect(a, &QAction::triggered, this, slot);
    return a;
  };

  QMenu* file = menuBar()->addMenu(tr("&File"));
  add(file, tr("&New chat"), QKeySequence::New, [chat] { chat->newConversation(); });
  add(file, tr("&Open model…"), QKeySequence::Open, [this] { openModelDialog(); });
  add(file, tr("Add model &folder…"), {}, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Add a folder of GGUF models"));
    if (!dir.isEmpty()) ws_->addModelFolder(dir);
  });
  file->addSeparator();
  add(file, tr("&Settings…"), QKeySequence(QStringLiteral("Ctrl+,")), [this] { showSettings(); });
  file->addSeparator();
  add(file, tr("&Quit"), QKeySequence::Quit, [this] { close(); });

  QMenu* chatMenu = menuBar()->addMenu(tr("&Chat"));
  add(chatMenu, tr("&Stop reply"), QKeySequence(QStringLiteral("Ctrl+.")), [chat] { chat->stop(); });
  add(chatMenu, tr("&Regenerate reply"), QKeySequence(QStringLiteral("Ctrl+R")), [chat] { chat->regenerate(); });
  add(chatMenu, tr("&Edit last message"), QKeySequence(QStringLiteral("Ctrl+E")), [this, chat] {
    for (int row = chat->chatModel()->rowCount() - 1; row >= 0; --row)
      if (chat->chatModel()->message(row).role == QLatin1String("user")) {
        showTab(Tab::Chat);
        chatView_->startEdit(row);
        return;
      }
  });
  add(chatMenu, tr("&Focus message box"), QKeySequence(QStringLiteral("Ctrl+L")), [this] {
    showTab(Tab::Chat);
    chatView_->focusInput();
  });
  QAction* rename = add(chatMenu, tr("Re&name chat"), QKeySequence(Qt::Key_F2), [this] {
    if (conversations_->currentIndex().isValid()) conversations_->edit(conversations_->currentIndex());
  });
  QAction* del = add(chatMenu, tr("&Delete chat…"), QKeySequence(QStringLiteral("Ctrl+Shift+Backspace")), [this, chat] {
    const qint64 id = chat->currentConversation();
    if (id == 0) return;
    const StoredConversation c = ws_->store()->conversation(id);
    const int n = int(ws_->store()->messages(id).size());
    const auto answer = QMessageBox::question(
        this, tr("Delete chat"), tr("Delete “%1” and its %n message(s)? This cannot be undone.", nullptr, n).arg(c.title),
        QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
    if (answer == QMessageBox::Yes) chat->deleteConversation(id);
  });
  add(chatMenu, tr("E&xport chat…"), QKeySequence(QStringLiteral("Ctrl+Shift+E")), [this, chat] {
    const qint64 id = chat->currentConversation();
    if (id == 0) return;
    const StoredConversation c = ws_->store()->conversation(id);
    QString suggested = c.title;
    suggested.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9 _-]+")), QStringLiteral("_"));
    const QString path = QFileDialog::getSaveFileName(this, tr("Export chat"), suggested + QStringLiteral(".md"),
                                                      tr("Markdown (*.md);;JSON (*.json)"));
    if (path.isEmpty()) return;
    QString error;
    if (exportConversation(path, c, ws_->store()->messages(id), &error)) statusBar()->showMessage(tr("chat exported to %1").arg(path), 6000);
    else QMessageBox::warning(this, tr("Export chat"), error);
  });
  conversations_->addAction(rename);
  conversations_->addAction(del);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  add(view, tr("&Chat"), QKeySequence(QStringLiteral("Ctrl+1")), [this] { showTab(Tab::Chat); });
  add(view, tr("&Placement"), QKeySequence(QStringLiteral("Ctrl+2")), [this] { showTab(Tab::Placement); });
  add(view, tr("&Models"), QKeySequence(QStringLiteral("Ctrl+3")), [this] { showTab(Tab::Models); });
  view->addSeparator();
  QAction* devices = devicesDock_->toggleViewAction();
  devices->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+D")));
  view->addAction(devices);
  QAction* profiler = profilerDock_->toggleViewAction();
  profiler->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+P")));
  view->addAction(profiler);

  QMenu* engine = menuBar()->addMenu(tr("&Engine"));
  add(engine, tr("&Restart engine"), QKeySequence(QStringLiteral("Ctrl+Shift+R")), [this] {
    if (ws_->process()) ws_->process()->restart();
    else ws_->start();
  });
  add(engine, tr("&Attach to a remote engine…"), {}, [this] { attachRemoteDialog(); });
  add(engine, tr("Use the &local engine"), {}, [this] { ws_->useLocalEngine(); });
  engine->addSeparator();
  add(engine, tr("Inject &fault…"), {}, [this] { injectFaultDialog(); });

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  add(help, tr("&About Strata"), {}, [this] { showAboutBox(this, ws_->lastStatus(), ws_->stateText()); });
  add(help, tr("About &Qt"), {}, [] { QApplication::aboutQt(); });
}

void MainWindow::openModelDialog() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open a GGUF model"), QString(),
                                                    tr("GGUF models (*.gguf);;All files (*)"));
  if (!path.isEmpty()) loadModelFile(path);
}

void MainWindow::showSettings() {
  SettingsDialog dialog(ws_->settings(), this);
  if (dialog.exec() != QDialog::Accepted) return;
  const AppSettings before = ws_->settings();
  const AppSettings after = dialog.settings();
  ws_->settings() = after;
  ws_->saveSettings();
  ws_->chat()->setDefaultSampling(after.defaultSampling);
  ws_->chat()->setDefaultSystemPrompt(after.defaultSystemPrompt);
  if (after.theme != before.theme) theme::apply(*qApp, after.theme);
  const bool engineChanged = after.engineMode != before.engineMode || after.enginePath != before.enginePath ||
                             after.devices != before.devices || after.ctx != before.ctx ||
                             after.threads != before.threads || after.remoteUrl != before.remoteUrl ||
                             after.remoteKey != before.remoteKey;
  if (!engineChanged) return;
  if (after.engineMode == AppSettings::EngineMode::Remote) {
    ws_->attachRemote(after.remoteUrl, after.remoteKey);
  } else if (ws_->process()) {
    EngineProcess::Options o = ws_->process()->options();
    o.program = after.enginePath;
    o.devices = after.devices;
    o.ctx = after.ctx;
    o.threads = after.threads;
    ws_->process()->setOptions(o);
    ws_->process()->restart();
  } else {
    ws_->useLocalEngine();
  }
}

void MainWindow::injectFaultDialog() {
  QStringList simulated;
  const strata::ui::DeviceModel* devices = devicesPanel_->model();
  for (int row = 0; row < devices->rowCount(); ++row) {
    const strata::ui::DeviceRow& d = devices->device(row);
    if (d.simulated && !d.failed) simulated << d.id;
  }
  FaultDialog dialog(simulated, this);
  if (dialog.exec() != QDialog::Accepted || dialog.device().isEmpty()) return;
  ws_->client()->injectFault(dialog.device(), dialog.fault());
}

void MainWindow::attachRemoteDialog() {
  bool ok = false;
  const QString url = QInputDialog::getText(this, tr("Attach to an engine"), tr("Engine URL:"), QLineEdit::Normal,
                                            ws_->settings().remoteUrl.isEmpty() ? QStringLiteral("http://") : ws_->settings().remoteUrl, &ok);
  if (!ok || url.isEmpty()) return;
  const QString key = QInputDialog::getText(this, tr("Attach to an engine"), tr("API key (empty: none):"),
                                            QLineEdit::Password, ws_->settings().remoteKey, &ok);
  if (!ok) return;
  ws_->attachRemote(url, key);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (!ggufFromMime(event->mimeData()).isEmpty()) event->acceptProposedAction();
  else QMainWindow::dragEnterEvent(event);
}

void MainWindow::dropEvent(QDropEvent* event) {
  const QString path = ggufFromMime(event->mimeData());
  if (path.isEmpty()) return QMainWindow::dropEvent(event);
  event->acceptProposedAction();
  loadModelFile(path);
}

void MainWindow::showEvent(QShowEvent* event) {
  QMainWindow::showEvent(event);
  if (!event->spontaneous()) fitOnScreen();
}

void MainWindow::changeEvent(QEvent* event) {
  QMainWindow::changeEvent(event);
  if (event->type() == QEvent::PaletteChange || event->type() == QEvent::ThemeChange) updateStateLabel();
}
