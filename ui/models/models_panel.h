// ui/models/models_panel.h — the Models tab: the GGUF files found on this machine, Open… / Add
// folder… / Rescan, and what the engine reports for the loaded model. Asks for a load by signal.
#pragma once

#include <QJsonObject>
#include <QWidget>

class ModelFilesModel;
class QLabel;
class QTreeView;

class ModelsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ModelsPanel(ModelFilesModel* model, QWidget* parent = nullptr);
  QTreeView* view() const { return view_; }

 public slots:
  void setStatus(const QJsonObject& status);  // /strata/v1/status
  void openFileDialog();
  void addFolderDialog();

 signals:
  void loadRequested(const QString& path);
  void folderAdded(const QString& folder);
  void rescanRequested();

 private:
  ModelFilesModel* model_;
  QTreeView* view_;
  QLabel* loaded_;
};
