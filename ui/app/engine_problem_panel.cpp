// ui/app/engine_problem_panel.cpp — layout and palette-following colours of EngineProblemPanel.
#include "ui/app/engine_problem_panel.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QVBoxLayout>

EngineProblemPanel::EngineProblemPanel(QWidget* parent)
    : QFrame(parent), title_(new QLabel(this)), text_(new QLabel(this)),
      plan_(new QPushButton(tr("Plan with other devices…"), this)),
      settings_(new QPushButton(tr("Choose devices in Settings…"), this)), retry_(new QPushButton(tr("Try again"), this)) {
  setObjectName(QStringLiteral("engineProblem"));
  setFrameShape(QFrame::StyledPanel);
  title_->setText(tr("<b>No model is loaded</b>"));
  text_->setObjectName(QStringLiteral("engineProblemText"));
  text_->setWordWrap(true);
  text_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  plan_->setObjectName(QStringLiteral("problemPlan"));
  plan_->setToolTip(tr("Open the placement editor in planning mode: declare devices and restart the engine with them"));
  settings_->setObjectName(QStringLiteral("problemSettings"));
  retry_->setObjectName(QStringLiteral("problemRetry"));
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title_);
  layout->addWidget(text_);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(plan_);
  buttons->addWidget(settings_);
  buttons->addWidget(retry_);
  buttons->addStretch(1);
  layout->addLayout(buttons);
  connect(plan_, &QPushButton::clicked, this, &EngineProblemPanel::planRequested);
  connect(settings_, &QPushButton::clicked, this, &EngineProblemPanel::settingsRequested);
  connect(retry_, &QPushButton::clicked, this, &EngineProblemPanel::retryRequested);
  setVisible(false);
}

void EngineProblemPanel::setProblem(const QString& problem) {
  problem_ = problem;
  text_->setText(problem);
  setVisible(!problem.isEmpty());
}

void EngineProblemPanel::paintEvent(QPaintEvent* event) {
  // Mixed from the palette in use, so that the text keeps its contrast in both themes and follows
  // palette changes without a style sheet.
  const QColor window = palette().color(QPalette::Window);
  const QColor tint = window.lightness() < 128 ? QColor(0x6a, 0x48, 0x10) : QColor(0xff, 0xe8, 0xb8);
  const QColor fill = QColor::fromRgbF(window.redF() * 0.6f + tint.redF() * 0.4f, window.greenF() * 0.6f + tint.greenF() * 0.4f,
                                       window.blueF() * 0.6f + tint.blueF() * 0.4f);
  QPainter painter(this);
  painter.fillRect(rect(), fill);
  QFrame::paintEvent(event);
}
