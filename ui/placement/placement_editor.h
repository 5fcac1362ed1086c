// ui/placement/placement_editor.h — the placement editor panel: auto-plan buttons, undo/redo, save
// and load, the tiles x lanes view with memory bars, tensor groups, KV location, the predicted speed,
// Apply (refused with the reason when a lane overflows), and the planning mode with simulated devices.
// Takes engine JSON through slots and emits signals; the shell does the HTTP (and connects a
// PlacementEstimator to model() for the engine's figures).
#pragma once

#include <QJsonArray>
#include <QJsonObject>
#include <QWidget>

class QLabel;
class QLineEdit;
class QPushButton;
class QSlider;
class QRadioButton;

namespace strata::ui {

class LaneFooter;
class PlacementModel;
class PlacementView;
class SimulatedDevicesWidget;

class PlacementEditor : public QWidget {
  Q_OBJECT
 public:
  explicit PlacementEditor(QWidget* parent = nullptr);

  PlacementModel* model() const { return model_; }
  PlacementView* view() const { return view_; }
  SimulatedDevicesWidget* simulatedDevices() const { return simulated_; }
  QPushButton* applyButton() const { return apply_; }
  QString applyBlockedReason() const;  // empty when Apply is enabled

  // Files: the placement JSON of docs/placement.md. False with *error (file or parse problem).
  bool savePlacement(const QString& path, QString* error = nullptr) const;
  bool loadPlacement(const QString& path, QString* error = nullptr);  // undoable

 public slots:
  void setModelInfo(const QJsonObject& info);        // tile sizes: see ModelInfo (placement_estimate.h)
  void setDevices(const QJsonArray& devices);        // /strata/v1/devices "devices"
  // Speculative decoding's draft model (/strata/v1/status "speculative"."draft": {id, device,
  // weight_bytes, ...}; empty: none): a line says where it runs and what it holds there, beside
  // this placement.
  void setDraftModel(const QJsonObject& draft);
  void resetPlacement(const QJsonObject& placement); // the engine's current placement (baseline)
  // An auto-plan result: the /strata/v1/plan response ({placement, explanation, ...}) or a bare
  // placement. Undoable; the explanation lines are shown.
  void setPlacement(const QJsonObject& planOrPlacement);
  void applySucceeded();                             // the engine took the placement: new baseline
  void showError(const QString& message);            // e.g. a failed /plan or PUT /placement
  void setPlanningMode(bool on);                     // shows the simulated-device declarations

 signals:
  void requestAutoPlan(const QString& goal);         // "fit" | "balance" | "fewest-transfers"
  // PUT /strata/v1/placement; summary: what moves, in words (PlacementModel::changeSummary).
  void applyRequested(const QJsonObject& placement, const QString& summary);
  void devicesDeclared(const QString& devicesSpec);  // planning mode: --devices for the engine

 protected:
  void changeEvent(QEvent* event) override;  // palette changes: warning colours follow

 private:
  void refresh();
  void restyleWarnings();
  void addGroupFromText();

  PlacementModel* model_;
  PlacementView* view_;
  LaneFooter* footer_;
  SimulatedDevicesWidget* simulated_;
  QLabel* title_;
  QLabel* prediction_;
  QLabel* draft_;  // the draft model's line; hidden without one
  QSlider* offload_ = nullptr;       // GPU offload: blocks on accelerators
  QLabel* offloadLabel_ = nullptr;
  QLabel* message_;
  QLabel* blocked_;
  QLineEdit* groupSpec_;
  QRadioButton* kvWithLayer_;
  QRadioButton* kvOnCpu_;
  QPushButton* apply_;
};

}  // namespace strata::ui
