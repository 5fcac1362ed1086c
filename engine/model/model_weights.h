// engine/model/model_weights.h — binds the tensors of a GGUF file to the roles of a llama /
// qwen2 transformer, checking every shape and type. Views only: the bytes stay in the mapping.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model_config.h"
#include "kernels/cpu/dtype.h"

namespace strata::model {

// A 1-D or 2-D weight. For a matrix, cols = dims[0] (contiguous), rows = dims[1]; the layer
// computes y = W x with x of length cols.
struct TensorView {
  std::string name;
  const uint8_t* data = nullptr;   // nullptr: absent (optional tensors)
  kernels::DType type = kernels::DType::F32;
  int64_t cols = 0;
  int64_t rows = 1;
  uint64_t n_bytes = 0;

  bool present() const { return data != nullptr; }
};

struct LayerWeights {
  TensorView attn_norm;  // [n_embd] f32
  TensorView wq;         // [q_dim rows][n_embd cols]
  TensorView wk;         // [kv_dim][n_embd]
  TensorView wv;         // [kv_dim][n_embd]
  TensorView bq, bk, bv; // [q_dim], [kv_dim], [kv_dim] f32 (qwen2 only)
  TensorView wo;         // [n_embd][q_dim]
  TensorView ffn_norm;   // [n_embd] f32
  TensorView w_gate;     // [n_ff][n_embd]
  TensorView w_up;       // [n_ff][n_embd]
  TensorView w_down;     // [n_embd][n_ff]

  uint64_t n_bytes() const;  // all tensors of the layer
};

struct ModelWeights {
  TensorView token_embd;   // [n_vocab rows][n_embd cols], any type (rows are dequantized on lookup)
  TensorView output_norm;  // [n_embd] f32
  TensorView output;       // [n_vocab][n_embd]; the token embedding when tied
  TensorView rope_freqs;   // optional [head_dim/2] f32: per-pair frequency divisors (Llama 3.1)
  std::vector<LayerWeights> layers;
};

Expected<ModelWeights> bind_weights(const gguf::GgufFile& file, const ModelConfig& config);

}  // namespace strata::model
