// ui/models/models_panel.h — the Models tab: the GGUF files found on this machine, Open… / Add
// folder… / Rescan, and what the engine reports for the loaded model. Asks for a load by signal.
// With an inspector, the rows on screen and the selected one are inspected by the engine lazily.
#pragma once

#include <QJsonObject>
#include <QWidget>

class ModelFilesModel;
class ModelInspector;
class QTimer;
class QLabel;
class QTreeView;

class ModelsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ModelsPanel(ModelFilesModel* model, QWidget* parent = nullptr);
  QTreeView* view() const { return view_; }
  void setInspector(ModelInspector* inspector);  // not owned
  void requestVisibleInspections();              // the rows on screen, then the selected one first

 public slots:
  void setStatus(const QJsonObject& status);  // /strata/v1/status
  void openFileDialog();
  void addFolderDialog();

 signals:
  void loadRequested(const QString& path);
  void folderAdded(const QString& folder);
  void rescanRequested();

 protected:
  void showEvent(QShowEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  ModelFilesModel* model_;
  ModelInspector* inspector_ = nullptr;
  QTimer* visibleTimer_;
  QTreeView* view_;
  QLabel* loaded_;
};
