// engine/model/arch_table.cpp — the rows: architectures, hyper-parameter keys, block tensors.
#include "engine/model/arch_table.h"

#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"

namespace strata::model {
namespace {

constexpr ArchInfo llama() {
  ArchInfo a{Arch::Llama, "llama", "Llama 2/3, Mistral (its window key ignored, as llama.cpp does), Mixtral, TinyLlama, SmolLM2, the TinyStories models", {}};
  a.traits.rope_style = RopeStyle::Interleaved;
  a.traits.expert_weights_norm = true;  // Mixtral renormalises its top-k weights
  a.experts = Experts::Optional;
  // llama.cpp's llama graph attends over the whole context whatever attention.sliding_window a file
  // carries (Mistral 7B v0.1 conversions have one), and so does Strata: the same file gives the same
  // logits past the window (docs/models.md).
  a.reads_sliding_window = false;
  return a;
}

constexpr ArchInfo qwen2() {
  ArchInfo a{Arch::Qwen2, "qwen2", "Qwen2, Qwen2.5", {}};
  a.traits.rope_style = RopeStyle::Neox;
  a.traits.has_qkv_bias = true;
  a.default_rms_eps = 1e-6f, a.default_rope_base = 1000000.0f;
  return a;
}

constexpr ArchInfo qwen3() {
  ArchInfo a{Arch::Qwen3, "qwen3", "Qwen3 (dense)", {}};
  a.traits.rope_style = RopeStyle::Neox;
  a.traits.has_qk_norm = true;
  a.default_rms_eps = 1e-6f, a.default_rope_base = 1000000.0f;
  return a;
}

constexpr ArchInfo gemma3() {
  ArchInfo a{Arch::Gemma3, "gemma3", "Gemma 3 (text)", {}};
  a.traits.rope_style = RopeStyle::Neox;
  a.traits.ffn_activation = FfnActivation::GeluTanh;
  a.traits.has_qk_norm = true;
  a.traits.has_post_norms = true;
  a.embd_scale_sqrt = true;
  a.local_rope_base = true;
  a.swa_pattern = 6;  // 5 local layers, then 1 global (llama.cpp's fixed pattern)
  a.ties_output = true;
  a.default_rms_eps = 1e-6f, a.default_rope_base = 1000000.0f;
  // Some conversions leave the template out (the Gemma 3 GGUFs on PyPI do); the format its
  // instruction-tuned models were trained on.
  a.builtin_chat_template = "gemma";
  return a;
}

constexpr ArchInfo phi3() {
  ArchInfo a{Arch::Phi3, "phi3", "Phi-3, Phi-3.5, Phi-4-mini", {}};
  a.traits.rope_style = RopeStyle::Neox;
  a.traits.fused_qkv = true;
  a.traits.fused_gate_up = true;
  // phi3 files carry a window, but llama.cpp ignores it (its converters wrote wrong values), and
  // so does Strata, so that both give the same logits for the same file.
  a.reads_sliding_window = false;
  a.longrope = true;
  return a;
}

constexpr ArchInfo qwen2moe() {
  ArchInfo a{Arch::Qwen2Moe, "qwen2moe", "Qwen1.5-MoE, Qwen2-MoE", {}};
  a.traits.rope_style = RopeStyle::Neox;
  a.traits.has_qkv_bias = true;
  a.traits.has_shexp_gate = true;
  a.traits.expert_weights_norm = false;  // llama.cpp keeps the softmax weights of the top k
  a.experts = Experts::Required;
  a.expert_ff_key = true;
  a.shared_expert = true;
  a.default_rms_eps = 1e-6f, a.default_rope_base = 1000000.0f;
  return a;
}

constexpr ArchInfo qwen3moe() {
  ArchInfo a{Arch::Qwen3Moe, "qwen3moe", "Qwen3-MoE (30B-A3B, 235B-A22B)", {}};
  a.traits.rope_style = RopeStyle::Neox;
  a.traits.has_qk_norm = true;
  a.traits.expert_weights_norm = true;
  a.experts = Experts::Required;
  a.expert_ff_key = true;
  a.default_rms_eps = 1e-6f, a.default_rope_base = 1000000.0f;
  return a;
}

constexpr ArchInfo mistral3() {
  ArchInfo a{Arch::Mistral3, "mistral3", "Mistral Small 3.1/3.2, Ministral 3, Devstral (text)", {}};
  a.traits.rope_style = RopeStyle::Interleaved;
  a.traits.expert_weights_norm = true;
  a.experts = Experts::Optional;
  a.reads_sliding_window = false;  // as llama
  a.default_rope_base = 1000000000.0f;
  return a;
}

constexpr ArchInfo smollm3() {
  ArchInfo a{Arch::Smollm3, "smollm3", "SmolLM3", {}};
  a.traits.rope_style = RopeStyle::Interleaved;
  a.no_rope_layer_step = 4;
  a.reads_sliding_window = false;  // as llama  // llama.cpp's fixed n_no_rope_layer_step (the HF config's no_rope_layer_interval)
  a.default_rms_eps = 1e-6f, a.default_rope_base = 5000000.0f;
  return a;
}

constexpr ArchInfo granite() {
  ArchInfo a{Arch::Granite, "granite", "IBM Granite 3.x (dense)", {}};
  a.traits.rope_style = RopeStyle::Interleaved;
  a.granite_scales = true;
  a.reads_sliding_window = false;
  return a;
}

constexpr ArchInfo granitemoe() {
  ArchInfo a{Arch::GraniteMoe, "granitemoe", "IBM Granite 3.x MoE", {}};
  a.traits.rope_style = RopeStyle::Interleaved;
  a.traits.expert_weights_norm = true;  // softmax over the top-k logits
  a.experts = Experts::Required;
  a.expert_ff_key = true;
  a.granite_scales = true;
  a.reads_sliding_window = false;
  return a;
}

constexpr ArchInfo gemma2() {
  ArchInfo a{Arch::Gemma2, "gemma2", "Gemma 2", {}};
  a.traits.rope_style = RopeStyle::Neox;
  a.traits.ffn_activation = FfnActivation::GeluTanh;
  a.traits.has_post_norms = true;
  a.embd_scale_sqrt = true;
  a.swa_pattern = 2;  // local, global, local, ... (llama.cpp's fixed pattern)
  a.softcaps = true;
  a.ties_output = true;
  a.default_rms_eps = 1e-6f;
  a.builtin_chat_template = "gemma";
  return a;
}

// GLM-4-0414 (llama.cpp's glm4 graph): RMS pre-norms and post-norms around attention and the FFN,
// Q/K/V with biases, RoPE of the interleaved (NORM) kind on rope.dimension_count dimensions (half a
// head in the published models), SwiGLU with gate and up in one ffn_up (gate rows first).
constexpr ArchInfo glm4() {
  ArchInfo a{Arch::Glm4, "glm4", "GLM-4-0414 (9B, 32B), GLM-Z1", {}};
  a.traits.rope_style = RopeStyle::Interleaved;
  a.traits.has_qkv_bias = true;
  a.traits.has_post_norms = true;
  a.traits.fused_gate_up = true;
  a.reads_sliding_window = false;  // llama.cpp's glm4 graph attends over the whole context
  return a;
}

// OLMo 2 and Olmo 3 (llama.cpp's olmo2 graph): no input norms, RMS norms of the whole Q row and
// the whole K row (one weight per element, not per head), NeoX RoPE, post-norms after attention and
// the SwiGLU FFN. With attention.sliding_window (Olmo 3), layers 3, 7, 11, ... are global and the
// others local, and the local layers keep a plain RoPE: rope.freq_base_swa (default: rope.freq_base),
// no YaRN, no attention factor.
constexpr ArchInfo olmo2() {
  ArchInfo a{Arch::Olmo2, "olmo2", "OLMo 2 (1B-32B), Olmo 3 (its sliding window)", {}};
  a.traits.rope_style = RopeStyle::Neox;
  a.traits.has_qk_norm = true;
  a.traits.qk_norm_full = true;
  a.traits.no_pre_norms = true;
  a.traits.has_post_norms = true;
  a.swa_pattern = 4;  // when the file has a window and no pattern (llama.cpp's default period)
  a.local_rope_base = true;
  a.local_base_is_global = true;
  a.local_rope_plain = true;
  a.default_rms_eps = 1e-6f, a.default_rope_base = 500000.0f;
  return a;
}

// gpt-oss (llama.cpp's openai-moe graph): RMS pre-norms (the FFN's stored as post_attention_norm),
// Q/K/V and output biases, NeoX RoPE with YaRN on every layer, a sink logit per head, layers 0, 2, 4,
// ... local (llama.cpp's fixed period 2; their RoPE the model's), routed experts in every layer
// with router and expert biases, the top k of the router's logits softmaxed, and the clamped
// SwiGLU (alpha 1.702, limit 7). The experts are MXFP4 in the published files.
constexpr ArchInfo gpt_oss() {
  ArchInfo a{Arch::GptOss, "gpt-oss", "gpt-oss (20B, 120B)", {}};
  a.traits.rope_style = RopeStyle::Neox;
  a.traits.ffn_activation = FfnActivation::SwigluOai;
  a.traits.has_qkv_bias = true;
  a.traits.has_out_bias = true;
  a.traits.has_attn_sinks = true;
  a.traits.has_moe_biases = true;
  a.traits.expert_gating = ExpertGating::SoftmaxTopK;
  a.traits.ffn_norm_post_attention = true;
  a.experts = Experts::Required;
  a.expert_ff_key = true;
  a.swa_pattern = 2;  // local, global, local, ... (llama.cpp's fixed pattern)
  a.default_rope_base = 150000.0f;
  return a;
}

// StarCoder2 (llama.cpp's starcoder2 graph): LayerNorm with weight and bias before attention, before
// the FFN and at the head (attention.layer_norm_epsilon), Q/K/V and output biases, NeoX RoPE, a
// plain GELU (tanh) FFN up -> gelu -> down with biases on both. The window some configs carry is
// ignored, as llama.cpp's graph has none.
constexpr ArchInfo starcoder2() {
  ArchInfo a{Arch::Starcoder2, "starcoder2", "StarCoder2 (3B, 7B, 15B)", {}};
  a.traits.rope_style = RopeStyle::Neox;
  a.traits.ffn_activation = FfnActivation::GeluTanh;
  a.traits.has_qkv_bias = true;
  a.traits.has_out_bias = true;
  a.traits.layer_norm = true;
  a.traits.has_norm_bias = true;
  a.traits.ungated_ffn = true;
  a.traits.has_ffn_bias = true;
  a.reads_sliding_window = false;
  a.default_rope_base = 100000.0f;
  return a;
}

// Command R7B (llama.cpp's cohere2 graph): a LayerNorm without bias (attention.layer_norm_epsilon)
// whose output both attention and the SwiGLU FFN read, their updates added to the residual
// together; interleaved RoPE on the local layers (window attention.sliding_window, required; 3 of
// every 4 layers, llama.cpp's default pattern), none on the global ones; logits times logit_scale;
// the token embedding is the head.
constexpr ArchInfo cohere2() {
  ArchInfo a{Arch::Cohere2, "cohere2", "Command R7B (Cohere2)", {}};
  a.traits.rope_style = RopeStyle::Interleaved;
  a.traits.layer_norm = true;
  a.traits.parallel_block = true;
  a.swa_pattern = 4;
  a.global_layers_nope = true;
  a.logit_scale_multiplies = true;
  a.output_is_embedding = true;
  a.ties_output = true;
  a.default_rope_base = 50000.0f;
  return a;
}

// DeepSeek V2/V3 (llama.cpp's deepseek2 graph, MLA form: attn_k_b / attn_v_b): RMS pre-norms;
// queries through q_a -> RMS norm -> q_b (V2-Lite: one attn_q); the latent and the shared RoPE key
// from attn_kv_a_mqa, the latent RMS-normalised; interleaved RoPE on the rope dims only; each
// head's query absorbed into the latent space through its k_b, attention over the latent cache,
// each head's output through its v_b; the first leading_dense_block_count layers a SwiGLU FFN,
// the others routed experts (softmax or sigmoid gating, the exp_probs_b selection bias, expert
// groups, renormalised and scaled weights) plus the shared experts. YaRN as DeepSeek defines it:
// the attention factor squared in the query scale instead of in cos/sin.
constexpr ArchInfo deepseek2() {
  ArchInfo a{Arch::Deepseek2, "deepseek2", "DeepSeek V2, V2-Lite, V3, R1, Kimi K2 (MLA)", {}};
  a.traits.rope_style = RopeStyle::Interleaved;
  a.traits.mla = true;
  a.experts = Experts::Required;
  a.deepseek_moe = true;
  a.expert_ff_key = true;
  a.shared_expert = true;
  a.reads_sliding_window = false;
  a.default_rms_eps = 1e-6f;
  return a;
}

// In Arch order, so that arch_info(Arch) indexes it.
constexpr ArchInfo kArchs[] = {llama(),    qwen2(),  qwen3(),      gemma3(),     phi3(),    qwen2moe(),
                               qwen3moe(), mistral3(), smollm3(),  granite(),    granitemoe(), gemma2(),
                               glm4(),     olmo2(),  gpt_oss(),    starcoder2(), cohere2(),   deepseek2()};
constexpr bool archs_in_enum_order() {
  for (size_t i = 0; i < sizeof(kArchs) / sizeof(kArchs[0]); ++i)
    if (static_cast<size_t>(kArchs[i].arch) != i) return false;
  return true;
}
static_assert(archs_in_enum_order(), "kArchs must list the Arch values in enum order (arch_info indexes it)");

constexpr HParamInfo kHParams[] = {
    {HParam::ContextLength, "context_length", "context the model was trained with (default 2048)"},
    {HParam::EmbeddingLength, "embedding_length", "hidden size n_embd"},
    {HParam::BlockCount, "block_count", "blocks n_layers"},
    {HParam::FeedForwardLength, "feed_forward_length", "gated FFN units n_ff"},
    {HParam::HeadCount, "attention.head_count", "query heads"},
    {HParam::HeadCountKv, "attention.head_count_kv", "key/value heads (default: head_count)"},
    {HParam::KeyLength, "attention.key_length", "head size (default n_embd / head_count)"},
    {HParam::ValueLength, "attention.value_length", "value head size (must equal key_length)"},
    {HParam::RopeDimensionCount, "rope.dimension_count", "rotated dimensions of a head (default: all)"},
    {HParam::RmsEpsilon, "attention.layer_norm_rms_epsilon", "RMS norm epsilon (default 1e-5)"},
    {HParam::RopeFreqBase, "rope.freq_base", "RoPE base (default 10000)"},
    {HParam::RopeScalingType, "rope.scaling.type", "none, linear, yarn (longrope/su where the row says)"},
    {HParam::RopeScalingFactor, "rope.scaling.factor", "linear, yarn: positions divided by it"},
    {HParam::RopeScalingOrigCtx, "rope.scaling.original_context_length", "longrope: where the long factors start; yarn: the trained context (default context_length)"},
    {HParam::RopeScalingAttnFactor, "rope.scaling.attn_factor", "longrope, yarn: cos/sin multiplier"},
    {HParam::RopeScalingYarnExtFactor, "rope.scaling.yarn_ext_factor", "yarn: extrapolation mix (default 1)"},
    {HParam::RopeScalingYarnBetaFast, "rope.scaling.yarn_beta_fast", "yarn: rotations where the ramp starts (default 32)"},
    {HParam::RopeScalingYarnBetaSlow, "rope.scaling.yarn_beta_slow", "yarn: rotations where it ends (default 1)"},
    {HParam::AttentionTemperatureScale, "attention.temperature_scale", "llama4-style query temperature: refused when not 0"},
    {HParam::AttentionScale, "attention.scale", "query scale (default 1/sqrt(head size))"},
    {HParam::SlidingWindow, "attention.sliding_window", "window of the local layers, in positions"},
    {HParam::SlidingWindowPattern, "attention.sliding_window_pattern",
     "P: layer i global when (i + 1) % P == 0; or one flag per layer"},
    {HParam::RopeFreqBaseSwa, "rope.freq_base_swa", "RoPE base of the local layers (default 10000)"},
    {HParam::ExpertCount, "expert_count", "routed experts per block (0: dense)"},
    {HParam::ExpertUsedCount, "expert_used_count", "experts per token (top-k)"},
    {HParam::ExpertFeedForwardLength, "expert_feed_forward_length", "one expert's units"},
    {HParam::ExpertSharedFeedForwardLength, "expert_shared_feed_forward_length", "the shared expert's units"},
    {HParam::VocabSize, "vocab_size", "written by make-model; the reader counts token_embd rows"},
    {HParam::AttnLogitSoftcapping, "attn_logit_softcapping", "gemma2: attention scores s -> c tanh(s / c) (default 50)"},
    {HParam::FinalLogitSoftcapping, "final_logit_softcapping", "gemma2: logits z -> c tanh(z / c) (default 30)"},
    {HParam::EmbeddingScale, "embedding_scale", "granite: the token embedding times this (default 1)"},
    {HParam::ResidualScale, "residual_scale", "granite: each attention / FFN update times this before the add (default 1)"},
    {HParam::LogitScale, "logit_scale", "granite: logits divided by this; cohere2: multiplied (default 1)"},
    {HParam::LayerNormEpsilon, "attention.layer_norm_epsilon", "LayerNorm epsilon, where the norms are LayerNorms (default 1e-5)"},
    {HParam::QLoraRank, "attention.q_lora_rank", "deepseek2: rank of the queries' q_a/q_b pair (0 or absent: one attn_q)"},
    {HParam::KvLoraRank, "attention.kv_lora_rank", "deepseek2: size of the compressed KV latent"},
    {HParam::KeyLengthMla, "attention.key_length_mla", "deepseek2: a query head's size (RoPE-free part plus rope dims)"},
    {HParam::ValueLengthMla, "attention.value_length_mla", "deepseek2: a head's output size"},
    {HParam::LeadingDenseBlockCount, "leading_dense_block_count", "deepseek2: the first blocks with a dense FFN (default 0)"},
    {HParam::ExpertSharedCount, "expert_shared_count", "deepseek2: shared experts (their units: this x expert_feed_forward_length)"},
    {HParam::ExpertWeightsScale, "expert_weights_scale", "deepseek2: the routed weights times this (default 1)"},
    {HParam::ExpertWeightsNorm, "expert_weights_norm", "deepseek2: the top-k weights renormalised to sum 1 (default false)"},
    {HParam::ExpertGatingFunc, "expert_gating_func", "deepseek2: 1 softmax, 2 sigmoid (default softmax)"},
    {HParam::ExpertGroupCount, "expert_group_count", "deepseek2: groups of experts (0 or 1: none)"},
    {HParam::ExpertGroupUsedCount, "expert_group_used_count", "deepseek2: groups a token's experts come from"},
    {HParam::RopeScalingYarnLogMultiplier, "rope.scaling.yarn_log_multiplier", "deepseek2: 0.1 x mscale_all_dim of YaRN's attention factor (default 0)"},
};
// hparam_key indexes the table by the enum: a row out of order would spell another key.
constexpr bool hparams_in_enum_order() {
  for (size_t i = 0; i < sizeof(kHParams) / sizeof(kHParams[0]); ++i)
    if (static_cast<size_t>(kHParams[i].param) != i) return false;
  return true;
}
static_assert(hparams_in_enum_order(), "kHParams must list the HParam values in enum order");


using L = LayerWeights;
using D = Dim;
using K = TensorKind;
// clang-format off
const LayerTensor kLayerTensors[] = {
  // name                         view                   part           kind         cols        rows       mats       cut              need               required_by        fuse          fill           quant            role
  {"attn_norm.weight",           &L::attn_norm,          Part::Attention, K::Norm,    D::Embd,    D::None,   D::None,   Cut::Whole,      Need::Always,       Trait::PreNorms,   Fuse::None,   Fill::Ones,    Quant::F32,      "attention input norm"},
  {"attn_norm.bias",             &L::attn_norm_b,        Part::Attention, K::Norm,    D::Embd,    D::None,   D::None,   Cut::Whole,      Need::Always,       Trait::NormBias,   Fuse::None,   Fill::Random,  Quant::F32,      "attention input norm's bias (LayerNorm)"},
  {"attn_q_a_norm.weight",       &L::q_a_norm,           Part::Attention, K::Norm,    D::QLora,   D::None,   D::None,   Cut::Whole,      Need::QLoraPair,    Trait::None,       Fuse::None,   Fill::NearOne, Quant::F32,      "MLA: norm of the queries' low-rank code"},
  {"attn_kv_a_norm.weight",      &L::kv_a_norm,          Part::Attention, K::Norm,    D::KvLora,  D::None,   D::None,   Cut::Whole,      Need::Mla,          Trait::None,       Fuse::None,   Fill::NearOne, Quant::F32,      "MLA: norm of the KV latent"},
  {"attn_q.weight",              &L::wq,                 Part::Attention, K::Matrix,  D::Embd,    D::QProj,  D::None,   Cut::QRows,      Need::QPlain,       Trait::None,       Fuse::Qkv,    Fill::Random,  Quant::Base,     "query projection"},
  {"attn_k.weight",              &L::wk,                 Part::Attention, K::Matrix,  D::Embd,    D::KvDim,  D::None,   Cut::KvRows,     Need::KvPlain,      Trait::None,       Fuse::Qkv,    Fill::Random,  Quant::Base,     "key projection"},
  {"attn_v.weight",              &L::wv,                 Part::Attention, K::Matrix,  D::Embd,    D::KvDim,  D::None,   Cut::KvRows,     Need::KvPlain,      Trait::None,       Fuse::Qkv,    Fill::Random,  Quant::MoreBits, "value projection"},
  {"attn_q_a.weight",            &L::wq_a,               Part::Attention, K::Matrix,  D::Embd,    D::QLora,  D::None,   Cut::Whole,      Need::QLoraPair,    Trait::None,       Fuse::None,   Fill::Random,  Quant::Base,     "MLA: the queries' down-projection"},
  {"attn_q_b.weight",            &L::wq_b,               Part::Attention, K::Matrix,  D::QLora,   D::QProj,  D::None,   Cut::Whole,      Need::QLoraPair,    Trait::None,       Fuse::None,   Fill::Random,  Quant::Base,     "MLA: the queries' up-projection"},
  {"attn_kv_a_mqa.weight",       &L::wkv_a,              Part::Attention, K::Matrix,  D::Embd,    D::KvA,    D::None,   Cut::Whole,      Need::Mla,          Trait::None,       Fuse::None,   Fill::Random,  Quant::Base,     "MLA: the KV latent and the shared RoPE key"},
  {"attn_k_b.weight",            &L::wk_b,               Part::Attention, K::Experts, D::HeadNope, D::KvLora, D::Heads,  Cut::Whole,      Need::Mla,          Trait::None,       Fuse::None,   Fill::Random,  Quant::Base,     "MLA: each head's key up-projection"},
  {"attn_v_b.weight",            &L::wv_b,               Part::Attention, K::Experts, D::KvLora,  D::HeadV,  D::Heads,  Cut::Whole,      Need::Mla,          Trait::None,       Fuse::None,   Fill::Random,  Quant::MoreBits, "MLA: each head's value up-projection"},
  {"attn_q_norm.weight",         &L::q_norm,             Part::Attention, K::Norm,    D::QNorm,   D::None,   D::None,   Cut::Whole,      Need::Always,       Trait::QkNorm,     Fuse::None,   Fill::NearOne, Quant::F32,      "query norm (per head, or of the whole row)"},
  {"attn_k_norm.weight",         &L::k_norm,             Part::Attention, K::Norm,    D::KNorm,   D::None,   D::None,   Cut::Whole,      Need::Always,       Trait::QkNorm,     Fuse::None,   Fill::NearOne, Quant::F32,      "key norm (per head, or of the whole row)"},
  {"post_attention_norm.weight", &L::post_attn_norm,     Part::Attention, K::Norm,    D::Embd,    D::None,   D::None,   Cut::Whole,      Need::Always,       Trait::PostNorms,  Fuse::None,   Fill::NearOne, Quant::F32,      "attention output norm"},
  {"post_ffw_norm.weight",       &L::post_ffn_norm,      Part::Ffn,       K::Norm,    D::Embd,    D::None,   D::None,   Cut::Whole,      Need::Always,       Trait::PostNorms,  Fuse::None,   Fill::NearOne, Quant::F32,      "FFN output norm"},
  {"attn_q.bias",                &L::bq,                 Part::Attention, K::Bias,    D::QDim,    D::None,   D::None,   Cut::QElems,     Need::Always,       Trait::QkvBias,    Fuse::None,   Fill::Random,  Quant::F32,      "query bias"},
  {"attn_k.bias",                &L::bk,                 Part::Attention, K::Bias,    D::KvDim,   D::None,   D::None,   Cut::KvElems,    Need::Always,       Trait::QkvBias,    Fuse::None,   Fill::Random,  Quant::F32,      "key bias"},
  {"attn_v.bias",                &L::bv,                 Part::Attention, K::Bias,    D::KvDim,   D::None,   D::None,   Cut::KvElems,    Need::Always,       Trait::QkvBias,    Fuse::None,   Fill::Random,  Quant::F32,      "value bias"},
  {"attn_output.weight",         &L::wo,                 Part::Attention, K::Matrix,  D::AttnOut, D::Embd,   D::None,   Cut::QCols,      Need::Always,       Trait::None,       Fuse::None,   Fill::Random,  Quant::Base,     "attention output projection"},
  {"attn_output.bias",           &L::bo,                 Part::Attention, K::Bias,    D::Embd,    D::None,   D::None,   Cut::FirstShard, Need::Always,       Trait::OutBias,    Fuse::None,   Fill::Random,  Quant::F32,      "attention output bias"},
  {"attn_sinks.weight",          &L::attn_sinks,         Part::Attention, K::Bias,    D::Heads,   D::None,   D::None,   Cut::QHeads,     Need::Always,       Trait::Sinks,      Fuse::None,   Fill::Random,  Quant::F32,      "attention sink logit per head"},
  {"ffn_norm.weight",            &L::ffn_norm,           Part::Ffn,       K::Norm,    D::Embd,    D::None,   D::None,   Cut::Whole,      Need::Always,       Trait::PreNorms,   Fuse::None,   Fill::Ones,    Quant::F32,      "FFN input norm"},
  {"ffn_norm.bias",              &L::ffn_norm_b,         Part::Ffn,       K::Norm,    D::Embd,    D::None,   D::None,   Cut::Whole,      Need::Always,       Trait::NormBias,   Fuse::None,   Fill::Random,  Quant::F32,      "FFN input norm's bias (LayerNorm)"},
  {"ffn_gate_inp.weight",        &L::ffn_gate_inp,       Part::Ffn,       K::Matrix,  D::Embd,    D::Expert, D::None,   Cut::Whole,      Need::Moe,          Trait::None,       Fuse::None,   Fill::Random,  Quant::F32,      "router"},
  {"ffn_gate_inp.bias",          &L::ffn_gate_inp_b,     Part::Ffn,       K::Bias,    D::Expert,  D::None,   D::None,   Cut::Whole,      Need::Moe,          Trait::MoeBiases,  Fuse::None,   Fill::Random,  Quant::F32,      "router bias"},
  {"exp_probs_b.bias",           &L::exp_probs_b,        Part::Ffn,       K::Bias,    D::Expert,  D::None,   D::None,   Cut::Whole,      Need::Moe,          Trait::Optional,   Fuse::None,   Fill::Random,  Quant::F32,      "expert selection bias (DeepSeek V3)"},
  {"ffn_gate_exps.weight",       &L::ffn_gate_exps,      Part::Experts,   K::Experts, D::Embd,    D::FfExp,  D::Expert, Cut::ExpertRange, Need::Moe,         Trait::None,       Fuse::None,   Fill::Random,  Quant::Base,     "routed experts' gates"},
  {"ffn_up_exps.weight",         &L::ffn_up_exps,        Part::Experts,   K::Experts, D::Embd,    D::FfExp,  D::Expert, Cut::ExpertRange, Need::Moe,         Trait::None,       Fuse::None,   Fill::Random,  Quant::Base,     "routed experts' ups"},
  {"ffn_down_exps.weight",       &L::ffn_down_exps,      Part::Experts,   K::Experts, D::FfExp,   D::Embd,   D::Expert, Cut::ExpertRange, Need::Moe,         Trait::None,       Fuse::None,   Fill::Random,  Quant::MoreBits, "routed experts' downs"},
  {"ffn_gate_exps.bias",         &L::ffn_gate_exps_b,    Part::Experts,   K::ExpertBias, D::FfExp, D::One,   D::Expert, Cut::ExpertRange, Need::Moe,         Trait::MoeBiases,  Fuse::None,   Fill::Random,  Quant::F32,      "routed experts' gate biases"},
  {"ffn_up_exps.bias",           &L::ffn_up_exps_b,      Part::Experts,   K::ExpertBias, D::FfExp, D::One,   D::Expert, Cut::ExpertRange, Need::Moe,         Trait::MoeBiases,  Fuse::None,   Fill::Random,  Quant::F32,      "routed experts' up biases"},
  {"ffn_down_exps.bias",         &L::ffn_down_exps_b,    Part::Experts,   K::ExpertBias, D::Embd,  D::One,   D::Expert, Cut::ExpertRange, Need::Moe,         Trait::MoeBiases,  Fuse::None,   Fill::Random,  Quant::F32,      "routed experts' down biases"},
  {"ffn_gate_inp_shexp.weight",  &L::ffn_gate_inp_shexp, Part::Ffn,       K::Bias,    D::Embd,    D::None,   D::None,   Cut::Whole,      Need::SharedExpert, Trait::ShexpGate,  Fuse::None,   Fill::Random,  Quant::F32,      "shared expert's sigmoid gate"},
  {"ffn_gate_shexp.weight",      &L::ffn_gate_shexp,     Part::Ffn,       K::Matrix,  D::Embd,    D::FfShexp, D::None,  Cut::Whole,      Need::SharedExpert, Trait::None,       Fuse::None,   Fill::Random,  Quant::Base,     "shared expert's gate"},
  {"ffn_up_shexp.weight",        &L::ffn_up_shexp,       Part::Ffn,       K::Matrix,  D::Embd,    D::FfShexp, D::None,  Cut::Whole,      Need::SharedExpert, Trait::None,       Fuse::None,   Fill::Random,  Quant::Base,     "shared expert's up"},
  {"ffn_down_shexp.weight",      &L::ffn_down_shexp,     Part::Ffn,       K::Matrix,  D::FfShexp, D::Embd,   D::None,   Cut::Whole,      Need::SharedExpert, Trait::None,       Fuse::None,   Fill::Random,  Quant::MoreBits, "shared expert's down"},
  {"ffn_gate.weight",            &L::w_gate,             Part::Ffn,       K::Matrix,  D::Embd,    D::Ff,     D::None,   Cut::FfRows,     Need::Dense,        Trait::Gated,      Fuse::GateUp, Fill::Random,  Quant::Base,     "FFN gate"},
  {"ffn_up.weight",              &L::w_up,               Part::Ffn,       K::Matrix,  D::Embd,    D::Ff,     D::None,   Cut::FfRows,     Need::Dense,        Trait::None,       Fuse::GateUp, Fill::Random,  Quant::Base,     "FFN up"},
  {"ffn_down.weight",            &L::w_down,             Part::Ffn,       K::Matrix,  D::Ff,      D::Embd,   D::None,   Cut::FfCols,     Need::Dense,        Trait::None,       Fuse::None,   Fill::Random,  Quant::MoreBits, "FFN down"},
  {"ffn_up.bias",                &L::b_up,               Part::Ffn,       K::Bias,    D::Ff,      D::None,   D::None,   Cut::FfElems,    Need::Dense,        Trait::FfnBias,    Fuse::None,   Fill::Random,  Quant::F32,      "FFN up bias"},
  {"ffn_down.bias",              &L::b_down,             Part::Ffn,       K::Bias,    D::Embd,    D::None,   D::None,   Cut::FirstShard, Need::Dense,        Trait::FfnBias,    Fuse::None,   Fill::Random,  Quant::F32,      "FFN down bias"},
};
// clang-format on

const FusedTensor kFused[] = {
    {Fuse::Qkv, "attn_qkv.weight"},  // Q, K, V rows (phi3)
    {Fuse::GateUp, "ffn_up.weight"},  // gate rows, then up rows (phi3)
};

}  // namespace

std::span<const ArchInfo> arch_table() { return kArchs; }

const ArchInfo* find_arch(const std::string& name) {
  for (const ArchInfo& a : kArchs)
    if (name == a.name) return &a;
  return nullptr;
}

const ArchInfo& arch_info(Arch arch) { return kArchs[static_cast<size_t>(arch)]; }

const char* arch_name(Arch arch) {
  const auto i = static_cast<size_t>(arch);
  return i < std::size(kArchs) ? kArchs[i].name : "?";
}

std::string arch_names() {
  return arch_names([](const ArchInfo&) { return true; });
}

std::string arch_names(bool (*keep)(const ArchInfo&)) {
  std::string out;
  for (const ArchInfo& a : kArchs)
    if (keep(a)) out += (out.empty() ? "" : ", ") + std::string(a.name);
  return out;
}

std::span<const HParamInfo> hparam_table() { return kHParams; }

std::string hparam_key(const std::string& arch, HParam param) {
  return arch + "." + kHParams[static_cast<size_t>(param)].suffix;
}

int64_t dim_size(Dim dim, const ModelConfig& c) {
  switch (dim) {
    case Dim::None: return 0;
    case Dim::Embd: return c.n_embd;
    case Dim::QDim: return c.q_dim();
    case Dim::KvDim: return c.kv_dim();
    case Dim::HeadDim: return c.head_dim;
    case Dim::QNorm: return c.qk_norm_full ? c.q_dim() : c.head_dim;
    case Dim::KNorm: return c.qk_norm_full ? c.kv_dim() : c.head_dim;
    case Dim::Ff: return c.n_ff;
    case Dim::FfExp: return c.n_ff_exp;
    case Dim::FfShexp: return c.n_ff_shexp;
    case Dim::Expert: return c.n_expert;
    case Dim::One: return 1;
    case Dim::Heads: return c.n_heads;
    case Dim::QProj: return c.mla ? c.n_heads * c.head_dim_k_mla : c.q_dim();
    case Dim::AttnOut: return c.mla ? c.n_heads * c.head_dim_v_mla : c.q_dim();
    case Dim::QLora: return c.q_lora_rank;
    case Dim::KvLora: return c.kv_lora_rank;
    case Dim::KvA: return c.kv_lora_rank + c.rope_dims;
    case Dim::HeadNope: return c.head_dim_k_mla - c.rope_dims;
    case Dim::HeadV: return c.head_dim_v_mla;
  }
  return 0;
}

const char* dim_name(Dim dim) {
  switch (dim) {
    case Dim::None: return "";
    case Dim::Embd: return "n_embd";
    case Dim::QDim: return "q_dim";
    case Dim::KvDim: return "kv_dim";
    case Dim::HeadDim: return "head_dim";
    case Dim::QNorm: return "head_dim or q_dim";
    case Dim::KNorm: return "head_dim or kv_dim";
    case Dim::Ff: return "n_ff";
    case Dim::FfExp: return "n_ff_exp";
    case Dim::FfShexp: return "n_ff_shexp";
    case Dim::Expert: return "n_expert";
    case Dim::One: return "1";
    case Dim::Heads: return "n_heads";
    case Dim::QProj: return "q_dim (MLA: n_heads x key_length_mla)";
    case Dim::AttnOut: return "q_dim (MLA: n_heads x value_length_mla)";
    case Dim::QLora: return "q_lora_rank";
    case Dim::KvLora: return "kv_lora_rank";
    case Dim::KvA: return "kv_lora_rank + rope_dims";
    case Dim::HeadNope: return "key_length_mla - rope_dims";
    case Dim::HeadV: return "value_length_mla";
  }
  return "?";
}

const char* part_name(Part part) {
  switch (part) {
    case Part::Attention: return "attention";
    case Part::Ffn: return "ffn";
    case Part::Experts: return "experts";
  }
  return "?";
}

std::span<const LayerTensor> layer_tensors() { return kLayerTensors; }
std::span<const FusedTensor> fused_tensors() { return kFused; }

const FusedTensor& fused_tensor(Fuse fuse) {
  for (const FusedTensor& f : kFused)
    if (f.fuse == fuse) return f;
  return kFused[0];  // unreachable for the Fuse values the layer table uses
}

bool tensor_needed(const LayerTensor& t, const ModelConfig& c, int64_t layer) {
  // gpt-oss: the file's post_attention_norm.weight is the FFN input norm (tensor_name), not this row.
  if (c.ffn_norm_post_attention && t.view == &LayerWeights::post_attn_norm) return false;
  // A parallel block (cohere2) has one norm, the attention's, for both halves.
  if (c.parallel_block && (t.view == &LayerWeights::ffn_norm || t.view == &LayerWeights::ffn_norm_b)) return false;
  // The selection bias is DeepSeek's (llama.cpp reads it for deepseek2 only).
  if (t.view == &LayerWeights::exp_probs_b && !c.info().deepseek_moe) return false;
  switch (t.need) {
    case Need::Always: return true;
    case Need::Dense: return !c.layer_is_moe(layer);
    case Need::Moe: return c.layer_is_moe(layer);
    case Need::SharedExpert: return c.n_ff_shexp > 0 && c.layer_is_moe(layer);
    case Need::QPlain: return !c.mla || c.q_lora_rank == 0;
    case Need::KvPlain: return !c.mla;
    case Need::QLoraPair: return c.mla && c.q_lora_rank > 0;
    case Need::Mla: return c.mla;
  }
  return false;
}

bool tensor_required(const LayerTensor& t, const ArchTraits& a) {
  switch (t.required_by) {
    case Trait::None: return true;
    case Trait::QkvBias: return a.has_qkv_bias;
    case Trait::QkNorm: return a.has_qk_norm;
    case Trait::PostNorms: return a.has_post_norms;
    case Trait::ShexpGate: return a.has_shexp_gate;
    case Trait::PreNorms: return !a.no_pre_norms;
    case Trait::Sinks: return a.has_attn_sinks;
    case Trait::OutBias: return a.has_out_bias;
    case Trait::MoeBiases: return a.has_moe_biases;
    case Trait::NormBias: return a.has_norm_bias;
    case Trait::FfnBias: return a.has_ffn_bias;
    case Trait::Gated: return !a.ungated_ffn;
    case Trait::Optional: return false;
  }
  return true;
}

const char* tensor_name(const LayerTensor& t, const ArchTraits& a) {
  if (a.ffn_norm_post_attention && t.view == &LayerWeights::ffn_norm) return "post_attention_norm.weight";
  return t.name;
}

bool tensor_fused(const LayerTensor& t, const ArchTraits& a) {
  return (t.fuse == Fuse::Qkv && a.fused_qkv) || (t.fuse == Fuse::GateUp && a.fused_gate_up);
}

}  // namespace strata::model
