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
  // deepseek2: the first n_dense_lead layers are dense (ffn_gate/up/down of n_ff units), the others
  // MoE. Routing: gate probabilities (softmax or sigmoid, expert_gating), plus exp_probs_b where a
  // layer has it to choose experts (not to weight them); with n_expert_groups > 1 only the
  // n_group_used groups whose two best experts score highest are candidates; the chosen experts'
  // weights are renormalised (expert_weights_norm) and times expert_weights_scale.
  int64_t n_dense_lead = 0;      // <name>.leading_dense_block_count
  float expert_weights_scale = 1.0f;  // <name>.expert_weights_scale (0 and absent: 1)
  int64_t n_expert_groups = 0;   // <name>.expert_group_count (0 or 1: no groups)
  int64_t n_group_used = 0;      // <name>.expert_group_used_count

  // Multi-head latent attention (mla: deepseek2). head_dim is then the latent cache's row,
  // kv_lora_rank + rope_dims, and n_kv_heads 1; a query head has head_dim_k_mla elements
  // (head_dim_k_mla - rope_dims without RoPE, then rope_dims with), absorbed through wk_b into a
  // head_dim row; a head's output is its attention over the latent times wv_b: head_dim_v_mla.
  int64_t q_lora_rank = 0;       // <name>.attention.q_lora_rank; 0: one attn_q
  int64_t kv_lora_rank = 0;      // <name>.attention.kv_lora_rank
  int64_t head_dim_k_mla = 0;    // <name>.attention.key_length_mla
  int64_t head_dim_v_mla = 0;    // <name>.attention.value_length_mla
  float rope_yarn_log_mul = 0.0f;  // <name>.rope.scaling.yarn_log_multiplier / 0.1 (DeepSeek's mscale_all_dim)

  const ArchInfo& info() const { return arch_info(arch); }
  int64_t q_dim() const { return n_heads * head_dim; }
  bool is_moe() const { return n_expert > 0; }
  // Whether layer `layer`'s FFN is routed experts (every layer of an MoE model but deepseek2's
  // leading dense ones).
  bool layer_is_moe(int64_t layer) const { return is_moe() && layer >= n_dense_lead; }
  // The widest FFN hidden activation a layer computes ([tokens][this] for gate and up): the dense
  // FFN's n_ff, or the widest of a routed and the shared expert (and n_ff where dense layers lead).
  int64_t ffn_width() const {
    if (!is_moe()) return n_ff;
    const int64_t experts = n_ff_exp > n_ff_shexp ? n_ff_exp : n_ff_shexp;
    return n_dense_lead > 0 && n_ff > experts ? n_ff : experts;
  }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
  // The KV cache's planes: keys and values, or with MLA the latent rows alone (the values are
  // their first kv_lora_rank elements).
  int64_t kv_planes() const { return mla ? 1 : 2; }
  bool layer_is_local(int64_t layer) const {
    return sliding_window > 0 && layer >= 0 && layer < static_cast<int64_t>(local_layers.size()) &&
           local_layers[static_cast<size_t>(layer)] != 0;
  }
  LayerAttention layer_attention(int64_t layer) const;
  // The attention scores' factor: attention.scale, else 1/sqrt(head_dim); with MLA
  // mscale^2 / sqrt(head_dim_k_mla), DeepSeek's YaRN attention factor (mla_mscale()).
  float query_scale() const;
  // MLA: llama.cpp's deepseek2 rule, attn_factor_org * (1 + 0.1 rope_yarn_log_mul ln(1 / rope_freq_scale)),
  // where attn_factor_org is the factor cos/sin get (rope_cos_sin_factor()) times the YaRN
  // magnitude the rope kernel would add.
  float mla_mscale() const;
  // What cos and sin are multiplied by on the global layers: rope.scaling.attn_factor, times
  // YaRN's 1 + 0.1 ln(factor) except where DeepSeek's yarn_log_multiplier moves that factor into
  // the query scale.
  float rope_cos_sin_factor() const;
};

// Reads and validates the hyper-parameters. Errors name the key and the value; an architecture
// Strata does not implement is Code::Unsupported naming it.
Expected<ModelConfig> read_model_config(const gguf::GgufFile& file);

}  // namespace strata::model
