// engine/model/model.cpp — load order: map -> hyper-parameters -> weights -> tokenizer.
#include "engine/model/model.h"

#include "engine/chat/chat_template.h"

namespace strata::model {

Expected<std::unique_ptr<Model>> Model::load(const std::filesystem::path& path) {
  STRATA_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::open(path));
  STRATA_ASSIGN_OR_RETURN(ModelConfig config, read_model_config(file));
  STRATA_ASSIGN_OR_RETURN(tokenizer::Vocab vocab, tokenizer::Vocab::from_gguf(file));
  if (static_cast<int64_t>(vocab.tokens.size()) > config.n_vocab)
    return Error{Code::Corrupt, "tokenizer has " + std::to_string(vocab.tokens.size()) +
                                    " tokens but token_embd.weight has only " + std::to_string(config.n_vocab) +
                                    " rows"};
  STRATA_ASSIGN_OR_RETURN(tokenizer::Tokenizer tok, tokenizer::Tokenizer::create(std::move(vocab)));
  std::unique_ptr<Model> m(new Model(path, std::move(file), std::move(tok)));
  m->config_ = std::move(config);
  if (m->config_.name.empty()) m->config_.name = path.stem().string();
  STRATA_ASSIGN_OR_RETURN(m->weights_, bind_weights(m->file_, m->config_));
  STRATA_ASSIGN_OR_RETURN(m->chat_template_, m->file_.get_string_or("tokenizer.chat_template", ""));
  // Some conversions leave the template out; the architecture's row may name the format its
  // instruction-tuned models were trained on (gemma3: "gemma").
  if (m->chat_template_.empty() && m->config_.info().builtin_chat_template) {
    STRATA_ASSIGN_OR_RETURN(m->chat_template_, chat::builtin_template_source(m->config_.info().builtin_chat_template));
    m->chat_template_builtin_ = true;
  }
  return m;
}

uint64_t Model::weight_bytes() const {
  uint64_t total = weights_.token_embd.n_bytes + weights_.output_norm.n_bytes + weights_.output_norm_b.n_bytes + weights_.rope_freqs.n_bytes +
                   weights_.rope_freqs_long.n_bytes;
  if (!config_.tied_output) total += weights_.output.n_bytes;
  for (const LayerWeights& l : weights_.layers) total += l.n_bytes();
  return total;
}

uint64_t Model::parameter_count() const {
  uint64_t total = 0;
  for (const gguf::TensorInfo& t : file_.tensors()) total += t.n_elements;
  return total;
}

}  // namespace strata::model
