// ui/models/models_panel.cpp — the Models tab's widgets and the loaded model's description.
#include "ui/models/models_panel.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QTreeView>
#include <QVBoxLayout>

#include "ui/models/model_files_model.h"

ModelsPanel::ModelsPanel(ModelFilesModel* model, QWidget* parent) : QWidget(parent), model_(model) {
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
  view_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  view_->header()->setStretchLastSection(false);
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
  const qint64 params = m.value(QStringLiteral("parameters")).toInteger();
  const QString paramText = params >= 1000000000 ? tr("%1 B").arg(params / 1e9, 0, 'f', 1)
                            : params >= 1000000  ? tr("%1 M").arg(params / 1e6, 0, 'f', 1)
                                                 : tr("%1 K").arg(params / 1e3, 0, 'f', 0);
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
