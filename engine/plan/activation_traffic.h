// engine/plan/activation_traffic.h — the activations one token's pass reads and writes in a
// device's memory besides the weights: every op's inputs and outputs (f32), as the executor issues
// them (one kernel per op, nothing fused), so as a GPU pays them. Formulas in docs/placement.md
// ("Cost model", activations). Pure arithmetic on the model's shapes; depends on plan/ and model/.
#pragma once

#include <cstdint>

#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "engine/plan/tensor_split.h"

namespace strata::plan {

// Bytes per token of the attention part of a block (or of a tensor-parallel shard of it): the
// input norm, each of the Q, K and V products' input and output, their biases and Q/K norms,
// RoPE, the attention op's q, k, v in and its output out (the KV cache itself is attention_ms's),
// the output product, its bias and the residual add. Unlike the weights, a batch does not share
// these: each row has its own. A shard with no heads writes a zero update and adds it.
uint64_t attention_activation_bytes(const model::ModelConfig& config, const model::LayerWeights& layer,
                                    const LayerShard& shard);
// The same for the FFN part: the FFN norm, the gate / up products, the activation, the down
// product, biases and the residual add; for an MoE block the router and the shared expert (the
// routed experts are expert_activation_bytes each).
uint64_t ffn_activation_bytes(const model::ModelConfig& config, const model::LayerWeights& layer,
                              const LayerShard& shard);
// One routed expert's pass of one token: its rows gathered, gate / up, activation, down, and the
// weighted add into the update.
uint64_t expert_activation_bytes(const model::ModelConfig& config, const model::LayerWeights& layer);
// The embedding's row written as f32 (and scaled where the model scales it).
uint64_t embedding_activation_bytes(const model::ModelConfig& config);
// The head over vocab_rows of the vocabulary: the row normalised (the executor norms each row
// alone, reading the norm's weights each time), the product's input and its logits, and their
// scale or soft cap where the model has one.
uint64_t head_activation_bytes(const model::ModelConfig& config, int64_t vocab_rows);

}  // namespace strata::plan
