// ui/models/model_locations.cpp — the standard model folders, from environment and home.
#include "ui/models/model_locations.h"

#include <QDir>

QList<ModelLocation> modelLocations(const QStringList& added) {
  const QString home = QDir::homePath();
  const QString xdgCache = qEnvironmentVariable("XDG_CACHE_HOME", home + QStringLiteral("/.cache"));
  QList<ModelLocation> out;
  // Strata's own folder, where setup puts the real chat models (engine/model/model_locator.h).
  QString strata = qEnvironmentVariable("STRATA_MODEL_HOME");
  if (strata.isEmpty())
    strata = qEnvironmentVariable("XDG_DATA_HOME", home + QStringLiteral("/.local/share")) + QStringLiteral("/strata/models");
  out.append({strata, QStringLiteral("Strata")});
  out.append({home + QStringLiteral("/.lmstudio/models"), QStringLiteral("LM Studio")});
  out.append({xdgCache + QStringLiteral("/lm-studio/models"), QStringLiteral("LM Studio")});
  QString hf = qEnvironmentVariable("HF_HUB_CACHE");
  if (hf.isEmpty() && qEnvironmentVariableIsSet("HF_HOME")) hf = qEnvironmentVariable("HF_HOME") + QStringLiteral("/hub");
  if (hf.isEmpty()) hf = xdgCache + QStringLiteral("/huggingface/hub");
  out.append({hf, QStringLiteral("Hugging Face")});
  out.append({qEnvironmentVariable("LLAMA_CACHE", xdgCache + QStringLiteral("/llama.cpp")), QStringLiteral("llama.cpp")});
  for (const QString& a : added) out.append({a, QStringLiteral("added")});
  for (const QString& e : qEnvironmentVariable("STRATA_MODEL_DIRS").split(':', Qt::SkipEmptyParts))
    out.append({e, QStringLiteral("added")});
  return out;
}
