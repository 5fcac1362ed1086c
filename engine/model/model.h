// engine/model/model.h — a loaded model: the mapped GGUF file, its hyper-parameters, its bound
// weights, its tokenizer and chat template. Immutable after load; shared by every session.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "engine/tokenizer/tokenizer.h"

namespace strata::model {

class Model {
 public:
  // Maps the file and validates everything the forward pass will touch.
  static Expected<std::unique_ptr<Model>> load(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  const gguf::GgufFile& file() const { return file_; }
  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const tokenizer::Tokenizer& tokenizer() const { return tokenizer_; }
  // The file's chat template; else the built-in one of its architecture (gemma3: "gemma"), with
  // chat_template_builtin() true; "" when neither exists.
  const std::string& chat_template() const { return chat_template_; }
  bool chat_template_builtin() const { return chat_template_builtin_; }

  uint64_t weight_bytes() const;    // bytes of every tensor the forward pass reads
  uint64_t parameter_count() const; // elements of every tensor in the file

 private:
  Model(std::filesystem::path path, gguf::GgufFile file, tokenizer::Tokenizer tokenizer)
      : path_(std::move(path)), file_(std::move(file)), tokenizer_(std::move(tokenizer)) {}

  std::filesystem::path path_;
  gguf::GgufFile file_;           // owns the mapping the weights point into: never moves after load
  ModelConfig config_;
  ModelWeights weights_;
  tokenizer::Tokenizer tokenizer_;
  std::string chat_template_;
  bool chat_template_builtin_ = false;
};

}  // namespace strata::model
