// engine/model/model_weights.h — binds the tensors of a GGUF file to the roles of a decoder block,
// as the arch table (arch_table.h, layer_tensors) lists them, checking every shape and type. Views
// only: the bytes stay in the mapping. Fused tensors (phi3's attn_qkv and gate+up ffn_up) become
// views of their row ranges, so the rest of the engine sees separate Q, K, V, gate and up matrices.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model_config.h"
#include "kernels/cpu/dtype.h"

namespace strata::model {

// A 1-D, 2-D or 3-D weight. For a matrix, cols = dims[0] (contiguous), rows = dims[1]; the layer
// computes y = W x with x of length cols. A 3-D tensor (a mixture-of-experts layer's merged
// expert matrices, dims [cols, rows, n_mats]) is n_mats such matrices back to back, matrix i at
// data + i * mat_stride bytes; n_bytes counts all of them.
struct TensorView {
  std::string name;
  const uint8_t* data = nullptr;   // nullptr: absent (optional tensors)
  kernels::DType type = kernels::DType::F32;
  int64_t cols = 0;
  int64_t rows = 1;
  uint64_t n_bytes = 0;
  int64_t n_mats = 1;        // matrices (experts) held; 1 for 1-D and 2-D tensors
  uint64_t mat_stride = 0;   // bytes between consecutive matrices: rows * row_bytes(type, cols)

  bool present() const { return data != nullptr; }
  // Matrix i (in [0, n_mats)) of a 3-D tensor as a 2-D view of its own (named "<name>[i]").
  TensorView mat(int64_t i) const;
  // Rows [first, first + n) of a 2-D tensor as a view of its own (same name; no data where this
  // view has none).
  TensorView row_slice(int64_t first, int64_t n) const;
};

// One block's tensors, one view per row of layer_tensors() (which names, shapes, parts and cuts
// them; code that walks every tensor walks that table). Also a shard's: arch::ShardWeights is
// this with the views a device holds.
struct LayerWeights {
  TensorView attn_norm;  // [n_embd] f32
  TensorView attn_norm_b;  // [n_embd] f32: LayerNorm bias (starcoder2)
  TensorView wq;         // [q_dim rows][n_embd cols]
  TensorView wk;         // [kv_dim][n_embd]
  TensorView wv;         // [kv_dim][n_embd]
  TensorView bq, bk, bv; // [q_dim], [kv_dim], [kv_dim] f32 (qwen2 only)
  TensorView q_norm;     // [head_dim] f32, shared by every head (qwen3, gemma3)
  TensorView k_norm;     // [head_dim] f32
  TensorView wo;         // [n_embd][q_dim]
  TensorView bo;         // [n_embd] f32: output bias (gpt-oss), added once per block
  TensorView attn_sinks; // [n_heads] f32: a sink logit per query head (gpt-oss)
  // Multi-head latent attention (deepseek2; wk, wv absent, wq absent where q_lora_rank > 0):
  TensorView wq_a;       // [q_lora][n_embd]: the queries' down-projection
  TensorView q_a_norm;   // [q_lora] f32
  TensorView wq_b;       // [n_heads * key_length_mla][q_lora]: per head qk_nope then rope dims
  TensorView wkv_a;      // [kv_lora + rope dims][n_embd]: the latent, then the shared RoPE key
  TensorView kv_a_norm;  // [kv_lora] f32
  TensorView wk_b;       // [n_heads][kv_lora][qk_nope] (3-D): a head's key up-projection, absorbed into its query
  TensorView wv_b;       // [n_heads][value_length_mla][kv_lora] (3-D): a head's value up-projection
  TensorView post_attn_norm;  // [n_embd] f32: norm of the attention output (gemma3)
  TensorView ffn_norm;   // [n_embd] f32
  TensorView ffn_norm_b; // [n_embd] f32: LayerNorm bias (starcoder2)
  TensorView w_gate;     // [n_ff][n_embd]
  TensorView w_up;       // [n_ff][n_embd]
  TensorView w_down;     // [n_embd][n_ff]
  TensorView b_up;       // [n_ff] f32 (starcoder2; w_gate absent: a non-gated FFN)
  TensorView b_down;     // [n_embd] f32, added once per block
  TensorView post_ffn_norm;   // [n_embd] f32: norm of the FFN output (gemma3)
  // Mixture of experts (config.is_moe(); w_gate, w_up, w_down are then absent):
  TensorView ffn_gate_inp;    // router [n_expert rows][n_embd], f32 or any weight type
  TensorView ffn_gate_inp_b;  // [n_expert] f32: router bias (gpt-oss)
  TensorView exp_probs_b;     // [n_expert] f32: added to the gate probabilities to choose experts only (DeepSeek V3)
  TensorView ffn_gate_exps;   // [n_expert][n_ff_exp][n_embd] (3-D)
  TensorView ffn_up_exps;     // [n_expert][n_ff_exp][n_embd]
  TensorView ffn_down_exps;   // [n_expert][n_embd][n_ff_exp]
  // Per-expert biases (gpt-oss), f32, one row per expert (mat_stride: a row's bytes):
  TensorView ffn_gate_exps_b; // [n_expert][n_ff_exp]
  TensorView ffn_up_exps_b;   // [n_expert][n_ff_exp]
  TensorView ffn_down_exps_b; // [n_expert][n_embd]
  TensorView ffn_gate_inp_shexp;  // [n_embd] f32: the shared expert's sigmoid gate (qwen2moe)
  TensorView ffn_gate_shexp;  // [n_ff_shexp][n_embd]
  TensorView ffn_up_shexp;    // [n_ff_shexp][n_embd]
  TensorView ffn_down_shexp;  // [n_embd][n_ff_shexp]

  bool is_moe() const { return ffn_gate_inp.present(); }
  // Bytes of the routed experts' tensors (ffn_*_exps), all experts.
  uint64_t expert_bytes() const;

  uint64_t n_bytes() const;  // all tensors of the layer
  uint64_t part_bytes(Part part) const;  // the tensors of one part, whole
};

struct ModelWeights {
  TensorView token_embd;   // [n_vocab rows][n_embd cols], any type (rows are dequantized on lookup)
  TensorView output_norm;  // [n_embd] f32
  TensorView output_norm_b;  // [n_embd] f32: LayerNorm bias (starcoder2), else absent
  TensorView output;       // [n_vocab][n_embd]; the token embedding when tied
  TensorView rope_freqs;   // optional [rope_dims/2] f32: per-pair frequency divisors (Llama 3.1;
                           // phi3's rope_factors_short)
  TensorView rope_freqs_long;  // optional, phi3: the divisors for contexts beyond n_ctx_orig

  // The divisors to use at context length n_ctx (may be absent).
  const TensorView& rope_freqs_for(const ModelConfig& config, int64_t n_ctx) const {
    return rope_freqs_long.present() && config.n_ctx_orig > 0 && n_ctx > config.n_ctx_orig ? rope_freqs_long
                                                                                            : rope_freqs;
  }
  std::vector<LayerWeights> layers;
};

Expected<ModelWeights> bind_weights(const gguf::GgufFile& file, const ModelConfig& config);

}  // namespace strata::model
