// engine/tokenizer/vocab.cpp — reads `tokenizer.ggml.*` keys into a Vocab, with llama.cpp's defaults
// for keys that older files lack. Depends on engine/gguf and pre_tokenizer.h (name check only).
#include "engine/tokenizer/vocab.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/pre_tokenizer.h"

namespace strata::tokenizer {
namespace {

// Token texts that end generation in the chat models we know (llama.cpp detects them by text too).
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
    "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>", "<|return|>", "<|call|>",
};
// Candidates for eot_id when the file does not name one, in order of preference.
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "<｜end▁of▁sentence｜>", "<end_of_utterance>",
};

// A special-token id key: absent -> fallback; present but out of range or not a non-negative
// integer -> -1 (llama.cpp warns and ignores such ids; refusing the file would be harsher).
int32_t read_id(const gguf::GgufFile& f, std::string_view key, int32_t fallback, int32_t n_tokens) {
  if (!f.find(key)) return fallback;
  auto v = f.get_uint(key);
  if (!v.ok() || *v >= static_cast<uint64_t>(n_tokens)) return -1;
  return static_cast<int32_t>(*v);
}

}  // namespace

Expected<Vocab> Vocab::from_gguf(const gguf::GgufFile& f) {
  Vocab v;
  STRATA_ASSIGN_OR_RETURN(const std::string model, f.get_string("tokenizer.ggml.model"));
  if (model == "llama") {
    v.kind = TokenizerKind::Spm;
  } else if (model == "gpt2") {
    v.kind = TokenizerKind::Bpe;
  } else {
    return make_error(Code::Unsupported, "tokenizer.ggml.model '" + model +
                                             "': only 'llama' (SentencePiece) and 'gpt2' (byte-level BPE) "
                                             "tokenizers are supported");
  }
  STRATA_ASSIGN_OR_RETURN(std::string pre, f.get_string_or("tokenizer.ggml.pre", ""));
  PreTokenizerInfo pre_info;
  if (v.kind == TokenizerKind::Bpe) {
    STRATA_ASSIGN_OR_RETURN(pre_info, pre_tokenizer_from_name(pre));
  }
  v.pre = pre.empty() ? "default" : pre;

  STRATA_ASSIGN_OR_RETURN(v.tokens, f.get_string_array("tokenizer.ggml.tokens"));
  const std::size_t n = v.tokens.size();
  if (n == 0) return make_error(Code::Corrupt, "tokenizer.ggml.tokens: empty vocabulary");
  if (n > static_cast<std::size_t>(INT32_MAX)) {
    return make_error(Code::Corrupt, "tokenizer.ggml.tokens: " + std::to_string(n) + " tokens exceed int32 ids");
  }
  const auto n_tokens = static_cast<int32_t>(n);

  if (f.find("tokenizer.ggml.scores")) {
    STRATA_ASSIGN_OR_RETURN(v.scores, f.get_float_array("tokenizer.ggml.scores"));
    if (v.scores.size() != n) {
      return make_error(Code::Corrupt, "tokenizer.ggml.scores: " + std::to_string(v.scores.size()) +
                                           " scores for " + std::to_string(n) + " tokens");
    }
  } else {
    v.scores.assign(n, 0.0f);
  }
  if (f.find("tokenizer.ggml.token_type")) {
    STRATA_ASSIGN_OR_RETURN(const std::vector<int64_t> types, f.get_int_array("tokenizer.ggml.token_type"));
    if (types.size() != n) {
      return make_error(Code::Corrupt, "tokenizer.ggml.token_type: " + std::to_string(types.size()) +
                                           " types for " + std::to_string(n) + " tokens");
    }
    v.types.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      // Values outside 1..6 (0 = undefined) are treated as Normal text, as llama.cpp does for display.
      const int64_t t = types[i];
      v.types[i] = (t >= 1 && t <= 6) ? static_cast<int32_t>(t) : static_cast<int32_t>(TokenAttr::Normal);
    }
  } else {
    v.types.assign(n, static_cast<int32_t>(TokenAttr::Normal));
  }
  if (v.kind == TokenizerKind::Bpe) {
    if (!f.find("tokenizer.ggml.merges")) {
      return make_error(Code::Corrupt, "tokenizer.ggml.merges: missing for a 'gpt2' (BPE) tokenizer");
    }
    STRATA_ASSIGN_OR_RETURN(v.merges, f.get_string_array("tokenizer.ggml.merges"));
  }

  // SentencePiece files from older converters omit the ids; <unk>, <s>, </s> are 0, 1, 2 there.
  const bool spm = v.kind == TokenizerKind::Spm;
  v.bos_id = read_id(f, "tokenizer.ggml.bos_token_id", spm && n_tokens > 1 ? 1 : -1, n_tokens);
  v.eos_id = read_id(f, "tokenizer.ggml.eos_token_id", spm && n_tokens > 2 ? 2 : -1, n_tokens);
  v.unk_id = read_id(f, "tokenizer.ggml.unknown_token_id", spm ? 0 : -1, n_tokens);
  v.pad_id = read_id(f, "tokenizer.ggml.padding_token_id", -1, n_tokens);
  v.eot_id = read_id(f, "tokenizer.ggml.eot_token_id", -1, n_tokens);
  const int32_t eom_id = read_id(f, "tokenizer.ggml.eom_token_id", -1, n_tokens);

  STRATA_ASSIGN_OR_RETURN(v.add_bos, f.get_bool_or("tokenizer.ggml.add_bos_token", spm || pre_info.add_bos_default));
  STRATA_ASSIGN_OR_RETURN(v.add_eos, f.get_bool_or("tokenizer.ggml.add_eos_token", false));
  STRATA_ASSIGN_OR_RETURN(v.add_space_prefix, f.get_bool_or("tokenizer.ggml.add_space_prefix", spm));
  if (v.add_bos && v.bos_id < 0) v.add_bos = false;
  if (v.add_eos && v.eos_id < 0) v.add_eos = false;

  std::unordered_map<std::string_view, int32_t> by_text;
  by_text.reserve(n);
  for (int32_t i = 0; i < n_tokens; ++i) by_text.emplace(v.tokens[i], i);
  if (v.eot_id < 0) {
    for (auto text : kEotTexts) {
      if (auto it = by_text.find(text); it != by_text.end()) {
        v.eot_id = it->second;
        break;
      }
    }
  }
  for (int32_t id : {v.eos_id, v.eot_id, eom_id}) {
    if (id >= 0) v.eog_ids.push_back(id);
  }
  for (auto text : kEogTexts) {
    if (auto it = by_text.find(text); it != by_text.end()) v.eog_ids.push_back(it->second);
  }
  std::sort(v.eog_ids.begin(), v.eog_ids.end());
  v.eog_ids.erase(std::unique(v.eog_ids.begin(), v.eog_ids.end()), v.eog_ids.end());
  // OpenAI's harmony format (gpt-oss, o200k_harmony): <|end|> closes a message (the analysis
  // channel's, before the final answer), not the reply, which ends at <|return|> or <|call|>. So
  // where a vocabulary has all three, <|end|> is not an end of generation, and it and the format's
  // markers are shown as text (what a client parses the channels from), as llama.cpp does.
  const auto id_of = [&](std::string_view text) {
    const auto it = by_text.find(text);
    return it == by_text.end() ? -1 : it->second;
  };
  const int32_t harmony_end = id_of("<|end|>");
  if (harmony_end >= 0 && id_of("<|return|>") >= 0 && id_of("<|call|>") >= 0) {
    v.eog_ids.erase(std::remove(v.eog_ids.begin(), v.eog_ids.end(), harmony_end), v.eog_ids.end());
    if (v.eot_id == harmony_end) v.eot_id = id_of("<|return|>");
    for (std::string_view marker : {"<|end|>", "<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"})
      if (const int32_t id = id_of(marker); id >= 0) v.types[id] = static_cast<int32_t>(TokenAttr::UserDefined);
  }
  // An end-of-generation token is never text to show, whatever the converter marked it.
  for (int32_t id : v.eog_ids) v.types[id] = static_cast<int32_t>(TokenAttr::Control);
  return v;
}

}  // namespace strata::tokenizer
