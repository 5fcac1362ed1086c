// ui/placement/placement_view.cpp — PlacementView drag and drop and the LaneFooter painting.
#include "ui/placement/placement_view.h"

#include <QDrag>
#include <QDragEnterEvent>
#include <QContextMenuEvent>
#include <QHeaderView>
#include <QInputDialog>
#include <QItemSelection>
#include <QMenu>
#include <QMimeData>
#include <QPainter>
#include <QScrollBar>
#include <QToolTip>

#include "ui/devices/memory_bar.h"
#include "ui/placement/placement_model.h"

namespace strata::ui {

PlacementView::PlacementView(QWidget* parent) : QTableView(parent) {
  setSelectionMode(QAbstractItemView::ExtendedSelection);  // ctrl-click: one part of several blocks
  setDragEnabled(true);
  setAcceptDrops(true);
  setDropIndicatorShown(false);
  setDragDropMode(QAbstractItemView::DragDrop);
  setDefaultDropAction(Qt::MoveAction);
  setEditTriggers(QAbstractItemView::NoEditTriggers);
  setShowGrid(false);
  verticalHeader()->hide();
  verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
  horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  setVerticalScrollMode(QAbstractItemView::ScrollPerPixel);
}

void PlacementView::setPlacementModel(PlacementModel* model) {
  model_ = model;
  setModel(model);
}

void PlacementView::startDrag(Qt::DropActions) {
  // Our own QDrag: the base class would try to remove the dragged rows after a move.
  const QModelIndexList selected = selectedIndexes();
  if (!model_ || selected.isEmpty()) return;
  QMimeData* mime = model_->mimeData(selected);
  if (!mime) return;
  auto* drag = new QDrag(this);
  drag->setMimeData(mime);
  drag->exec(Qt::MoveAction | Qt::CopyAction, Qt::MoveAction);
  setHover(-1);
  model_->clearPreview();
}

QMenu* PlacementView::rowMenu(const QModelIndex& index, QWidget* parent) {
  auto* menu = new QMenu(parent);
  if (!model_) return menu;
  const int layer = index.isValid() ? model_->data(index, PlacementModel::LayerRole).toInt() : -1;
  const QString part = index.isValid() ? model_->data(index, PlacementModel::PartRole).toString() : QString();
  if (layer >= 0) {
    const bool shown = model_->isExpanded(layer);
    QAction* toggle = menu->addAction(shown ? tr("Hide parts of blk %1").arg(layer) : tr("Show parts of blk %1").arg(layer));
    toggle->setObjectName(shown ? QStringLiteral("hideParts") : QStringLiteral("showParts"));
    connect(toggle, &QAction::triggered, this, [this, layer, shown] { model_->setExpanded(layer, !shown); });
  }
  if (part == QLatin1String("experts")) {
    const int begin = model_->data(index, PlacementModel::ExpertBeginRole).toInt();
    const int end = model_->data(index, PlacementModel::ExpertEndRole).toInt();
    QAction* split = menu->addAction(tr("Split experts…"));
    split->setObjectName(QStringLiteral("splitExperts"));
    split->setEnabled(end - begin > 1);
    connect(split, &QAction::triggered, this, [this, layer, begin, end] { askSplitExperts(layer, begin, end); });
    QAction* join = menu->addAction(tr("Join expert ranges"));
    join->setObjectName(QStringLiteral("joinExperts"));
    connect(join, &QAction::triggered, this, [this, layer] { model_->joinExperts(layer); });
  }
  menu->addSeparator();
  QAction* all = menu->addAction(tr("Show the parts of every block"));
  all->setObjectName(QStringLiteral("showAllParts"));
  connect(all, &QAction::triggered, this, [this] { model_->setAllExpanded(true); });
  QAction* none = menu->addAction(tr("Hide the parts of every block"));
  none->setObjectName(QStringLiteral("hideAllParts"));
  connect(none, &QAction::triggered, this, [this] { model_->setAllExpanded(false); });
  return menu;
}

void PlacementView::askSplitExperts(int layer, int begin, int end) {
  bool ok = false;
  const int cut = QInputDialog::getInt(this, tr("Split experts"),
                                       tr("blk %1, experts %2-%3: the second range starts at expert").arg(layer).arg(begin).arg(end - 1),
                                       (begin + end) / 2, begin + 1, end - 1, 1, &ok);
  if (!ok) return;
  // Every selected experts row of the same range is cut alike, so the ranges drag together.
  QList<int> layers{layer};
  for (const QModelIndex& i : selectedIndexes())
    if (model_->data(i, PlacementModel::PartRole).toString() == QLatin1String("experts") &&
        model_->data(i, PlacementModel::ExpertBeginRole).toInt() == begin &&
        model_->data(i, PlacementModel::ExpertEndRole).toInt() == end && !layers.contains(model_->data(i, PlacementModel::LayerRole).toInt()))
      layers << model_->data(i, PlacementModel::LayerRole).toInt();
  for (int l : layers) model_->splitExperts(l, cut);
}

void PlacementView::contextMenuEvent(QContextMenuEvent* event) {
  QMenu* menu = rowMenu(indexAt(event->pos()), this);
  menu->setAttribute(Qt::WA_DeleteOnClose);
  menu->popup(event->globalPos());
}

void PlacementView::mouseDoubleClickEvent(QMouseEvent* event) {
  const QModelIndex index = indexAt(event->position().toPoint());
  if (model_ && index.isValid() && model_->data(index, PlacementModel::PartRole).toString() == QLatin1String("whole")) {
    const int layer = model_->data(index, PlacementModel::LayerRole).toInt();
    if (layer >= 0) {
      model_->setExpanded(layer, !model_->isExpanded(layer));
      event->accept();
      return;
    }
  }
  QTableView::mouseDoubleClickEvent(event);
}

void PlacementView::setHover(int column) {
  if (hoverColumn_ == column) return;
  hoverColumn_ = column;
  viewport()->update();
}

void PlacementView::dragEnterEvent(QDragEnterEvent* event) {
  if (model_ && event->mimeData()->hasFormat(QString::fromLatin1(PlacementModel::kMimeType))) event->acceptProposedAction();
  else event->ignore();
}

void PlacementView::dragMoveEvent(QDragMoveEvent* event) {
  if (!model_) return event->ignore();
  const int column = columnAt(event->position().toPoint().x());
  QString error;
  const PlacementEdit edit = model_->editFromMime(event->mimeData(), column, &error);
  if (!error.isEmpty() || !model_->canDropMimeData(event->mimeData(), event->dropAction(), -1, column, {})) {
    setHover(-1);
    model_->clearPreview();
    event->ignore();
    return;
  }
  setHover(column);
  model_->previewEdit(edit);  // memory bars and prediction follow the hover
  event->setDropAction(Qt::MoveAction);
  event->accept();
}

void PlacementView::dragLeaveEvent(QDragLeaveEvent* event) {
  setHover(-1);
  if (model_) model_->clearPreview();
  QTableView::dragLeaveEvent(event);
}

void PlacementView::dropEvent(QDropEvent* event) {
  setHover(-1);
  if (!model_) return event->ignore();
  const int column = columnAt(event->position().toPoint().x());
  QList<int> rows;  // the dragged tiles, when they came from this view's selection
  for (const QModelIndex& i : selectionModel()->selectedIndexes())
    if (!rows.contains(i.row())) rows << i.row();
  if (model_->dropMimeData(event->mimeData(), Qt::MoveAction, -1, column, {})) {
    event->setDropAction(Qt::CopyAction);  // nothing to remove at the source
    event->accept();
    // The selection follows the tiles to their lane: left behind, it painted the vacated cells as
    // solid highlight boxes, as if something were still there.
    QItemSelection moved;
    for (int r : rows) {
      const QModelIndex at = model_->index(r, column);
      if (at.isValid() && (model_->flags(at) & Qt::ItemIsSelectable)) moved.select(at, at);
    }
    selectionModel()->select(moved, QItemSelectionModel::ClearAndSelect);
    if (!moved.isEmpty()) selectionModel()->setCurrentIndex(moved.indexes().first(), QItemSelectionModel::NoUpdate);
    viewport()->update();
  } else {
    event->ignore();
  }
}

void PlacementView::paintEvent(QPaintEvent* event) {
  QTableView::paintEvent(event);
  if (hoverColumn_ < 0) return;
  QPainter p(viewport());
  const QRect r(columnViewportPosition(hoverColumn_), 0, columnWidth(hoverColumn_), viewport()->height());
  p.fillRect(r, QColor(0x3b, 0x7d, 0xd8, 40));
  p.setPen(QPen(QColor(0x3b, 0x7d, 0xd8), 2));
  p.drawRect(r.adjusted(1, 1, -1, -1));
}

LaneFooter::LaneFooter(PlacementView* view, QWidget* parent) : QWidget(parent), view_(view) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  connect(view->horizontalHeader(), &QHeaderView::sectionResized, this, qOverload<>(&QWidget::update));
  connect(view->horizontalScrollBar(), &QScrollBar::valueChanged, this, qOverload<>(&QWidget::update));
}

bool LaneFooter::event(QEvent* event) {
  auto* model = view_->placementModel();
  if (event->type() != QEvent::ToolTip || !model) return QWidget::event(event);
  auto* help = static_cast<QHelpEvent*>(event);
  const int offset = view_->viewport()->mapToGlobal(QPoint(0, 0)).x() - mapToGlobal(QPoint(0, 0)).x();
  const int column = view_->columnAt(help->pos().x() - offset);
  const QString tip = column > 0 ? model->headerData(column, Qt::Horizontal, Qt::ToolTipRole).toString() : QString();
  if (tip.isEmpty()) QToolTip::hideText();
  else QToolTip::showText(help->globalPos(), tip, this);
  return true;
}

QSize LaneFooter::sizeHint() const { return {400, 3 * fontMetrics().height() + 12}; }

void LaneFooter::paintEvent(QPaintEvent*) {
  auto* model = view_->placementModel();
  if (!model) return;
  QPainter p(this);
  const QFontMetrics fm(font());
  const int offset = view_->viewport()->mapToGlobal(QPoint(0, 0)).x() - mapToGlobal(QPoint(0, 0)).x();
  for (int c = 1; c < model->columnCount(); ++c) {
    if (model->headerData(c, Qt::Horizontal, PlacementModel::LaneKindRole).toString() != QLatin1String("device")) continue;
    const QRect col(offset + view_->columnViewportPosition(c) + 3, 2, view_->columnWidth(c) - 6, height() - 4);
    MemoryBreakdown m;
    m.capacity = model->headerData(c, Qt::Horizontal, PlacementModel::LaneCapacityRole).toULongLong();
    m.weights = model->headerData(c, Qt::Horizontal, PlacementModel::LaneWeightsRole).toULongLong();
    m.kvUsed = m.kvReserved = model->headerData(c, Qt::Horizontal, PlacementModel::LaneKvRole).toULongLong();
    m.scratch = model->headerData(c, Qt::Horizontal, PlacementModel::LaneScratchRole).toULongLong();
    m.other = model->headerData(c, Qt::Horizontal, PlacementModel::LaneOverheadRole).toULongLong();
    const bool fits = model->headerData(c, Qt::Horizontal, PlacementModel::LaneFitsRole).toBool();
    const bool simulated = model->headerData(c, Qt::Horizontal, PlacementModel::LaneSimulatedRole).toBool();
    paintMemoryBar(p, QRectF(col.left(), col.top(), col.width(), fm.height()), m, simulated);
    const QString line1 = QStringLiteral("%1 / %2 %3")
                              .arg(formatBytes(m.usedBytes()), formatBytes(m.capacity),
                                   fits ? QStringLiteral("✓") : QStringLiteral("✗"));
    p.setPen(fits ? palette().color(QPalette::WindowText) : QColor(0xc0, 0x20, 0x20));
    p.drawText(QRect(col.left(), col.top() + fm.height() + 2, col.width(), fm.height()), Qt::AlignLeft, line1);
    if (!fits)
      p.drawText(QRect(col.left(), col.top() + 2 * fm.height() + 2, col.width(), fm.height()), Qt::AlignLeft,
                 QStringLiteral("short %1").arg(formatBytes(model->headerData(c, Qt::Horizontal,
                                                                              PlacementModel::LaneShortfallRole).toULongLong())));
  }
}

}  // namespace strata::ui
