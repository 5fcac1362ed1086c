// engine/model/model_config.h — the hyper-parameters of a decoder-only transformer, read from
// GGUF metadata under the key names llama.cpp uses (arch_table.h spells the keys and says what
// sets the architectures apart: norms, activation, attention windows, RoPE variants); no weights.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/arch_table.h"

namespace strata::model {

// Attention and RoPE settings of one layer; they differ between layers where an architecture
// interleaves local (sliding-window) and global attention (gemma3: 5 local, then 1 global).
struct LayerAttention {
  int64_t window = 0;        // 0: attends over the whole context; else to the last `window` positions (itself included)
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;
  bool rope_yarn = false;    // YaRN mixing of rope_freq_scale (the model's rope_yarn, global layers)
  bool rope = true;          // false: no positional rotation in this layer (smollm3's NoPE layers)
  bool unit_attn_factor = false;  // cos/sin not scaled by rope.scaling.attn_factor (olmo2's local layers)
};

// The architecture's traits (ArchTraits: rope_style, ffn_activation, has_qk_norm, ...) come from
// its row of the arch table in one assignment; the rest from the file.
struct ModelConfig : ArchTraits {
  Arch arch = Arch::Llama;
  std::string name;           // general.name, or the file stem
  int64_t n_vocab = 0;        // rows of token_embd
  int64_t n_ctx_train = 0;    // context length the model was trained with
  int64_t n_embd = 0;         // hidden size ("dim")
  int64_t n_layers = 0;
  int64_t n_heads = 0;        // query heads
  int64_t n_kv_heads = 0;     // key/value heads (GQA when < n_heads)
  int64_t head_dim = 0;       // per-head size of Q and K (and V)
  int64_t n_ff = 0;           // gated FFN hidden size
  int64_t rope_dims = 0;      // leading dimensions of a head that are rotated
  float rms_eps = 1e-5f;       // the norms' epsilon (RMS norm's, or LayerNorm's where layer_norm)
  float rope_freq_base = 10000.0f;  // global (full-context) layers
  float rope_freq_scale = 1.0f;     // linear scaling: position * scale (global layers)
  bool tied_output = false;      // no output.weight: the embedding doubles as the head
  float embd_scale = 1.0f;       // the token embedding is multiplied by this (gemma3: sqrt(n_embd); granite: embedding_scale)
  float residual_scale = 1.0f;   // each attention / FFN update times this before the residual add (granite)
  float logit_scale = 1.0f;      // logits divided by this (granite)
  float logit_mul = 1.0f;        // logits multiplied by this (cohere2's logit_scale)
  float attn_softcap = 0.0f;     // > 0: attention scores s -> c tanh(s / c) (gemma2's attn_logit_softcapping)
  float final_softcap = 0.0f;    // > 0: logits z -> c tanh(z / c) (gemma2's final_logit_softcapping)
  float attn_scale = 0.0f;       // query scale in attention: <name>.attention.scale, else 1/sqrt(head_dim)
  // Sliding-window attention: `sliding_window` positions on the layers local_layers marks (one
  // entry per layer, 1 = local). From <name>.attention.sliding_window_pattern: an integer P
  // (0: every layer local; else layer i local unless (i + 1) % P == 0, llama.cpp's convention) or
  // one flag per layer; absent: gemma3 P = 6, others every layer.
  int64_t sliding_window = 0;
  std::vector<uint8_t> local_layers;
  float rope_freq_base_local = 10000.0f;  // RoPE base of the local layers (gemma3, olmo2)
  // Long-context RoPE (phi3 "longrope"): per-pair frequency factors for contexts beyond
  // n_ctx_orig (rope_factors_long) and within it (rope_factors_short), and a cos/sin multiplier.
  int64_t n_ctx_orig = 0;        // <name>.rope.scaling.original_context_length; 0: not set
  float rope_attn_factor = 1.0f; // <name>.rope.scaling.attn_factor
  // YaRN (rope.scaling.type yarn): rope_freq_scale = 1 / factor is mixed per pair with the unscaled
  // angle (kernels::rope_theta_yarn) between the pairs where frequencies turn yarn_beta_fast and
  // yarn_beta_slow rotations over n_ctx_orig positions (default n_ctx_train); cos and sin are
  // multiplied by rope_attn_factor * (1 + 0.1 ln factor), llama.cpp's rule.
  bool rope_yarn = false;
  float yarn_ext_factor = 1.0f;  // <name>.rope.scaling.yarn_ext_factor (default 1)
  float yarn_beta_fast = 32.0f;  // <name>.rope.scaling.yarn_beta_fast (default 32)
  float yarn_beta_slow = 1.0f;   // <name>.rope.scaling.yarn_beta_slow (default 1)

  // Mixture of experts (every layer's FFN when n_expert > 0; the dense ffn_gate/up/down are then
  // absent). The router (ffn_gate_inp) scores each token against every expert; the probabilities
  // are a softmax over all n_expert logits; the top n_expert_used experts run on the token and
  // their outputs are summed weighted by their probabilities, renormalised over the top k to sum
  // to 1 where expert_weights_norm says so (llama.cpp's choice per architecture: Mixtral-style
  // llama and qwen3moe renormalise, qwen2moe does not). llama.cpp reads no expert_weights_scale
  // for these three architectures, and neither does Strata (the weights are not scaled).
  int64_t n_expert = 0;          // <name>.expert_count; 0: a dense model
  int64_t n_expert_used = 0;     // <name>.expert_used_count: top-k
  int64_t n_ff_exp = 0;          // one routed expert's hidden units: <name>.expert_feed_forward_length
                                 // (qwen*moe; else n_ff / n_expert_used); llama: feed_forward_length
  // The shared expert (qwen2moe): a gated FFN every token runs, added to the routed experts'
  // sum, scaled per token by sigmoid(ffn_gate_inp_shexp · x) when has_shexp_gate.
  int64_t n_ff_shexp = 0;        // <name>.expert_shared_feed_forward_length (else n_ff); 0: none

  const ArchInfo& info() const { return arch_info(arch); }
  int64_t q_dim() const { return n_heads * head_dim; }
  bool is_moe() const { return n_expert > 0; }
  // The widest FFN hidden activation a layer computes ([tokens][this] for gate and up): the dense
  // FFN's n_ff, or the widest of a routed and the shared expert.
  int64_t ffn_width() const { return is_moe() ? (n_ff_exp > n_ff_shexp ? n_ff_exp : n_ff_shexp) : n_ff; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
  bool layer_is_local(int64_t layer) const {
    return sliding_window > 0 && layer >= 0 && layer < static_cast<int64_t>(local_layers.size()) &&
           local_layers[static_cast<size_t>(layer)] != 0;
  }
  LayerAttention layer_attention(int64_t layer) const;
  float query_scale() const;
};

// Reads and validates the hyper-parameters. Errors name the key and the value; an architecture
// Strata does not implement is Code::Unsupported naming it.
Expected<ModelConfig> read_model_config(const gguf::GgufFile& file);

}  // namespace strata::model
