// ui/placement/placement_editor.cpp — PlacementEditor layout, buttons and file handling.
#include "ui/placement/placement_editor.h"

#include <QAction>
#include <QEvent>
#include <QFile>
#include <QFileDialog>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QScrollBar>
#include <QSlider>
#include <QRegularExpression>
#include <QToolButton>
#include <QUndoStack>
#include <QVBoxLayout>

#include "ui/placement/gpu_offload.h"
#include "ui/devices/memory_bar.h"
#include "ui/placement/placement_model.h"
#include "ui/placement/placement_view.h"
#include "ui/placement/simulated_devices.h"
#include "ui/theme/contrast.h"

namespace strata::ui {

PlacementEditor::PlacementEditor(QWidget* parent)
    : QWidget(parent), model_(new PlacementModel(this)), view_(new PlacementView(this)),
      footer_(new LaneFooter(view_, this)), simulated_(new SimulatedDevicesWidget(this)), title_(new QLabel(this)),
      prediction_(new QLabel(this)), message_(new QLabel(this)), blocked_(new QLabel(this)),
      groupSpec_(new QLineEdit(this)), kvWithLayer_(new QRadioButton(tr("with its layer"), this)),
      kvOnCpu_(new QRadioButton(tr("on CPU"), this)), apply_(new QPushButton(tr("Apply"), this)) {
  setObjectName(QStringLiteral("placementEditor"));
  prediction_->setObjectName(QStringLiteral("prediction"));
  view_->setPlacementModel(model_);
  // At least eight block rows under the lane headers (three lines: id, size, "simulated"), whatever
  // the window's height: the tab scrolls instead (MainWindow puts the editor in a scroll area).
  view_->setMinimumHeight(8 * view_->verticalHeader()->defaultSectionSize() + 3 * view_->fontMetrics().lineSpacing() + 16 +
                          view_->horizontalScrollBar()->sizeHint().height());
  // Long text wraps instead of widening the panel (and squeezing the chat list beside it).
  message_->setWordWrap(true);
  prediction_->setWordWrap(true);
  title_->setWordWrap(true);
  for (QLabel* l : {message_, prediction_, title_, blocked_}) l->setMinimumWidth(80);
  blocked_->setWordWrap(true);
  QFont bold = title_->font();
  bold.setBold(true);
  title_->setFont(bold);

  // Row 1: auto-plan, undo/redo, files.
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Auto:"), this));
  const QList<QPair<QString, QString>> goals = {{tr("Fit memory"), "fit"}, {tr("Balance speed"), "balance"},
                                                {tr("Fewest transfers"), "fewest-transfers"}};
  for (const auto& [text, goal] : goals) {
    auto* b = new QPushButton(text, this);
    b->setObjectName(QStringLiteral("auto-") + goal);
    connect(b, &QPushButton::clicked, this, [this, g = goal] { emit requestAutoPlan(g); });
    top->addWidget(b);
  }
  top->addStretch(1);
  // Row 2 (its own row, so that a narrow tab never cuts a label): undo/redo, parts, files.
  auto* top2 = new QHBoxLayout;
  for (QAction* a : {model_->undoStack()->createUndoAction(this, tr("Undo")), model_->undoStack()->createRedoAction(this, tr("Redo"))}) {
    auto* b = new QToolButton(this);
    b->setDefaultAction(a);
    addAction(a);
    top2->addWidget(b);
  }
  // Every block's parts as rows (one block's: double-click it); each part then drags on its own.
  // Tool buttons (no 80 px minimum of a push button): the row fits a narrow tab at scale 1.5.
  auto* parts = new QToolButton(this);
  parts->setText(tr("Show parts"));
  parts->setObjectName(QStringLiteral("showParts"));
  parts->setCheckable(true);
  parts->setToolTip(tr("Show each block's attention, FFN part and experts as rows that drag on their own"));
  connect(parts, &QToolButton::toggled, this, [this](bool on) { model_->setAllExpanded(on); });
  const auto followRows = [this, parts] {  // pressed while every block's parts are shown
    const QSignalBlocker block(parts);
    parts->setChecked(model_->allExpanded());
  };
  connect(model_, &QAbstractItemModel::rowsInserted, this, followRows);
  connect(model_, &QAbstractItemModel::rowsRemoved, this, followRows);
  connect(model_, &QAbstractItemModel::modelReset, this, followRows);
  top2->addSpacing(12);
  top2->addWidget(parts);
  auto* save = new QToolButton(this);
  save->setText(tr("Save…"));
  save->setToolTip(tr("Save this placement as JSON"));
  auto* load = new QToolButton(this);
  load->setText(tr("Load…"));
  load->setToolTip(tr("Load a placement from JSON"));
  connect(save, &QToolButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save placement"), QString(), tr("Placement JSON (*.json)"));
    QString error;
    if (!path.isEmpty() && !savePlacement(path, &error)) showError(error);
  });
  connect(load, &QToolButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Load placement"), QString(), tr("Placement JSON (*.json)"));
    QString error;
    if (!path.isEmpty() && !loadPlacement(path, &error)) showError(error);
  });
  top2->addStretch(1);
  top2->addWidget(save);
  top2->addWidget(load);

  // Planning mode (hidden until asked for).
  auto* planning = new QGroupBox(tr("Planning mode: declare devices you do not have"), this);
  planning->setObjectName(QStringLiteral("planningBox"));
  auto* planningLayout = new QVBoxLayout(planning);
  planningLayout->addWidget(simulated_);
  planning->setVisible(false);
  planning->setMaximumHeight(220);
  connect(simulated_, &SimulatedDevicesWidget::devicesJsonChanged, this, &PlacementEditor::setDevices);
  connect(simulated_, &SimulatedDevicesWidget::devicesDeclared, this, &PlacementEditor::devicesDeclared);
  connect(simulated_, &SimulatedDevicesWidget::declareFailed, this, &PlacementEditor::showError);

  // Tensor group, KV location.
  auto* groupRow = new QHBoxLayout;
  groupSpec_->setPlaceholderText(tr("gpu0+gpu1 2:1"));
  auto* addGroup = new QPushButton(tr("Add tensor group"), this);
  connect(addGroup, &QPushButton::clicked, this, &PlacementEditor::addGroupFromText);
  connect(groupSpec_, &QLineEdit::returnPressed, this, &PlacementEditor::addGroupFromText);
  groupRow->addWidget(new QLabel(tr("Tensor group:"), this));
  groupRow->addWidget(groupSpec_);
  groupRow->addWidget(addGroup);
  auto* kvRow = new QHBoxLayout;  // a row of its own: the tab stays narrow without cutting labels
  kvRow->addWidget(new QLabel(tr("KV cache:"), this));
  kvRow->addWidget(kvWithLayer_);
  kvRow->addWidget(kvOnCpu_);
  kvRow->addStretch(1);
  // GPU offload, as LM Studio has it: blocks on the accelerators (the last N, llama.cpp's -ngl),
  // written into the placement (undoable; Apply sends it).
  offloadLabel_ = new QLabel(this);
  offloadLabel_->setObjectName(QStringLiteral("gpuOffloadLabel"));
  offload_ = new QSlider(Qt::Horizontal, this);
  offload_->setObjectName(QStringLiteral("gpuOffload"));
  offload_->setToolTip(tr("GPU offload: how many blocks run on the GPUs; the rest run on the CPU"));
  offload_->setMinimumWidth(120);
  offload_->setPageStep(1);
  auto* offloadRow = new QHBoxLayout;  // a row of its own too: the KV choice keeps its width
  offloadRow->addWidget(offloadLabel_);
  offloadRow->addWidget(offload_, 1);
  connect(offload_, &QSlider::valueChanged, this, [this](int n) {
    offloadLabel_->setText(tr("GPU offload: %1 / %2 blocks").arg(n).arg(offload_->maximum()));
    if (!offload_->isSliderDown()) model_->setOffloadedBlocks(n);
  });
  connect(offload_, &QSlider::sliderReleased, this, [this] { model_->setOffloadedBlocks(offload_->value()); });
  kvWithLayer_->setChecked(true);
  connect(kvOnCpu_, &QRadioButton::toggled, this, [this](bool on) {
    if (!model_->setKvDeviceForAll(on ? QStringLiteral("cpu") : QString())) refresh();
  });

  // Bottom: prediction, reason, Apply.
  // The message, the reason Apply is refused and Apply on one row; the prediction under them across
  // the whole width (beside them it wrapped into six lines and took the block rows' height).
  auto* bottom = new QHBoxLayout;
  bottom->addWidget(message_, 1);
  bottom->addWidget(blocked_, 1);
  bottom->addWidget(apply_);
  connect(apply_, &QPushButton::clicked, this, [this] {
    if (model_->applyBlocker().isEmpty()) emit applyRequested(model_->placementJson(), model_->changeSummary());
  });

  draft_ = new QLabel(this);
  draft_->setObjectName(QStringLiteral("draftModel"));
  draft_->setWordWrap(true);
  draft_->hide();

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title_);
  layout->addWidget(draft_);
  layout->addLayout(top);
  layout->addLayout(top2);
  layout->addWidget(planning);
  layout->addWidget(view_, 1);
  layout->addWidget(footer_);
  layout->addLayout(groupRow);
  layout->addLayout(kvRow);
  layout->addLayout(offloadRow);
  layout->addLayout(bottom);
  layout->addWidget(prediction_);

  restyleWarnings();
  connect(model_, &PlacementModel::estimateChanged, this, &PlacementEditor::refresh);
  connect(model_, &PlacementModel::editRejected, this, &PlacementEditor::showError);
  connect(model_, &PlacementModel::placementChanged, this, [this] { message_->clear(); });
  refresh();
}

void PlacementEditor::setModelInfo(const QJsonObject& info) { model_->setModelInfo(info); }
void PlacementEditor::setDevices(const QJsonArray& devices) { model_->setDevices(devices); }

void PlacementEditor::setDraftModel(const QJsonObject& draft) {
  if (draft.isEmpty()) {
    draft_->clear();
    draft_->hide();
    return;
  }
  draft_->setText(tr("Draft model %1 (%2 of weights) runs on %3 for speculative decoding, beside this placement: "
                     "it guesses tokens that the model checks several at a time.")
                      .arg(draft.value(QStringLiteral("id")).toString(),
                           formatBytes(quint64(draft.value(QStringLiteral("weight_bytes")).toDouble())),
                           draft.value(QStringLiteral("device")).toString()));
  draft_->show();
}

void PlacementEditor::resetPlacement(const QJsonObject& placement) {
  QString error;
  if (!model_->resetPlacement(placement, &error)) showError(error);
}

void PlacementEditor::setPlacement(const QJsonObject& planOrPlacement) {
  const bool isPlan = planOrPlacement.contains(QLatin1String("placement"));
  const QJsonObject placement = isPlan ? planOrPlacement.value(QLatin1String("placement")).toObject() : planOrPlacement;
  QString error;
  if (!model_->setPlacement(placement, &error)) return showError(error);
  QStringList lines;
  for (const QJsonValue& v : planOrPlacement.value(QLatin1String("explanation")).toArray()) lines << v.toString();
  message_->setProperty("error", false);
  restyleWarnings();
  message_->setText(lines.join(QLatin1Char('\n')));
}

void PlacementEditor::applySucceeded() {
  model_->markApplied();
  message_->setProperty("error", false);
  restyleWarnings();
  message_->setText(tr("Applied."));
}

void PlacementEditor::showError(const QString& message) {
  message_->setProperty("error", true);
  restyleWarnings();
  message_->setText(message);
}

void PlacementEditor::restyleWarnings() {
  // A red that reads on the window colour of the palette in use (light or dark).
  const QString red = readableOn(QColor(0xc0, 0x20, 0x20), palette().color(QPalette::Window)).name();
  blocked_->setStyleSheet(QStringLiteral("color: %1").arg(red));
  message_->setStyleSheet(message_->property("error").toBool() ? QStringLiteral("color: %1").arg(red) : QString());
}

void PlacementEditor::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) restyleWarnings();
}

void PlacementEditor::setPlanningMode(bool on) {
  if (auto* box = findChild<QGroupBox*>(QStringLiteral("planningBox"))) box->setVisible(on);
  if (on && simulated_->devices().isEmpty()) {
    simulated_->addPreset(0);
    simulated_->addPreset(3);
  }
}

QString PlacementEditor::applyBlockedReason() const { return model_->applyBlocker(); }

void PlacementEditor::addGroupFromText() {
  // "gpu0+gpu1 2:1" or "gpu0,gpu1" (equal ratio).
  const QStringList parts = groupSpec_->text().simplified().split(QLatin1Char(' '), Qt::SkipEmptyParts);
  if (parts.isEmpty()) return;
  QStringList devices = parts[0].split(QRegularExpression(QStringLiteral("[+,]")), Qt::SkipEmptyParts);
  QList<double> ratio;
  if (parts.size() > 1)
    for (const QString& r : parts[1].split(QLatin1Char(':'))) ratio << r.toDouble();
  if (!ratio.isEmpty() && ratio.size() != devices.size())
    return showError(tr("'ratio' has %1 values for a group of %2 devices").arg(ratio.size()).arg(devices.size()));
  model_->addGroupLane(devices, ratio);
  groupSpec_->clear();
}

bool PlacementEditor::savePlacement(const QString& path, QString* error) const {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
    if (error) *error = QStringLiteral("cannot write '%1': %2").arg(path, f.errorString());
    return false;
  }
  f.write(QJsonDocument(model_->placementJson()).toJson(QJsonDocument::Indented));
  return true;
}

bool PlacementEditor::loadPlacement(const QString& path, QString* error) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) {
    if (error) *error = QStringLiteral("cannot read '%1': %2").arg(path, f.errorString());
    return false;
  }
  QJsonParseError parse;
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &parse);
  if (parse.error != QJsonParseError::NoError || !doc.isObject()) {
    if (error) *error = QStringLiteral("placement file '%1' is not valid JSON: %2").arg(path, parse.errorString());
    return false;
  }
  return model_->setPlacement(doc.object(), error);
}

void PlacementEditor::refresh() {
  const auto& info = model_->modelInfo();
  const auto& p = model_->placement();
  title_->setText(info.nLayers > 0 ? tr("Placement — %1, %2 layers, ctx %3, %4 sequence(s)")
                                         .arg(info.name.isEmpty() ? tr("model") : info.name)
                                         .arg(info.nLayers).arg(p.nCtx).arg(p.nSeq)
                                   : tr("Placement — no model"));
  // The engine's figures (PlacementEstimator); the last answer stays until the next one arrives.
  QString predicted;
  if (info.nLayers <= 0) {
  } else if (!model_->estimateUnavailable().isEmpty()) {
    predicted = tr("No estimate: %1").arg(model_->estimateUnavailable());
  } else if (!model_->hasEstimate()) {
    predicted = tr("Predicted: asking the engine…");
  } else if (!model_->hasPrediction()) {
    predicted = tr("No prediction: %1").arg(model_->estimateError());
  } else {
    const CostPrediction c = model_->prediction();
    const CostPrediction here = model_->predictionOnThisMachine();
    predicted = predictionText(c, model_->hasPredictionOnThisMachine() ? &here : nullptr) +
                tr(" · %1 boundar%2 · %3 moved per token")
                    .arg(c.boundaries)
                    .arg(c.boundaries == 1 ? "y" : "ies")
                    .arg(formatBytes(c.transferBytesPerToken));
    if (!model_->estimateCurrent()) predicted += tr(" — updating…");
    else if (model_->isPreviewing()) predicted += tr(" — if dropped here");
  }
  prediction_->setText(predicted);
  prediction_->setToolTip(model_->hasPredictionOnThisMachine()
                              ? tr("This machine: the simulated devices run the CPU's kernels on its threads, so they "
                                   "are bounded by the CPU's measured speed as well as by their declared one.")
                              : QString());
  const QString reason = model_->applyBlocker();
  const int moved = model_->changedTileCount();
  apply_->setText(moved > 0 ? tr("Apply: move %1 layer(s)").arg(moved) : tr("Apply"));
  apply_->setEnabled(reason.isEmpty());
  apply_->setToolTip(reason);
  blocked_->setText(reason.isEmpty() || moved == 0 ? QString() : reason);
  {
    const bool accel = !accelerators(model_->devices()).isEmpty() && p.layerCount() > 0;
    const QSignalBlocker block(offload_);
    offload_->setRange(0, p.layerCount());
    offload_->setEnabled(accel);
    if (!offload_->isSliderDown()) offload_->setValue(model_->offloadedBlockCount());
    offloadLabel_->setText(accel ? tr("GPU offload: %1 / %2 blocks").arg(offload_->value()).arg(p.layerCount())
                                 : tr("GPU offload: no GPU"));
  }
  const bool kvCpu = !p.layers.isEmpty() && p.layers.first().kvDevice == QLatin1String("cpu");
  QSignalBlocker b1(kvWithLayer_), b2(kvOnCpu_);
  kvOnCpu_->setChecked(kvCpu);
  kvWithLayer_->setChecked(!kvCpu);
  footer_->update();
}

}  // namespace strata::ui
