// ui/placement/placement_model.h — the placement editor's item model: rows are the model's tiles
// (embedding, blk 0..n-1, head) and, under a block whose parts are shown, its parts (attention, FFN
// part, expert ranges; placement_rows.h); column 0 the model, then one lane per device and per
// tensor group.
// Holds the placement, the model's byte sizes and the devices; drops (MIME
// application/x-strata-layers) become validated, undoable edits. Memory and speed figures are the
// engine's: every change of the shown placement (an edit, a hover preview) asks for them
// (estimateWanted) and PlacementEstimator brings the answer back (setEngineEstimate); until then the
// last answer stays shown. GUI thread only; no HTTP, no engine headers.
#pragma once

#include <QAbstractTableModel>
#include <QJsonArray>
#include <QJsonObject>
#include <QUndoStack>

#include <optional>

#include "ui/placement/placement_data.h"
#include "ui/placement/placement_edit.h"
#include "ui/placement/placement_estimate.h"
#include "ui/placement/placement_rows.h"

namespace strata::ui {

class PlacementModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Roles {
    TileKindRole = Qt::UserRole + 1,  // "embedding" | "block" | "head"
    LayerRole,          // block index, -1 for the embedding and the head
    TileBytesRole,      // quint64 weight bytes of the whole tile
    TargetRole,         // the tile's target: "gpu0", "gpu0+gpu1 2:1"
    PlacedRole,         // bool: the tile's target is exactly this lane (lane columns)
    ShareRole,          // double: this lane's device's share of the tile's split ratio (0 when not a member)
    // Lane roles: headerData(column, Qt::Horizontal, role)
    LaneKindRole,       // "model" | "device" | "group"
    LaneDevicesRole,    // QStringList
    LaneSimulatedRole,  // bool (device lanes)
    LaneWeightsRole,    // quint64 bytes (device lanes; the preview while a drag hovers)
    LaneKvRole,
    LaneScratchRole,
    LaneOverheadRole,
    LaneTotalRole,
    LaneCapacityRole,
    LaneFitsRole,       // bool
    LaneShortfallRole,  // quint64 bytes, 0 when it fits
    // Rows with parts (placement_rows.h).
    TileRole,           // int: the row's tile (0 embedding, 1..n blocks, n+1 head)
    PartRole,           // "whole" | "attention" | "ffn" | "experts"
    ExpertBeginRole,    // int: experts rows' first expert
    ExpertEndRole,      // int: experts rows' end (exclusive)
    ExpandedRole,       // bool: a block row whose parts are shown below it
    PartsHereRole,      // QStringList (lane columns of whole block rows): parts of the block placed on this lane apart from its target
    // Lane roles: the weights by part of the blocks (the engine's "parts"); weights also holds the
    // embedding and the head.
    LaneAttentionRole,
    LaneFfnRole,
    LaneExpertsRole,
  };
  Q_ENUM(Roles)

  static constexpr const char* kMimeType = "application/x-strata-layers";

  explicit PlacementModel(QObject* parent = nullptr);

  // QAbstractItemModel
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QHash<int, QByteArray> roleNames() const override;
  QStringList mimeTypes() const override;
  QMimeData* mimeData(const QModelIndexList& indexes) const override;  // the tiles' rows, as a range
  bool canDropMimeData(const QMimeData* data, Qt::DropAction action, int row, int column,
                       const QModelIndex& parent) const override;
  bool dropMimeData(const QMimeData* data, Qt::DropAction action, int row, int column,
                    const QModelIndex& parent) override;
  Qt::DropActions supportedDropActions() const override { return Qt::MoveAction | Qt::CopyAction; }
  Qt::DropActions supportedDragActions() const override { return Qt::MoveAction; }

  // Inputs.
  // The model's sizes; see ModelInfo in placement_estimate.h for the JSON. Resets the placement to
  // everything on the first accelerator (or the first device) unless it already matches n_layers.
  void setModelInfo(const QJsonObject& info);
  // /strata/v1/devices "devices" (or declared simulated devices, same shape).
  void setDevices(const QJsonArray& devices);
  // The engine's current placement: the baseline "Apply" compares with; clears undo history.
  bool resetPlacement(const QJsonObject& placement, QString* error = nullptr);
  // A new placement (auto-plan result, a loaded file): undoable. False with *error when it does
  // not parse for this model or names unknown devices.
  bool setPlacement(const QJsonObject& placement, QString* error = nullptr);

  // State.
  const ModelInfo& modelInfo() const { return model_; }
  const QList<DeviceSpec>& devices() const { return devices_; }
  const PlacementData& placement() const { return placement_; }
  QJsonObject placementJson() const { return placement_.toJson(); }
  QUndoStack* undoStack() const { return undo_; }
  int tileCount() const { return model_.nLayers > 0 ? model_.nLayers + 2 : 0; }
  TileRow tileRow(int row) const { return rows_.value(row); }
  int rowOf(const TileRow& row) const { return static_cast<int>(rows_.indexOf(row)); }  // -1: not shown

  // Parts of a block, shown as rows under it (view state, not undoable). False when nothing changed.
  bool setExpanded(int layer, bool on);
  bool isExpanded(int layer) const { return expanded_.contains(layer); }
  void setAllExpanded(bool on);
  bool allExpanded() const { return model_.nLayers > 0 && expanded_.size() == model_.nLayers; }
  // Cuts block `layer`'s experts at expert `cut` (1..n_expert-1) into two rows that drag on their
  // own; the cut stays while both sides run on one device. joinExperts drops the block's own cuts
  // (ranges placed apart stay cut).
  bool splitExperts(int layer, int cut);
  bool joinExperts(int layer);

  // Lanes: column 0 the model, 1..devices the devices, then the tensor groups.
  int laneCount() const { return columnCount(); }
  Lane lane(int column) const;
  int laneOfDevice(const QString& id) const;  // -1 when unknown
  // Adds a tensor-group lane (or returns the existing one's column). Validity is checked on drop.
  int addGroupLane(const QStringList& devices, const QList<double>& ratio);
  bool removeGroupLane(int column);  // only a lane no block uses

  // The engine's figures last received, one per device in device order (zeros before the first
  // answer, and while the engine cannot be asked). They are for the shown placement (the preview
  // while a drag hovers) when estimateCurrent(); else an answer for it is on its way.
  QList<DeviceMemoryEstimate> memory() const { return estimate_.memory; }
  DeviceMemoryEstimate memoryOf(const QString& device) const;
  CostPrediction prediction() const { return estimate_.cost; }
  bool hasPrediction() const { return hasEstimate_ && estimate_.hasCost; }
  // With simulated devices: what this machine can run (the engine's cost_on_this_machine).
  CostPrediction predictionOnThisMachine() const { return estimate_.onThisMachine; }
  bool hasPredictionOnThisMachine() const { return hasPrediction() && estimate_.hasOnThisMachine; }
  bool fits() const { return hasEstimate_ && estimate_.fits; }
  bool hasEstimate() const { return hasEstimate_; }
  bool estimateCurrent() const;
  QJsonObject estimatedPlacement() const { return estimateFor_; }  // what the shown figures are for
  QString estimateError() const { return estimate_.error; }        // the engine's: why it does not fit
  QString estimateUnavailable() const { return unavailable_; }     // why the engine could not be asked
  // Empty when Apply may run; else why not: the engine's reason ("device 'gpu1': needs 13.9 GiB
  // (...), has 12.0 GiB: short 1.9 GiB"), "waiting for the engine's estimate", "nothing moved".
  QString applyBlocker() const;
  int changedTileCount() const;  // tiles whose target differs from the applied baseline
  void markApplied();            // the current placement is now the engine's
  // What Apply would move, in words with sizes: "blk 4 FFN part (1.6 MiB) to gpu1", "blk 3–5 (6.3 MiB)
  // to gpu1; the head (262 MiB) to cpu"; "" when nothing changed.
  QString changeSummary() const;
  // The user has changed the placement since the engine's was last set (resetPlacement/markApplied).
  bool hasPendingEdits() const { return applied_.layerCount() > 0 && changedTileCount() > 0; }

  // Edits.
  PlacementEdit editFromMime(const QMimeData* data, int column, QString* error) const;
  bool applyEdit(const PlacementEdit& edit, QString* error = nullptr);  // validate, then push
  bool setKvDeviceForAll(const QString& device);  // "" = KV with its block; undoable
  bool setContext(int nCtx, int nSeq);            // undoable
  // GPU offload (gpu_offload.h): the last n blocks on the accelerators, the rest on the CPU; undoable.
  bool setOffloadedBlocks(int n);
  int offloadedBlockCount() const;
  void previewEdit(const PlacementEdit& edit);    // figures as if applied (invalid edits: none)
  void clearPreview();
  bool isPreviewing() const { return preview_.has_value(); }
  QString lastError() const { return lastError_; }

  // {"first_tile", "last_tile"} and for a part {"part": "ffn"} (experts: {"experts": [begin, end]}).
  static QMimeData* makeMime(int firstTile, int lastTile, BlockPart part = BlockPart::Whole, int expertBegin = 0,
                             int expertEnd = 0);

  // The engine's answers (PlacementEstimator calls these on the GUI thread).
  // The 200 body of POST /strata/v1/placement/estimate for `placement`.
  void setEngineEstimate(const QJsonObject& placement, const QJsonObject& answer);
  // The engine refused `placement` (400: invalid, unknown device): no figures, Apply blocked with `error`.
  void setEstimateRejected(const QJsonObject& placement, const QString& error);
  // The engine could not be asked (unreachable, no model loaded, timed out): figures cleared.
  void setEstimateUnavailable(const QString& reason);
  // Asks again for the shown placement (the engine restarted or reloaded).
  void requestEstimate();

 signals:
  void placementChanged(const QJsonObject& placement);
  void estimateChanged();           // memory / prediction / apply state changed (also previews)
  void editRejected(const QString& reason);
  // The shown placement changed and the engine has not estimated it: ask it (latest wins).
  void estimateWanted(const QJsonObject& placement);

 private:
  void setPlacementData(const PlacementData& p);  // the undo commands' setter
  void pushPlacement(const PlacementData& next, const QString& text);
  void ensureGroupLanes(const PlacementData& p);
  QString checkDevices(const PlacementData& p) const;
  QStringList deviceIds() const;
  const PlacementData& shown() const { return preview_ ? *preview_ : placement_; }
  // The shown placement changed: reuses the last answer when it is for it, else asks for one
  // (force: ask even then, e.g. the devices changed). Emits estimateChanged and lane headers.
  void recompute(bool force = false);
  void takeEstimate(const QJsonObject& placement, const EngineEstimate& estimate);
  void figuresChanged();
  // Rows for placement_, expanded_ and cuts_: the changed blocks' part rows removed and inserted.
  void syncRows();

  ModelInfo model_;
  QList<DeviceSpec> devices_;
  QList<LayerTarget> groups_;      // group lanes, in column order after the devices
  QList<TileRow> rows_;            // rowCount() rows (of placement_: a hover preview keeps the rows)
  QSet<int> expanded_;             // blocks whose parts are shown
  QMap<int, QList<int>> cuts_;     // per block: the user's expert cuts
  PlacementData placement_;
  PlacementData applied_;
  std::optional<PlacementData> preview_;
  EngineEstimate estimate_;        // the last answer (zeros when none)
  QJsonObject estimateFor_;        // the placement it is for
  bool hasEstimate_ = false;
  EngineEstimate committed_;       // the last answer for placement_ itself (not a preview)
  QJsonObject committedFor_;
  bool hasCommitted_ = false;
  QString unavailable_;
  QUndoStack* undo_;
  QString lastError_;
};

}  // namespace strata::ui
