// engine/arch/forward.cpp — which forward file runs which architecture: one line per row of the
// arch table. (A self-registering object in each forward file would be dropped by the linker from
// the static engine library, and the table in model/ cannot point up into arch/.)
#include "engine/arch/block_forward.h"

namespace strata::arch {

extern const ArchForward kLlamaForward, kQwen2Forward, kQwen3Forward, kGemma3Forward, kPhi3Forward,
    kQwen2MoeForward, kQwen3MoeForward, kMistral3Forward, kSmollm3Forward, kGraniteForward, kGemma2Forward,
    kGlm4Forward, kOlmo2Forward, kGptOssForward, kStarcoder2Forward, kCohere2Forward, kDeepseek2Forward;

const ArchForward& forward_for(model::Arch arch) {
  switch (arch) {  // -Wswitch names a row without a forward
    case model::Arch::Llama: return kLlamaForward;
    case model::Arch::Qwen2: return kQwen2Forward;
    case model::Arch::Qwen3: return kQwen3Forward;
    case model::Arch::Gemma3: return kGemma3Forward;
    case model::Arch::Phi3: return kPhi3Forward;
    case model::Arch::Qwen2Moe: return kQwen2MoeForward;
    case model::Arch::Qwen3Moe: return kQwen3MoeForward;
    case model::Arch::Mistral3: return kMistral3Forward;
    case model::Arch::Smollm3: return kSmollm3Forward;
    case model::Arch::Granite:
    case model::Arch::GraniteMoe: return kGraniteForward;
    case model::Arch::Gemma2: return kGemma2Forward;
    case model::Arch::Glm4: return kGlm4Forward;
    case model::Arch::Olmo2: return kOlmo2Forward;
    case model::Arch::GptOss: return kGptOssForward;
    case model::Arch::Starcoder2: return kStarcoder2Forward;
    case model::Arch::Cohere2: return kCohere2Forward;
    case model::Arch::Deepseek2: return kDeepseek2Forward;
  }
  return kLlamaForward;  // unreachable: every Arch has a case above
}

}  // namespace strata::arch
