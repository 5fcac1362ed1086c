// ui/chat/sampling_bar.h — the per-conversation sampling settings under the message box:
// temperature, top-p, top-k, min-p, repeat penalty, seed, max tokens, and speculative decoding.
// Edits come out as the request fields the engine takes (OpenAI's plus min_p, repeat_penalty and
// "speculative"; seed -1: random; speculative absent: the engine's default).
#pragma once

#include <QJsonObject>
#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QSpinBox;

class SamplingBar : public QWidget {
  Q_OBJECT
 public:
  explicit SamplingBar(QWidget* parent = nullptr);
  void setSampling(const QJsonObject& sampling);  // does not emit
  QJsonObject sampling() const;

 signals:
  void samplingEdited(const QJsonObject& sampling);

 private:
  QDoubleSpinBox* temperature_;
  QDoubleSpinBox* topP_;
  QSpinBox* topK_;
  QSpinBox* maxTokens_;
  QDoubleSpinBox* minP_;
  QDoubleSpinBox* repeatPenalty_;
  QSpinBox* seed_;
  QComboBox* speculative_;  // data: "" (engine default), "off", "lookup", "model"
  QJsonObject extra_;  // fields this bar does not edit, kept as they are
  bool updating_ = false;
};
