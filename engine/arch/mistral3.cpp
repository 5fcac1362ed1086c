// engine/arch/mistral3.cpp — mistral3's block (Mistral Small 3.x, Ministral 3): llama's steps, x +=
// attn(rms_norm(x)) with interleaved RoPE (YaRN where the file says), x += SwiGLU FFN(rms_norm(x)) or
// routed experts. Files that ask for llama4-style attention temperature scaling are refused by the
// config reader (attention.temperature_scale).
#include "engine/arch/block_forward.h"

namespace strata::arch {

extern const ArchForward kMistral3Forward{pre_norm_attention, gated_ffn_or_experts};

}  // namespace strata::arch
