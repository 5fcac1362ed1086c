// ui/models/model_locations.h — where GGUF files usually live on this machine: LM Studio's models
// folder, the Hugging Face hub cache, llama.cpp's cache, plus folders the user added. Qt Core only.
#pragma once

#include <QList>
#include <QString>
#include <QStringList>

struct ModelLocation {
  QString path;
  QString source;  // "LM Studio", "Hugging Face", "llama.cpp", "added"
};

// The standard places (whether or not they exist), then `added`, then $STRATA_MODEL_DIRS
// (':'-separated). Honours HF_HUB_CACHE, HF_HOME, LLAMA_CACHE and XDG_CACHE_HOME.
QList<ModelLocation> modelLocations(const QStringList& added);
