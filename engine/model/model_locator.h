// engine/model/model_locator.h — which GGUF to open when the user names none: the last one
// used, else the chat model setup fetched, else one found in the folders other tools download to, else
// the bundled test model.
// Reads the file system and one small state file; no model parsing here.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace strata::model {

// Strata's own model folder, where tools/fetch_models.sh puts the real chat models:
// $STRATA_MODEL_HOME, else $XDG_DATA_HOME/strata/models, else ~/.local/share/strata/models.
std::filesystem::path strata_model_folder();

// The chat model setup fetches (SmolLM2-135M-Instruct, Apache-2.0), opened when nothing else was
// chosen: its file name inside strata_model_folder().
inline constexpr const char* kDefaultChatModel = "SmolLM2-135M-Instruct.Q4_1.gguf";

// A folder where GGUF files may live, and whose it is, for display: "Strata", "LM Studio",
// "Hugging Face", "llama.cpp" or "added" (the user's: the GUI's list or $STRATA_MODEL_DIRS).
struct ModelFolder {
  std::filesystem::path path;
  std::string source;
};

// The one list of model folders (strata-engine's default model and the GUI's Models tab both read
// it), in order, whether or not they exist: Strata's own (above), LM Studio (~/.lmstudio/models,
// ~/.cache/lm-studio/models), the Hugging Face hub cache ($HF_HUB_CACHE, $HF_HOME/hub,
// ~/.cache/huggingface/hub), llama.cpp's cache ($LLAMA_CACHE, else ~/.cache/llama.cpp), then
// `added`, then each folder of $STRATA_MODEL_DIRS (colon-separated). ~/.cache is $XDG_CACHE_HOME
// where set. A folder named twice is kept once, at its first place.
std::vector<ModelFolder> model_folders(const std::vector<std::filesystem::path>& added = {});

// The paths of model_folders(): where default_model() looks.
std::vector<std::filesystem::path> model_search_folders();

// Every *.gguf file under those folders (recursively, following HF snapshot symlinks), sorted
// by path; vocab-only files and split parts after the first are left out.
std::vector<std::filesystem::path> find_gguf_files(const std::vector<std::filesystem::path>& folders);

// $XDG_CONFIG_HOME/strata/last_model (or ~/.config/strata/last_model).
std::filesystem::path last_model_record();
std::optional<std::filesystem::path> read_last_model();
Status write_last_model(const std::filesystem::path& model);

// The choice: the last model used, else kDefaultChatModel in strata_model_folder(), else the
// first file found in the folders above, else the bundled test model. `bundled_candidates` are paths of the bundled test model to try
// last (e.g. ../shared/models/stories260K.gguf beside the checkout). NotFound names the folders.
Expected<std::filesystem::path> default_model(const std::vector<std::filesystem::path>& bundled_candidates);

}  // namespace strata::model
