// engine/model/model_config.h — the hyper-parameters of a decoder-only transformer, read from
// GGUF metadata under the key names llama.cpp uses. Knows what sets the supported architectures
// apart (norms, activation, attention windows, RoPE variants); no weights here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/gguf/gguf_file.h"

namespace strata::model {

// llama also covers Mistral (and SmolLM2, TinyLlama, Llama 2/3): a sliding window when the
// metadata sets one; and Mixtral-style mixture-of-experts when llama.expert_count > 0.
// Qwen2Moe / Qwen3Moe: qwen2 / qwen3 attention with a mixture-of-experts FFN in every layer.
enum class Arch { Llama, Qwen2, Qwen3, Gemma3, Phi3, Qwen2Moe, Qwen3Moe };

// How rotary embeddings pair up the dimensions of a head.
enum class RopeStyle {
  Interleaved,  // (x[2i], x[2i+1]): Meta's layout, llama.cpp's LLAMA_ROPE_TYPE_NORM (llama arch)
  Neox,         // (x[i], x[i + rope_dims/2]): HF rotate_half layout (qwen2, qwen3, gemma3, phi3)
};

// The gated FFN's activation: down(act(gate(x)) * up(x)).
enum class FfnActivation {
  Silu,      // SwiGLU (llama, qwen, phi3)
  GeluTanh,  // GeGLU with the tanh approximation of GELU (gemma3)
};

const char* arch_name(Arch arch);

// Attention and RoPE settings of one layer; they differ between layers where an architecture
// interleaves local (sliding-window) and global attention (gemma3: 5 local, then 1 global).
struct LayerAttention {
  int64_t window = 0;        // 0: attends over the whole context; else to the last `window` positions (itself included)
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;
};

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
  int64_t n_ff = 0;           // gated FFN hidden size
  int64_t rope_dims = 0;      // leading dimensions of a head that are rotated
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.0f;  // global (full-context) layers
  float rope_freq_scale = 1.0f;     // linear scaling: position * scale (global layers)
  RopeStyle rope_style = RopeStyle::Interleaved;
  FfnActivation ffn_activation = FfnActivation::Silu;
  bool has_qkv_bias = false;     // qwen2
  bool has_qk_norm = false;      // RMS norm of each head of Q and K before RoPE ([head_dim] weights; qwen3, gemma3)
  bool has_post_norms = false;   // RMS norm of the attention and FFN outputs before the residual add (gemma3)
  bool fused_qkv = false;        // one attn_qkv tensor holding Q, K, V rows (phi3)
  bool fused_gate_up = false;    // one ffn_up tensor holding gate then up rows (phi3)
  bool tied_output = false;      // no output.weight: the embedding doubles as the head
  float embd_scale = 1.0f;       // the token embedding is multiplied by this (gemma3: sqrt(n_embd))
  float attn_scale = 0.0f;       // query scale in attention: <name>.attention.scale, else 1/sqrt(head_dim)
  // Sliding-window attention: `sliding_window` positions on the layers local_layers marks (one
  // entry per layer, 1 = local). From <name>.attention.sliding_window_pattern: an integer P
  // (0: every layer local; else layer i local unless (i + 1) % P == 0, llama.cpp's convention) or
  // one flag per layer; absent: gemma3 P = 6, others every layer.
  int64_t sliding_window = 0;
  std::vector<uint8_t> local_layers;
  float rope_freq_base_local = 10000.0f;  // RoPE base of the local layers (gemma3)
  // Long-context RoPE (phi3 "longrope"): per-pair frequency factors for contexts beyond
  // n_ctx_orig (rope_factors_long) and within it (rope_factors_short), and a cos/sin multiplier.
  int64_t n_ctx_orig = 0;        // <name>.rope.scaling.original_context_length; 0: not set
  float rope_attn_factor = 1.0f; // <name>.rope.scaling.attn_factor

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
  bool expert_weights_norm = false;
  // The shared expert (qwen2moe): a gated FFN every token runs, added to the routed experts'
  // sum, scaled per token by sigmoid(ffn_gate_inp_shexp · x) when has_shexp_gate.
  int64_t n_ff_shexp = 0;        // <name>.expert_shared_feed_forward_length (else n_ff); 0: none
  bool has_shexp_gate = false;

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
