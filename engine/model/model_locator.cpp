// engine/model/model_locator.cpp — default-model discovery.
#include "engine/model/model_locator.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <system_error>

namespace strata::model {
namespace fs = std::filesystem;

namespace {

std::optional<fs::path> env_path(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return fs::path(v);
}

fs::path home() { return env_path("HOME").value_or(fs::path("/root")); }

bool is_first_or_only_part(const std::string& name) {
  // Split files are named "*-00002-of-00005.gguf": only the first part opens the model.
  const auto of = name.find("-of-");
  if (of == std::string::npos || of < 6) return true;
  return name.compare(of - 5, 5, "00001") == 0;
}

}  // namespace

fs::path strata_model_folder() {
  if (auto p = env_path("STRATA_MODEL_HOME")) return *p;
  return env_path("XDG_DATA_HOME").value_or(home() / ".local" / "share") / "strata" / "models";
}

std::vector<ModelFolder> model_folders(const std::vector<fs::path>& added) {
  std::vector<ModelFolder> out;
  auto add = [&out](const fs::path& p, const char* source) {
    if (p.empty()) return;
    for (const ModelFolder& f : out)
      if (f.path == p) return;
    out.push_back({p, source});
  };
  const fs::path h = home();
  const fs::path cache = env_path("XDG_CACHE_HOME").value_or(h / ".cache");
  add(strata_model_folder(), "Strata");
  add(h / ".lmstudio" / "models", "LM Studio");
  add(cache / "lm-studio" / "models", "LM Studio");
  if (auto p = env_path("HF_HUB_CACHE")) add(*p, "Hugging Face");
  if (auto p = env_path("HF_HOME")) add(*p / "hub", "Hugging Face");
  add(cache / "huggingface" / "hub", "Hugging Face");
  add(env_path("LLAMA_CACHE").value_or(cache / "llama.cpp"), "llama.cpp");
  for (const fs::path& p : added) add(p, "added");
  if (const char* dirs = std::getenv("STRATA_MODEL_DIRS")) {
    const std::string list = dirs;
    size_t start = 0;
    while (start <= list.size()) {
      const size_t colon = std::min(list.find(':', start), list.size());
      if (colon > start) add(fs::path(list.substr(start, colon - start)), "added");
      start = colon + 1;
    }
  }
  return out;
}

std::vector<fs::path> model_search_folders() {
  std::vector<fs::path> out;
  for (const ModelFolder& f : model_folders()) out.push_back(f.path);
  return out;
}

std::vector<fs::path> find_gguf_files(const std::vector<fs::path>& folders) {
  std::vector<fs::path> found;
  for (const fs::path& folder : folders) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) continue;
    auto it = fs::recursive_directory_iterator(folder, fs::directory_options::follow_directory_symlink |
                                                           fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it.depth() > 8) {
        it.disable_recursion_pending();
        continue;
      }
      const fs::path& p = it->path();
      std::string name = p.filename().string();
      std::string lower = name;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      if (lower.size() < 5 || lower.compare(lower.size() - 5, 5, ".gguf") != 0) continue;
      if (lower.rfind("ggml-vocab-", 0) == 0 || lower.find("mmproj") != std::string::npos) continue;
      if (!is_first_or_only_part(lower)) continue;
      std::error_code fec;
      if (!fs::is_regular_file(p, fec) || fs::file_size(p, fec) < 1024) continue;
      found.push_back(p);
    }
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

fs::path last_model_record() {
  fs::path base = env_path("XDG_CONFIG_HOME").value_or(home() / ".config");
  return base / "strata" / "last_model";
}

std::optional<fs::path> read_last_model() {
  std::ifstream in(last_model_record());
  std::string line;
  if (!in || !std::getline(in, line) || line.empty()) return std::nullopt;
  std::error_code ec;
  if (!fs::is_regular_file(line, ec)) return std::nullopt;
  return fs::path(line);
}

Status write_last_model(const fs::path& model) {
  const fs::path record = last_model_record();
  std::error_code ec;
  fs::create_directories(record.parent_path(), ec);
  if (ec) return Error{Code::Io, "cannot create " + record.parent_path().string() + ": " + ec.message()};
  std::ofstream out(record, std::ios::trunc);
  if (!out) return Error{Code::Io, "cannot write " + record.string()};
  out << fs::absolute(model, ec).string() << "\n";
  return {};
}

Expected<fs::path> default_model(const std::vector<fs::path>& bundled_candidates) {
  if (auto last = read_last_model()) return *last;
  std::error_code chat_ec;
  const fs::path chat = strata_model_folder() / kDefaultChatModel;
  if (fs::is_regular_file(chat, chat_ec)) return chat;
  const std::vector<fs::path> folders = model_search_folders();
  std::vector<fs::path> found = find_gguf_files(folders);
  if (!found.empty()) return found.front();
  for (const fs::path& p : bundled_candidates) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p;
  }
  std::string where;
  for (const fs::path& f : folders) where += (where.empty() ? "" : ", ") + f.string();
  return Error{Code::NotFound,
               "no model given and none found: pass --model FILE.gguf, or put a .gguf file in one of " + where};
}

}  // namespace strata::model
