// ui/chat/family_sampling.h — the sampling a new chat starts with, per model family: the values
// the model's makers publish (generation_config.json / model card), in one table. Families the
// table does not know get ChatController::defaultSampling() (LM Studio's: repeat penalty 1.1).
// No engine headers: keyed on the engine's status (architecture, model id).
#pragma once

#include <QJsonObject>
#include <QString>

namespace strata::ui {

struct FamilySampling {
  QString family;        // "gemma3", "qwen3", "llama", "smollm2", ... ("" when the table has no row)
  QJsonObject sampling;  // temperature, top_p, top_k, min_p, repeat_penalty, max_tokens
};

// architecture: the GGUF's general.architecture ("llama", "gemma3", "qwen2", "qwen3", "phi3", ...);
// name: the model's id or file name, which tells families of one architecture apart (SmolLM2 and
// Llama 3 are both "llama").
FamilySampling familySampling(const QString& architecture, const QString& name);

}  // namespace strata::ui
