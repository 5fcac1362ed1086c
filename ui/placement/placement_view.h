// ui/placement/placement_view.h — the tiles x lanes table of the placement editor: drag a tile or a
// shift-selected range onto a lane (the lane highlights and the figures preview while hovering);
// double-click a block (or its context menu) to show its parts, drag a part on its own, split a
// block's experts into ranges; and the footer of memory bars under the device lanes. Reads and edits
// a PlacementModel only.
#pragma once

#include <QTableView>

class QMenu;

namespace strata::ui {

class PlacementModel;

class PlacementView : public QTableView {
  Q_OBJECT
 public:
  explicit PlacementView(QWidget* parent = nullptr);
  void setPlacementModel(PlacementModel* model);
  PlacementModel* placementModel() const { return model_; }
  int hoverColumn() const { return hoverColumn_; }
  // The context menu of a row (owned by parent): "Show parts" / "Hide parts" on a block, "Show the
  // parts of every block", "Hide the parts of every block", and on an experts row "Split experts…"
  // (a spin box for the first expert of the second range) and "Join expert ranges".
  QMenu* rowMenu(const QModelIndex& index, QWidget* parent);

 protected:
  void startDrag(Qt::DropActions supportedActions) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dragMoveEvent(QDragMoveEvent* event) override;
  void dragLeaveEvent(QDragLeaveEvent* event) override;
  void dropEvent(QDropEvent* event) override;  // onto the lane under the cursor, whatever the row
  void paintEvent(QPaintEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;  // on a block: show or hide its parts

 private:
  void askSplitExperts(int layer, int begin, int end);
  void setHover(int column);
  PlacementModel* model_ = nullptr;
  int hoverColumn_ = -1;
};

// Memory bars with "used / capacity ✓" or "✗ short X" under each device lane, aligned to the view's
// columns; hovering one shows its lane's figures (weights by part, KV, scratch, overhead).
class LaneFooter : public QWidget {
  Q_OBJECT
 public:
  LaneFooter(PlacementView* view, QWidget* parent = nullptr);
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;  // tooltips: the lane header's (weights by part, KV, scratch)

 private:
  PlacementView* view_;
};

}  // namespace strata::ui
