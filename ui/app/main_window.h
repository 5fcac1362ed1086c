// ui/app/main_window.h — the workstation window: model picker and engine state on top, conversations
// | chat / placement / models tabs, devices dock on the right, profiler dock at the bottom. Wires the
// panels (which take engine JSON and emit user actions) to the Workstation's client; no HTTP here.
#pragma once

#include <QJsonObject>
#include <QMainWindow>

class ChatView;
class EngineProblemPanel;
class ModelsPanel;
class QProgressBar;
class QComboBox;
class QDockWidget;
class QLabel;
class QLineEdit;
class QListView;
class QTabWidget;
class Workstation;

namespace strata::ui {
class DevicesPanel;
class PlacementEditor;
class ProfilerPanel;
class TimelineModel;
class TimelinePlot;
}  // namespace strata::ui

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  enum class Tab { Chat, Placement, Models };

  explicit MainWindow(Workstation* workstation, QWidget* parent = nullptr);
  ~MainWindow() override;

  Workstation* workstation() const { return ws_; }
  ChatView* chatView() const { return chatView_; }
  ModelsPanel* modelsPanel() const { return modelsPanel_; }
  strata::ui::DevicesPanel* devicesPanel() const { return devicesPanel_; }
  strata::ui::PlacementEditor* placementEditor() const { return placementEditor_; }
  strata::ui::ProfilerPanel* profilerPanel() const { return profilerPanel_; }
  strata::ui::TimelinePlot* timelinePlot() const;
  strata::ui::TimelineModel* timelineModel() const;
  QDockWidget* profilerDock() const { return profilerDock_; }
  QDockWidget* devicesDock() const { return devicesDock_; }
  QListView* conversationList() const { return conversations_; }
  QLineEdit* chatSearch() const { return search_; }
  EngineProblemPanel* problemPanel() const { return problemPanel_; }
  QTabWidget* tabs() const { return tabs_; }
  void showTab(Tab tab);
  void setProfilerPaused(bool paused);  // the timeline and charts stop taking trace batches

  // The placement editor's ModelInfo JSON from a /status "model" object: the per-block byte sizes
  // when the engine gives them, else an even split of weight_bytes (marked approximate).
  static QJsonObject modelInfoFromStatus(const QJsonObject& status);

 public slots:
  void openModelDialog();
  void showSettings();
  void attachRemoteDialog();
  void injectFaultDialog();  // Engine ▸ Inject fault… (simulated devices)
  void loadModelFile(const QString& path);

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  void changeEvent(QEvent* event) override;
  void showEvent(QShowEvent* event) override;  // first show: fitted again, with the frame known
  void closeEvent(QCloseEvent* event) override;

 private:
  void buildCentral();
  void buildDocks();
  void buildToolbar();
  void buildMenus();       // main_window_actions.cpp
  void wirePanels();
  void onStatus(const QJsonObject& status);
  void updateStateLabel();
  void followEnginePlacement();
  void applyChatSearch();  // hides the chats that do not match the search field
  void restoreWindowGeometry();  // the saved size and place (persisting runs), kept on the screen
 public:
  void fitOnScreen();            // no larger than the screen's available area, and on it
 private:  // the editor shows the engine's placement unless the user is editing

  Workstation* ws_;
  ChatView* chatView_ = nullptr;
  ModelsPanel* modelsPanel_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  EngineProblemPanel* problemPanel_ = nullptr;
  QListView* conversations_ = nullptr;
  QLineEdit* search_ = nullptr;
  QComboBox* modelCombo_ = nullptr;
  QComboBox* ctxCombo_ = nullptr;  // context length: the engine's n_ctx, choices up to the model's
  int engineCtx_ = 0, engineCtxTrain_ = 0;
  void updateContextChoices();
  QLabel* stateLabel_ = nullptr;
  QLabel* fallbackNotice_ = nullptr;
  QProgressBar* loadProgress_ = nullptr;  // status bar: busy while a model loads  // status bar: blocks on the CPU although GPUs are present
  void updateFallbackNotice();
  QDockWidget* devicesDock_ = nullptr;
  QDockWidget* profilerDock_ = nullptr;
  strata::ui::DevicesPanel* devicesPanel_ = nullptr;
  strata::ui::PlacementEditor* placementEditor_ = nullptr;
  strata::ui::ProfilerPanel* profilerPanel_ = nullptr;
  QString modelKey_;        // path + n_layers the placement editor was given
  QJsonObject enginePlacement_;  // the engine's placement, as last reported
  QJsonObject editorSynced_;     // the engine placement the editor was last reset to
};
