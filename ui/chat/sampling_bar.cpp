// ui/chat/sampling_bar.cpp — spin boxes ↔ JSON sampling fields.
#include "ui/chat/sampling_bar.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>

#include <limits>

SamplingBar::SamplingBar(QWidget* parent) : QWidget(parent) {
  // Three rows (the everyday settings; min-p, repeat penalty and seed; speculative decoding), so that
  // the bar does not force a wide window.
  auto* rows = new QVBoxLayout(this);
  rows->setContentsMargins(0, 0, 0, 0);
  rows->setSpacing(2);
  auto* first = new QHBoxLayout;
  auto* second = new QHBoxLayout;
  auto* third = new QHBoxLayout;
  rows->addLayout(first);
  rows->addLayout(second);
  rows->addLayout(third);
  QHBoxLayout* row = first;
  auto addLabel = [this, &row](const QString& text, QWidget* w) {
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
  row = second;
  minP_ = new QDoubleSpinBox(this);
  minP_->setObjectName(QStringLiteral("minP"));
  minP_->setRange(0.0, 1.0);
  minP_->setSingleStep(0.01);
  minP_->setSpecialValueText(tr("off"));
  minP_->setToolTip(tr("Drop tokens less likely than this fraction of the most likely one"));
  addLabel(tr("m&in-p"), minP_);
  repeatPenalty_ = new QDoubleSpinBox(this);
  repeatPenalty_->setObjectName(QStringLiteral("repeatPenalty"));
  repeatPenalty_->setRange(1.0, 2.0);
  repeatPenalty_->setSingleStep(0.05);
  repeatPenalty_->setSpecialValueText(tr("off"));
  repeatPenalty_->setToolTip(tr("Penalise tokens seen recently (1 = off)"));
  addLabel(tr("&repeat"), repeatPenalty_);
  seed_ = new QSpinBox(this);
  seed_->setObjectName(QStringLiteral("seed"));
  seed_->setRange(-1, std::numeric_limits<int>::max());
  seed_->setSpecialValueText(tr("random"));
  seed_->setToolTip(tr("Same seed, same settings, same prompt: the same reply"));
  addLabel(tr("s&eed"), seed_);
  // Speculative decoding changes the speed, never the text (the same reply, greedy or seeded).
  row = third;
  speculative_ = new QComboBox(this);
  speculative_->setObjectName(QStringLiteral("speculative"));
  speculative_->addItem(tr("engine default"), QString());
  speculative_->addItem(tr("off"), QStringLiteral("off"));
  speculative_->addItem(tr("prompt lookup"), QStringLiteral("lookup"));
  speculative_->addItem(tr("draft model"), QStringLiteral("model"));
  speculative_->setToolTip(tr("Speculative decoding: guess tokens cheaply (from the conversation's own text, or with "
                              "the engine's draft model) and check several in one pass. Same reply, often faster "
                              "for edits and code."));
  addLabel(tr("spec&ulative"), speculative_);
  row = first;
  maxTokens_ = new QSpinBox(this);
  maxTokens_->setObjectName(QStringLiteral("maxTokens"));
  maxTokens_->setRange(1, 1 << 20);
  addLabel(tr("&max"), maxTokens_);
  first->addStretch(1);
  second->addStretch(1);
  third->addStretch(1);

  auto changed = [this] {
    if (!updating_) emit samplingEdited(sampling());
  };
  connect(temperature_, &QDoubleSpinBox::valueChanged, this, changed);
  connect(topP_, &QDoubleSpinBox::valueChanged, this, changed);
  connect(topK_, &QSpinBox::valueChanged, this, changed);
  connect(maxTokens_, &QSpinBox::valueChanged, this, changed);
  connect(minP_, &QDoubleSpinBox::valueChanged, this, changed);
  connect(repeatPenalty_, &QDoubleSpinBox::valueChanged, this, changed);
  connect(seed_, &QSpinBox::valueChanged, this, changed);
  connect(speculative_, &QComboBox::currentIndexChanged, this, changed);
}

void SamplingBar::setSampling(const QJsonObject& s) {
  updating_ = true;
  extra_ = s;
  for (const char* k : {"temperature", "top_p", "top_k", "max_tokens", "min_p", "repeat_penalty", "seed", "speculative"})
    extra_.remove(QLatin1String(k));
  temperature_->setValue(s.value(QStringLiteral("temperature")).toDouble(0.7));
  topP_->setValue(s.value(QStringLiteral("top_p")).toDouble(1.0));
  topK_->setValue(s.value(QStringLiteral("top_k")).toInt(0));
  maxTokens_->setValue(s.value(QStringLiteral("max_tokens")).toInt(1024));
  minP_->setValue(s.value(QStringLiteral("min_p")).toDouble(0.0));
  repeatPenalty_->setValue(s.value(QStringLiteral("repeat_penalty")).toDouble(1.0));
  seed_->setValue(s.contains(QStringLiteral("seed")) ? int(s.value(QStringLiteral("seed")).toDouble()) : -1);
  const QJsonValue spec = s.value(QStringLiteral("speculative"));
  const QString mode = spec.isBool() ? (spec.toBool() ? QString() : QStringLiteral("off")) : spec.toString();
  speculative_->setCurrentIndex(std::max(0, speculative_->findData(mode)));
  updating_ = false;
}

QJsonObject SamplingBar::sampling() const {
  QJsonObject s = extra_;
  s.insert(QStringLiteral("temperature"), temperature_->value());
  s.insert(QStringLiteral("top_p"), topP_->value());
  if (topK_->value() > 0) s.insert(QStringLiteral("top_k"), topK_->value());
  s.insert(QStringLiteral("max_tokens"), maxTokens_->value());
  if (minP_->value() > 0) s.insert(QStringLiteral("min_p"), minP_->value());
  if (repeatPenalty_->value() > 1.0) s.insert(QStringLiteral("repeat_penalty"), repeatPenalty_->value());
  if (seed_->value() >= 0) s.insert(QStringLiteral("seed"), seed_->value());
  const QString mode = speculative_->currentData().toString();
  if (!mode.isEmpty()) s.insert(QStringLiteral("speculative"), mode);
  return s;
}
