// ui/chat/sampling_bar.cpp — spin boxes ↔ JSON sampling fields.
#include "ui/chat/sampling_bar.h"

#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>

SamplingBar::SamplingBar(QWidget* parent) : QWidget(parent) {
  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(0, 0, 0, 0);
  auto addLabel = [this, row](const QString& text, QWidget* w) {
    auto* l = new QLabel(text, this);
    l->setBuddy(w);
    row->addWidget(l);
    row->addWidget(w);
  };
  temperature_ = new QDoubleSpinBox(this);
  temperature_->setObjectName(QStringLiteral("temperature"));
  temperature_->setRange(0.0, 2.0);
  temperature_->setSingleStep(0.05);
  temperature_->setToolTip(tr("0 = greedy (always the most likely token)"));
  addLabel(tr("&temp"), temperature_);
  topP_ = new QDoubleSpinBox(this);
  topP_->setObjectName(QStringLiteral("topP"));
  topP_->setRange(0.0, 1.0);
  topP_->setSingleStep(0.05);
  addLabel(tr("top-&p"), topP_);
  topK_ = new QSpinBox(this);
  topK_->setObjectName(QStringLiteral("topK"));
  topK_->setRange(0, 1000);
  topK_->setSpecialValueText(tr("off"));
  addLabel(tr("top-&k"), topK_);
  maxTokens_ = new QSpinBox(this);
  maxTokens_->setObjectName(QStringLiteral("maxTokens"));
  maxTokens_->setRange(1, 1 << 20);
  addLabel(tr("&max"), maxTokens_);
  row->addStretch(1);

  auto changed = [this] {
    if (!updating_) emit samplingEdited(sampling());
  };
  connect(temperature_, &QDoubleSpinBox::valueChanged, this, changed);
  connect(topP_, &QDoubleSpinBox::valueChanged, this, changed);
  connect(topK_, &QSpinBox::valueChanged, this, changed);
  connect(maxTokens_, &QSpinBox::valueChanged, this, changed);
}

void SamplingBar::setSampling(const QJsonObject& s) {
  updating_ = true;
  extra_ = s;
  for (const char* k : {"temperature", "top_p", "top_k", "max_tokens"}) extra_.remove(QLatin1String(k));
  temperature_->setValue(s.value(QStringLiteral("temperature")).toDouble(0.7));
  topP_->setValue(s.value(QStringLiteral("top_p")).toDouble(1.0));
  topK_->setValue(s.value(QStringLiteral("top_k")).toInt(0));
  maxTokens_->setValue(s.value(QStringLiteral("max_tokens")).toInt(1024));
  updating_ = false;
}

QJsonObject SamplingBar::sampling() const {
  QJsonObject s = extra_;
  s.insert(QStringLiteral("temperature"), temperature_->value());
  s.insert(QStringLiteral("top_p"), topP_->value());
  if (topK_->value() > 0) s.insert(QStringLiteral("top_k"), topK_->value());
  s.insert(QStringLiteral("max_tokens"), maxTokens_->value());
  return s;
}
