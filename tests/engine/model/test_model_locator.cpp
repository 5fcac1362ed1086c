// tests/engine/model/test_model_locator.cpp — the one model folder list (strata-engine's default
// model and the GUI's Models tab read it): order, sources, the environment it honours
// (STRATA_MODEL_HOME, XDG_DATA_HOME, XDG_CACHE_HOME, HF_HUB_CACHE, HF_HOME, LLAMA_CACHE,
// STRATA_MODEL_DIRS), the GUI's added folders, and no folder twice.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "engine/model/model_locator.h"

namespace strata::model {
namespace {

// Sets environment variables for one test and puts the old values back afterwards.
class ScopedEnv {
 public:
  ScopedEnv(std::map<std::string, std::optional<std::string>> values) {
    for (const auto& [k, v] : values) {
      const char* old = std::getenv(k.c_str());
      saved_[k] = old ? std::optional<std::string>(old) : std::nullopt;
      if (v) setenv(k.c_str(), v->c_str(), 1);
      else unsetenv(k.c_str());
    }
  }
  ~ScopedEnv() {
    for (const auto& [k, v] : saved_) {
      if (v) setenv(k.c_str(), v->c_str(), 1);
      else unsetenv(k.c_str());
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

std::vector<std::pair<std::string, std::string>> listed(const std::vector<ModelFolder>& folders) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const ModelFolder& f : folders) out.emplace_back(f.path.string(), f.source);
  return out;
}

TEST(ModelLocator, DefaultsUnderHome) {
  ScopedEnv env({{"HOME", "/h"}, {"STRATA_MODEL_HOME", std::nullopt}, {"XDG_DATA_HOME", std::nullopt},
                 {"XDG_CACHE_HOME", std::nullopt}, {"HF_HUB_CACHE", std::nullopt}, {"HF_HOME", std::nullopt},
                 {"LLAMA_CACHE", std::nullopt}, {"STRATA_MODEL_DIRS", std::nullopt}});
  const std::vector<std::pair<std::string, std::string>> want = {
      {"/h/.local/share/strata/models", "Strata"}, {"/h/.lmstudio/models", "LM Studio"},
      {"/h/.cache/lm-studio/models", "LM Studio"}, {"/h/.cache/huggingface/hub", "Hugging Face"},
      {"/h/.cache/llama.cpp", "llama.cpp"}};
  EXPECT_EQ(listed(model_folders()), want);
  std::vector<std::string> paths;
  for (const auto& p : model_search_folders()) paths.push_back(p.string());
  ASSERT_EQ(paths.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(paths[i], want[i].first);
}

TEST(ModelLocator, HonoursTheEnvironmentAndAddedFolders) {
  ScopedEnv env({{"HOME", "/h"}, {"STRATA_MODEL_HOME", std::nullopt}, {"XDG_DATA_HOME", "/data"},
                 {"XDG_CACHE_HOME", "/cache"}, {"HF_HUB_CACHE", "/hub"}, {"HF_HOME", "/hf"},
                 {"LLAMA_CACHE", std::nullopt}, {"STRATA_MODEL_DIRS", "/m1::/m2:/gui"}});
  const std::vector<std::pair<std::string, std::string>> want = {
      {"/data/strata/models", "Strata"},  {"/h/.lmstudio/models", "LM Studio"},
      {"/cache/lm-studio/models", "LM Studio"}, {"/hub", "Hugging Face"},
      {"/hf/hub", "Hugging Face"},         {"/cache/huggingface/hub", "Hugging Face"},
      {"/cache/llama.cpp", "llama.cpp"},   {"/gui", "added"},
      {"/m1", "added"},                    {"/m2", "added"}};  // "/gui" is named twice: kept once
  EXPECT_EQ(listed(model_folders({"/gui"})), want);
}

TEST(ModelLocator, StrataModelHomeWins) {
  ScopedEnv env({{"STRATA_MODEL_HOME", "/mine"}, {"XDG_DATA_HOME", "/data"}, {"LLAMA_CACHE", "/llama"}});
  const std::vector<ModelFolder> f = model_folders();
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f.front().path, "/mine");
  EXPECT_EQ(strata_model_folder(), "/mine");
  bool llama = false;
  for (const ModelFolder& m : f) llama |= m.path == "/llama" && m.source == "llama.cpp";
  EXPECT_TRUE(llama);
}

}  // namespace
}  // namespace strata::model
