// engine/model/model_locator.h — which GGUF to open when the user names none: the last one
// used, else one found in the folders other tools download to, else the bundled test model.
// Reads the file system and one small state file; no model parsing here.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace strata::model {

// Folders searched for *.gguf, in order: LM Studio (~/.lmstudio/models, ~/.cache/lm-studio/models),
// the Hugging Face hub cache ($HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub), llama.cpp's
// cache ($LLAMA_CACHE, ~/.cache/llama.cpp).
std::vector<std::filesystem::path> model_search_folders();

// Every *.gguf file under those folders (recursively, following HF snapshot symlinks), sorted
// by path; vocab-only files and split parts after the first are left out.
std::vector<std::filesystem::path> find_gguf_files(const std::vector<std::filesystem::path>& folders);

// $XDG_CONFIG_HOME/strata/last_model (or ~/.config/strata/last_model).
std::filesystem::path last_model_record();
std::optional<std::filesystem::path> read_last_model();
Status write_last_model(const std::filesystem::path& model);

// The choice described above. `bundled_candidates` are paths of the bundled test model to try
// last (e.g. ../shared/models/stories260K.gguf beside the checkout). NotFound names the folders.
Expected<std::filesystem::path> default_model(const std::vector<std::filesystem::path>& bundled_candidates);

}  // namespace strata::model
