// ui/models/model_locations.cpp — the engine's model folder list, converted to Qt types.
#include "ui/models/model_locations.h"

#include <filesystem>
#include <vector>

#include "engine/model/model_locator.h"

QList<ModelLocation> modelLocations(const QStringList& added) {
  std::vector<std::filesystem::path> extra;
  for (const QString& a : added) extra.emplace_back(a.toStdString());
  QList<ModelLocation> out;
  for (const strata::model::ModelFolder& f : strata::model::model_folders(extra))
    out.append({QString::fromStdString(f.path.string()), QString::fromStdString(f.source)});
  return out;
}
