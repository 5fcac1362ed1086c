// engine/model/model_config.h — the hyper-parameters of a decoder-only transformer, read from
// GGUF metadata. Knows the GGUF key names of each supported architecture; no weights here.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/status.h"
#include "engine/gguf/gguf_file.h"

namespace strata::model {

enum class Arch { Llama, Qwen2 };

// How rotary embeddings pair up the dimensions of a head.
enum class RopeStyle {
  Interleaved,  // (x[2i], x[2i+1]): Meta's layout, llama.cpp's LLAMA_ROPE_TYPE_NORM (llama arch)
  Neox,         // (x[i], x[i + rope_dims/2]): HF rotate_half layout (qwen2)
};

const char* arch_name(Arch arch);

struct ModelConfig {
  Arch arch = Arch::Llama;
  std::string name;           // general.name, or the file stem
  int64_t n_vocab = 0;        // rows of token_embd
  int64_t n_ctx_train = 0;    // context length the model was trained with
  int64_t n_embd = 0;         // hidden size ("dim")
  int64_t n_layers = 0;
  int64_t n_heads = 0;        // query heads
  int64_t n_kv_heads = 0;     // key/value heads (GQA when < n_heads)
  int64_t head_dim = 0;       // per-head size of Q and K (and V)
  int64_t n_ff = 0;           // SwiGLU hidden size
  int64_t rope_dims = 0;      // leading dimensions of a head that are rotated
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;  // linear scaling: position * scale
  RopeStyle rope_style = RopeStyle::Interleaved;
  bool has_qkv_bias = false;     // qwen2
  bool tied_output = false;      // no output.weight: the embedding doubles as the head

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
};

// Reads and validates the hyper-parameters. Errors name the key and the value.
Expected<ModelConfig> read_model_config(const gguf::GgufFile& file);

}  // namespace strata::model
