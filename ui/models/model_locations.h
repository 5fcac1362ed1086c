// ui/models/model_locations.h — where GGUF files usually live on this machine, for the Models tab:
// the engine's one list (engine/model/model_locator.h, a pure piece the GUI links) in Qt types.
#pragma once

#include <QList>
#include <QString>
#include <QStringList>

struct ModelLocation {
  QString path;
  QString source;  // "Strata", "LM Studio", "Hugging Face", "llama.cpp", "added"
};

// strata::model::model_folders(added): the standard places (whether or not they exist), then
// `added`, then $STRATA_MODEL_DIRS.
QList<ModelLocation> modelLocations(const QStringList& added);
