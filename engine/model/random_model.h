// engine/model/random_model.h — writes a GGUF model of any architecture of the arch table (its keys,
// its block tensors; mixture-of-experts where its row allows), shape and tensor type, with random
// weights (normal, std 0.02) and a real vocabulary copied from another GGUF file.
// For tests and benchmarks: the shapes and bytes are real, the text it writes is not.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "engine/core/status.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model_config.h"

namespace strata::model {

struct RandomModelSpec {
  Arch arch = Arch::Llama;
  std::string name = "random";
  int64_t n_embd = 256;
  int64_t n_layers = 2;
  int64_t n_heads = 4;
  int64_t n_kv_heads = 4;
  int64_t n_ff = 512;
  int64_t n_ctx = 2048;
  int64_t head_dim = 0;        // 0: n_embd / n_heads (written as attention.key_length when different)
  int64_t rope_dims = 0;       // rope.dimension_count: rotated dimensions of a head; 0: all of it
  int64_t sliding_window = 0;  // attention.sliding_window (llama: every layer; gemma3: the local ones)
  int64_t swa_pattern = 0;     // attention.sliding_window_pattern; 0: not written (gemma3 then uses 6)
  // phi3: write long-context RoPE (rope.scaling.type longrope, original_context_length n_ctx / 4,
  // rope_factors_short / _long tensors and the attn_factor llama.cpp's converter derives).
  bool longrope = true;
  // YaRN (rope.scaling.type yarn) with this factor > 1, trained context yarn_orig_ctx (0: n_ctx / factor);
  // 0: not written.
  float yarn_factor = 0.0f;
  // gemma2's soft-caps (attn_logit_softcapping, final_logit_softcapping); written for rows with softcaps.
  float attn_softcap = 50.0f;
  float final_softcap = 30.0f;
  int64_t yarn_orig_ctx = 0;
  // Mixture of experts: n_expert > 0 gives every layer a router (ffn_gate_inp, f32 as llama.cpp's
  // quantizer keeps it) and merged experts (ffn_{gate,up,down}_exps, 3-D) instead of the dense FFN.
  // qwen2moe and qwen3moe need it; llama takes it (Mixtral); others refuse it.
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;  // top-k, in [1, n_expert]
  int64_t n_ff_exp = 0;       // one expert's units (qwen*moe: expert_feed_forward_length); 0: n_ff. llama: n_ff
  int64_t n_ff_shexp = 0;     // qwen2moe's shared expert (expert_shared_feed_forward_length); 0: n_ff
  // deepseek2 (MLA): head_dim is a query head (key_length_mla; default 3 x rope_dims), rope_dims
  // its RoPE part (required), the cache row kv_lora_rank + rope_dims; heads' outputs of v_head_dim
  // (default head_dim - rope_dims); q_lora_rank 0 writes one attn_q (V2-Lite). The first
  // n_dense_lead layers are dense, the rest experts with n_shared_experts shared experts of
  // n_ff_exp units each, gating "sigmoid" (V3) or "softmax" (V2), an exp_probs_b selection bias
  // when selection_bias, expert groups, renormalised weights (expert_weights_norm) times
  // expert_weights_scale, and yarn_log_mul (rope.scaling.yarn_log_multiplier) with --yarn-factor.
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t v_head_dim = 0;
  int64_t n_dense_lead = 0;
  int64_t n_shared_experts = 1;
  std::string gating = "sigmoid";
  bool selection_bias = true;
  int64_t expert_groups = 0;
  int64_t expert_groups_used = 0;
  bool expert_weights_norm = true;
  float expert_weights_scale = 1.0f;
  float yarn_log_mul = 0.0f;
  // A single type ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k",
  // "q3_k", "q4_k", "q5_k", "q6_k") or a llama.cpp-style mix ("q4_k_m", "q5_k_m").
  std::string type = "f32";
  float stddev = 0.02f;
  uint64_t seed = 42;
  int n_threads = 1;
  // > 0: each matrix's rows repeat a pool of this many distinct rows (row r is row r mod row_pool),
  // so only the pool is drawn and quantized: a 7B-shape model in seconds instead of a minute or
  // more, for benchmarks that measure reads, not text. 0: every row drawn.
  int64_t row_pool = 0;
};

Status validate(const RandomModelSpec& spec);

// Tokenizer keys (tokenizer.*) come from vocab_source; the vocabulary size sets n_vocab.
Status write_random_model(const RandomModelSpec& spec, const gguf::GgufFile& vocab_source,
                          const std::filesystem::path& out);

}  // namespace strata::model
