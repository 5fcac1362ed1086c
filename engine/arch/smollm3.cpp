// engine/arch/smollm3.cpp — smollm3's block: llama's steps; rope_attend leaves RoPE out of the layers
// the row's no_rope_layer_step marks (every 4th: ModelConfig::layer_attention's `rope`).
#include "engine/arch/block_forward.h"

namespace strata::arch {

extern const ArchForward kSmollm3Forward{pre_norm_attention, pre_norm_gated_ffn};

}  // namespace strata::arch
