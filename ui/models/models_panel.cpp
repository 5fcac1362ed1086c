// ui/models/models_panel.cpp — the Models tab's widgets and the loaded model's description.
#include "ui/models/models_panel.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QScrollBar>
#include <QTimer>
#include <QTreeView>
#include <QVBoxLayout>

#include "ui/models/model_files_model.h"
#include "ui/models/model_inspector.h"

ModelsPanel::ModelsPanel(ModelFilesModel* model, QWidget* parent)
    : QWidget(parent), model_(model), visibleTimer_(new QTimer(this)) {
  visibleTimer_->setSingleShot(true);
  visibleTimer_->setInterval(100);  // after scrolling / resets settle
  connect(visibleTimer_, &QTimer::timeout, this, &ModelsPanel::requestVisibleInspections);
  auto* layout = new QVBoxLayout(this);
  loaded_ = new QLabel(tr("No model loaded. Open a GGUF file, drop one on the window, or pick one below."), this);
  loaded_->setObjectName(QStringLiteral("loadedModel"));
  loaded_->setWordWrap(true);
  loaded_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(loaded_);

  view_ = new QTreeView(this);
  view_->setObjectName(QStringLiteral("modelFiles"));
  view_->setModel(model_);
  view_->setRootIsDecorated(false);
  view_->setSortingEnabled(false);
  view_->setAlternatingRowColors(true);
  view_->setTextElideMode(Qt::ElideMiddle);  // long names keep their quantization suffix; tooltip: the whole path
  // Every column as wide as its contents, the name first and whole ("SmolLM2-360M-Instruct-Q8_0.gguf"
  // was cut to "SmolL….gguf" at 1280 px); the last column takes what is left, and a window too
  // narrow for all of them scrolls sideways instead of cutting the names.
  view_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  view_->header()->setStretchLastSection(true);
  layout->addWidget(view_, 1);

  auto* buttons = new QHBoxLayout;
  auto* load = new QPushButton(tr("&Load"), this);
  auto* open = new QPushButton(tr("&Open file…"), this);
  auto* add = new QPushButton(tr("Add &folder…"), this);
  auto* rescan = new QPushButton(tr("&Rescan"), this);
  buttons->addWidget(load);
  buttons->addWidget(open);
  buttons->addWidget(add);
  buttons->addWidget(rescan);
  buttons->addStretch(1);
  layout->addLayout(buttons);

  auto loadSelected = [this] {
    const QModelIndex i = view_->currentIndex();
    if (i.isValid()) emit loadRequested(i.data(ModelFilesModel::PathRole).toString());
  };
  connect(load, &QPushButton::clicked, this, loadSelected);
  connect(view_, &QTreeView::doubleClicked, this, loadSelected);
  connect(open, &QPushButton::clicked, this, &ModelsPanel::openFileDialog);
  connect(add, &QPushButton::clicked, this, &ModelsPanel::addFolderDialog);
  connect(rescan, &QPushButton::clicked, this, &ModelsPanel::rescanRequested);

  auto later = [this] { visibleTimer_->start(); };
  connect(view_->verticalScrollBar(), &QScrollBar::valueChanged, this, later);
  connect(model_, &QAbstractItemModel::modelReset, this, later);
  connect(model_, &QAbstractItemModel::rowsInserted, this, later);
  connect(model_, &QAbstractItemModel::headerDataChanged, this, later);  // the context changed
  connect(view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
    if (inspector_ && current.isValid()) inspector_->request(current.row(), true);
  });
}

void ModelsPanel::setInspector(ModelInspector* inspector) {
  inspector_ = inspector;
  visibleTimer_->start();
}

void ModelsPanel::requestVisibleInspections() {
  if (!inspector_ || !isVisible() || model_->rowCount() == 0) return;
  const QRect r = view_->viewport()->rect();
  const QModelIndex top = view_->indexAt(r.topLeft() + QPoint(1, 1));
  const QModelIndex bottom = view_->indexAt(QPoint(1, r.bottom() - 1));
  const int first = top.isValid() ? top.row() : 0;
  const int last = bottom.isValid() ? bottom.row() : model_->rowCount() - 1;
  for (int row = first; row <= last; ++row) inspector_->request(row);
  const QModelIndex current = view_->currentIndex();
  if (current.isValid()) inspector_->request(current.row(), true);
}

void ModelsPanel::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  visibleTimer_->start();
}

void ModelsPanel::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  visibleTimer_->start();
}

void ModelsPanel::setStatus(const QJsonObject& status) {
  const QJsonObject m = status.value(QStringLiteral("model")).toObject();
  if (m.isEmpty()) {
    loaded_->setText(status.value(QStringLiteral("state")).toString() == QLatin1String("loading")
                         ? tr("Loading…")
                         : tr("No model loaded. Open a GGUF file, drop one on the window, or pick one below."));
    return;
  }
  const QLocale c = QLocale::c();
  const QString paramText = ModelFilesModel::formatParameters(m.value(QStringLiteral("parameters")).toInteger());
  loaded_->setText(tr("<b>%1</b> — %2, %3 parameters, %4 layers, context %5, weights %6<br><small>%7</small>")
                       .arg(m.value(QStringLiteral("id")).toString().toHtmlEscaped(),
                            m.value(QStringLiteral("architecture")).toString().toHtmlEscaped(), paramText)
                       .arg(m.value(QStringLiteral("n_layers")).toInt())
                       .arg(m.value(QStringLiteral("n_ctx")).toInt())
                       .arg(ModelFilesModel::formatSize(m.value(QStringLiteral("weight_bytes")).toInteger()),
                            m.value(QStringLiteral("path")).toString().toHtmlEscaped()));
  model_->setStatus(status);
}

void ModelsPanel::openFileDialog() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open a GGUF model"), QString(),
                                                    tr("GGUF models (*.gguf);;All files (*)"));
  if (!path.isEmpty()) emit loadRequested(path);
}

void ModelsPanel::addFolderDialog() {
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Add a folder of GGUF models"));
  if (!dir.isEmpty()) emit folderAdded(dir);
}
