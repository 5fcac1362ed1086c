// engine/model/arch_doc.cpp — Markdown tables from arch_table.h and the kernels' type traits.
#include "engine/model/arch_doc.h"

#include "engine/model/arch_table.h"
#include "kernels/cpu/dtype.h"

namespace strata::model {
namespace {

const char* yes(bool b) { return b ? "yes" : ""; }

std::string experts_text(const ArchInfo& a) {
  switch (a.experts) {
    case Experts::None: return "";
    case Experts::Optional: return "when expert_count > 0";
    case Experts::Required:
      return a.deepseek_moe ? "after the leading dense blocks, + shared experts"
                            : a.shared_expert ? "always, + shared expert" : "always";
  }
  return "";
}

std::string ordinal(int64_t n) {
  const int64_t r = n % 10;
  const char* suffix = (n % 100 >= 11 && n % 100 <= 13) ? "th" : r == 1 ? "st" : r == 2 ? "nd" : r == 3 ? "rd" : "th";
  return std::to_string(n) + suffix;
}

// What the other columns do not show: soft-caps, granite's scales.
std::string extras_text(const ArchInfo& a) {
  std::string s;
  const auto add = [&s](bool on, const char* text) {
    if (on) s += std::string(s.empty() ? "" : "; ") + text;
  };
  const ArchTraits& t = a.traits;
  add(a.softcaps, "attention and logit soft-caps");
  add(a.granite_scales, "embedding, residual and logit scales");
  add(a.embd_scale_sqrt, "embedding x sqrt(n_embd)");
  add(t.no_pre_norms, "no input norms");
  add(t.layer_norm, t.has_norm_bias ? "LayerNorm with biases" : "LayerNorm");
  add(t.parallel_block, "attention and FFN in parallel from one norm");
  add(a.logit_scale_multiplies, "logits times logit_scale");
  add(a.output_is_embedding, "the embedding is the head");
  add(t.ungated_ffn, "no FFN gate");
  add(t.has_ffn_bias, "FFN biases");
  add(t.has_out_bias, "output bias");
  add(t.has_attn_sinks, "attention sinks");
  add(t.has_moe_biases, "router and expert biases");
  add(t.expert_gating == ExpertGating::SoftmaxTopK, "softmax over the top-k logits");
  add(t.ffn_norm_post_attention, "FFN norm stored as `post_attention_norm`");
  add(t.mla, "multi-head latent attention: a KV cache of the latent and one RoPE key per position");
  add(a.deepseek_moe, "leading dense blocks; softmax or sigmoid gating, selection bias, expert groups, weight scale");
  return s;
}

const char* ffn_text(const ArchTraits& t) {
  switch (t.ffn_activation) {
    case FfnActivation::Silu: return t.ungated_ffn ? "SiLU" : "SwiGLU";
    case FfnActivation::GeluTanh: return t.ungated_ffn ? "GELU" : "GeGLU";
    case FfnActivation::SwigluOai: return "clamped SwiGLU";
  }
  return "?";
}

std::string window_text(const ArchInfo& a) {
  if (!a.reads_sliding_window) return "ignored";
  if (a.swa_pattern > 0) return "every " + ordinal(a.swa_pattern) + " layer global" +
                                (a.local_rope_base ? ", local RoPE base" : "");
  return "every layer";
}

std::string shape_text(const LayerTensor& t) {
  std::string s = std::string("[") + dim_name(t.cols);
  if (t.rows != Dim::None) s += std::string(", ") + dim_name(t.rows);
  if (t.mats != Dim::None) s += std::string(", ") + dim_name(t.mats);
  return s + "]";
}

const char* kind_text(TensorKind k) {
  switch (k) {
    case TensorKind::Norm: return "norm (f32)";
    case TensorKind::Bias: return "vector (f32)";
    case TensorKind::Matrix: return "matrix";
    case TensorKind::Experts: return "experts (3-D)";
    case TensorKind::ExpertBias: return "per-expert vectors (f32)";
  }
  return "?";
}

const char* need_text(Need n) {
  switch (n) {
    case Need::Always: return "every block";
    case Need::Dense: return "dense blocks";
    case Need::Moe: return "MoE blocks";
    case Need::SharedExpert: return "MoE blocks with a shared expert";
    case Need::QPlain: return "every block but MLA's with a q_lora_rank";
    case Need::KvPlain: return "every block but MLA's";
    case Need::QLoraPair: return "MLA blocks with a q_lora_rank";
    case Need::Mla: return "MLA blocks";
  }
  return "?";
}

const char* trait_text(Trait t) {
  switch (t) {
    case Trait::None: return "always";
    case Trait::QkvBias: return "has_qkv_bias";
    case Trait::QkNorm: return "has_qk_norm";
    case Trait::PostNorms: return "has_post_norms";
    case Trait::ShexpGate: return "has_shexp_gate";
    case Trait::PreNorms: return "not no_pre_norms";
    case Trait::Sinks: return "has_attn_sinks";
    case Trait::OutBias: return "has_out_bias";
    case Trait::MoeBiases: return "has_moe_biases";
    case Trait::NormBias: return "has_norm_bias";
    case Trait::FfnBias: return "has_ffn_bias";
    case Trait::Gated: return "not ungated_ffn";
    case Trait::Optional: return "never (optional)";
  }
  return "?";
}

const char* cut_text(Cut c) {
  switch (c) {
    case Cut::Whole: return "whole";
    case Cut::QRows: return "query rows";
    case Cut::KvRows: return "KV rows";
    case Cut::QElems: return "query elements";
    case Cut::KvElems: return "KV elements";
    case Cut::QCols: return "query columns";
    case Cut::FfRows: return "FFN rows";
    case Cut::FfCols: return "FFN columns";
    case Cut::ExpertRange: return "expert range";
    case Cut::QHeads: return "query heads";
    case Cut::FfElems: return "FFN elements";
    case Cut::FirstShard: return "first shard only";
  }
  return "?";
}

}  // namespace

std::string architectures_markdown() {
  std::string s;
  s += "| `general.architecture` | runs | RoPE | FFN | Q/K/V bias | Q/K norm | post-norms | fused tensors | "
       "sliding window | experts | also |\n";
  s += "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const ArchInfo& a : arch_table()) {
    const ArchTraits& t = a.traits;
    std::string fused;
    if (t.fused_qkv) fused += std::string(fused_tensor(Fuse::Qkv).name);
    if (t.fused_gate_up) fused += (fused.empty() ? "" : ", ") + std::string(fused_tensor(Fuse::GateUp).name);
    std::string rope = t.rope_style == RopeStyle::Neox ? "NeoX" : "interleaved";
    if (a.longrope) rope += ", longrope";
    if (a.no_rope_layer_step > 0) rope += ", none in every " + ordinal(a.no_rope_layer_step) + " layer";
    if (a.global_layers_nope) rope += ", none in the global layers";
    s += std::string("| `") + a.name + "` | " + a.covers + " | " + rope + " | " +
         ffn_text(t) + " | " + yes(t.has_qkv_bias) + " | " +
         (t.qk_norm_full ? "whole rows" : yes(t.has_qk_norm)) + " | " + yes(t.has_post_norms) + " | " + fused + " | " +
         window_text(a) + " | " + experts_text(a) + " | " + extras_text(a) + " |\n";
  }
  s += "\nThe tensors of block N (`blk.N.<name>`; shapes in GGUF order, innermost first):\n\n";
  s += "| name | shape | kind | part | present in | required when | tensor-parallel cut | role |\n";
  s += "|---|---|---|---|---|---|---|---|\n";
  for (const LayerTensor& t : layer_tensors()) {
    std::string name = std::string("`") + t.name + "`";
    if (t.fuse != Fuse::None) name += std::string(" (rows of `") + fused_tensor(t.fuse).name + "` where fused)";
    s += "| " + name + " | " + shape_text(t) + " | " + kind_text(t.kind) + " | " + part_name(t.part) + " | " +
         need_text(t.need) + " | " + trait_text(t.required_by) + " | " + cut_text(t.cut) + " | " + t.role + " |\n";
  }
  s += "\nHyper-parameter keys (`<arch>.<key>`):\n\n| key | meaning |\n|---|---|\n";
  for (const HParamInfo& h : hparam_table()) s += std::string("| `") + h.suffix + "` | " + h.meaning + " |\n";
  s += "\nWeight types a matrix may have:";
  for (uint32_t id = 0; id < 64; ++id) {
    const kernels::DTypeTraits* tr = kernels::dtype_traits(id);
    if (tr && tr->weight_type) s += std::string(" ") + tr->name;
  }
  s += " (norms and biases: f32).\n";
  return s;
}

}  // namespace strata::model
