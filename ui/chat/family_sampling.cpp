// ui/chat/family_sampling.cpp — the per-family sampling table (family_sampling.h).
#include "ui/chat/family_sampling.h"

#include "ui/chat/chat_controller.h"

namespace strata::ui {

namespace {

struct Row {
  const char* family;
  const char* architecture;  // general.architecture
  const char* name_has;      // a part of the model's name (lower case), or "" for any
  double temperature, top_p;
  int top_k;                 // 0: off
  double min_p, repeat_penalty;  // repeat_penalty 1.0: off
};

// First match wins: name-specific rows before an architecture's general row. Sources: each model's
// generation_config.json or model card.
constexpr Row kRows[] = {
    {"smollm2", "llama", "smollm", 0.2, 0.9, 0, 0.0, 1.1},   // SmolLM2 card: temperature 0.2, top_p 0.9
    {"llama", "llama", "", 0.6, 0.9, 0, 0.0, 1.1},           // Llama 2 and 3.x generation_config
    {"gemma3", "gemma3", "", 1.0, 0.95, 64, 0.0, 1.0},       // Gemma 3: temperature 1, top_k 64, top_p 0.95
    {"qwen3", "qwen3", "", 0.6, 0.95, 20, 0.0, 1.0},         // Qwen3 (thinking): 0.6 / 0.95 / 20 / min_p 0
    {"qwen3moe", "qwen3moe", "", 0.6, 0.95, 20, 0.0, 1.0},
    {"qwen2", "qwen2", "", 0.7, 0.8, 20, 0.0, 1.05},         // Qwen2.5: repetition_penalty 1.05
    {"phi3", "phi3", "", 0.7, 0.9, 0, 0.05, 1.1},
};

}  // namespace

FamilySampling familySampling(const QString& architecture, const QString& name) {
  const QString lower = name.toLower();
  for (const Row& r : kRows) {
    if (architecture != QLatin1String(r.architecture)) continue;
    if (*r.name_has && !lower.contains(QLatin1String(r.name_has))) continue;
    QJsonObject s = ChatController::defaultSampling();
    s.insert(QStringLiteral("temperature"), r.temperature);
    s.insert(QStringLiteral("top_p"), r.top_p);
    if (r.top_k > 0) s.insert(QStringLiteral("top_k"), r.top_k);
    else s.remove(QStringLiteral("top_k"));
    if (r.min_p > 0) s.insert(QStringLiteral("min_p"), r.min_p);
    else s.remove(QStringLiteral("min_p"));
    if (r.repeat_penalty > 1.0) s.insert(QStringLiteral("repeat_penalty"), r.repeat_penalty);
    else s.remove(QStringLiteral("repeat_penalty"));
    return FamilySampling{QLatin1String(r.family), s};
  }
  return FamilySampling{QString(), ChatController::defaultSampling()};
}

}  // namespace strata::ui
