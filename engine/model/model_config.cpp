// engine/model/model_config.cpp — GGUF metadata -> ModelConfig for every row of the arch table;
// the keys and what differs between architectures are read from that table.
#include "engine/model/model_config.h"

#include <cmath>

#include "kernels/common/scalar_math.h"

namespace strata::model {

namespace {

Expected<int64_t> positive(const gguf::GgufFile& f, const std::string& key, int64_t max) {
  STRATA_ASSIGN_OR_RETURN(uint64_t v, f.get_uint(key));
  if (v == 0 || v > static_cast<uint64_t>(max))
    return Error{Code::Corrupt, "key '" + key + "': value " + std::to_string(v) +
                                    " outside [1, " + std::to_string(max) + "]"};
  return static_cast<int64_t>(v);
}

// DeepSeek's MoE keys (llama.cpp's deepseek2 loader): dense leading blocks, shared experts by
// count, the gating function, the weights' renormalisation and scale, expert groups.
Status read_deepseek_moe(const gguf::GgufFile& f, const ArchInfo& a, ModelConfig& c) {
  const auto key = [&a](HParam h) { return hparam_key(a.name, h); };
  STRATA_ASSIGN_OR_RETURN(uint64_t lead, f.get_uint_or(key(HParam::LeadingDenseBlockCount), 0));
  if (lead > static_cast<uint64_t>(c.n_layers))
    return Error{Code::Corrupt, "key '" + key(HParam::LeadingDenseBlockCount) + "': " + std::to_string(lead) +
                                    " dense blocks of " + std::to_string(c.n_layers)};
  c.n_dense_lead = static_cast<int64_t>(lead);
  STRATA_ASSIGN_OR_RETURN(uint64_t shared, f.get_uint_or(key(HParam::ExpertSharedCount), 0));
  if (shared > 64)
    return Error{Code::Corrupt, "key '" + key(HParam::ExpertSharedCount) + "': " + std::to_string(shared) + " outside [0, 64]"};
  c.n_ff_shexp = static_cast<int64_t>(shared) * c.n_ff_exp;
  STRATA_ASSIGN_OR_RETURN(uint64_t gating, f.get_uint_or(key(HParam::ExpertGatingFunc), 1));
  if (gating == 2) {
    c.expert_gating = ExpertGating::Sigmoid;
  } else if (gating == 1 || gating == 0) {  // 0: absent in V2 files, llama.cpp's softmax
    c.expert_gating = ExpertGating::Softmax;
  } else {
    return Error{Code::Unsupported, "key '" + key(HParam::ExpertGatingFunc) + "' = " + std::to_string(gating) +
                                        ": expert gating function not supported (1 softmax, 2 sigmoid are)"};
  }
  STRATA_ASSIGN_OR_RETURN(bool norm, f.get_bool_or(key(HParam::ExpertWeightsNorm), false));
  c.expert_weights_norm = norm;
  STRATA_ASSIGN_OR_RETURN(double scale, f.get_float_or(key(HParam::ExpertWeightsScale), 1.0));
  if (!(scale >= 0.0 && scale < 1e6))
    return Error{Code::Corrupt, "key '" + key(HParam::ExpertWeightsScale) + "': " + std::to_string(scale)};
  c.expert_weights_scale = scale == 0.0 ? 1.0f : static_cast<float>(scale);
  STRATA_ASSIGN_OR_RETURN(uint64_t groups, f.get_uint_or(key(HParam::ExpertGroupCount), 0));
  STRATA_ASSIGN_OR_RETURN(uint64_t groups_used, f.get_uint_or(key(HParam::ExpertGroupUsedCount), 0));
  if (groups > 1) {
    if (static_cast<int64_t>(groups) >= c.n_expert || c.n_expert % static_cast<int64_t>(groups) != 0 ||
        groups_used == 0 || groups_used >= groups ||
        static_cast<int64_t>(groups_used) * (c.n_expert / static_cast<int64_t>(groups)) < c.n_expert_used)
      return Error{Code::Corrupt, "keys '" + key(HParam::ExpertGroupCount) + "' / '" + key(HParam::ExpertGroupUsedCount) +
                                      "': " + std::to_string(groups) + " groups, " + std::to_string(groups_used) +
                                      " used, of " + std::to_string(c.n_expert) + " experts (top-" +
                                      std::to_string(c.n_expert_used) + ")"};
    c.n_expert_groups = static_cast<int64_t>(groups);
    c.n_group_used = static_cast<int64_t>(groups_used);
  }
  return {};
}

// The mixture-of-experts keys (llama.cpp's names and defaults). Whether the architecture must, may
// or must not have experts, and which keys size them, is its row's.
Status read_moe_config(const gguf::GgufFile& f, const ArchInfo& a, ModelConfig& c) {
  const bool must = a.experts == Experts::Required;
  const bool may = a.experts != Experts::None;
  const std::string count_key = hparam_key(a.name, HParam::ExpertCount);
  STRATA_ASSIGN_OR_RETURN(uint64_t n_expert, f.get_uint_or(count_key, 0));
  if (n_expert == 0) {
    if (must) return Error{Code::Corrupt, "key '" + count_key + "' is missing or 0: " + a.name +
                                              " is a mixture-of-experts architecture"};
    return {};
  }
  if (!may)
    return Error{Code::Unsupported,
                 "key '" + count_key + "' = " + std::to_string(n_expert) + ": " + a.name +
                     " with experts is not supported (" +
                     arch_names([](const ArchInfo& x) { return x.experts != Experts::None; }) + " are)"};
  if (n_expert > 4096)
    return Error{Code::Corrupt, "key '" + count_key + "': " + std::to_string(n_expert) + " outside [1, 4096]"};
  const std::string used_key = hparam_key(a.name, HParam::ExpertUsedCount);
  if (f.find(used_key) && !f.get_uint(used_key).ok())
    return Error{Code::Unsupported, "key '" + used_key + "': a per-layer list of top-k counts is not supported"};
  STRATA_ASSIGN_OR_RETURN(uint64_t used, f.get_uint_or(used_key, 0));
  if (used == 0 || used > n_expert)
    return Error{Code::Corrupt, "key '" + used_key + "': " + std::to_string(used) + " outside [1, expert_count " +
                                    std::to_string(n_expert) + "]"};
  c.n_expert = static_cast<int64_t>(n_expert);
  c.n_expert_used = static_cast<int64_t>(used);
  if (!a.expert_ff_key) {
    // Mixtral: every expert is an FFN of feed_forward_length units; no shared expert.
    c.n_ff_exp = c.n_ff;
  } else {
    const std::string key = hparam_key(a.name, HParam::ExpertFeedForwardLength);
    STRATA_ASSIGN_OR_RETURN(uint64_t ff_exp, f.get_uint_or(key, static_cast<uint64_t>(c.n_ff / c.n_expert_used)));
    if (ff_exp == 0 || ff_exp > (1u << 20))
      return Error{Code::Corrupt, "key '" + key + "': " + std::to_string(ff_exp) + " outside [1, 1048576]"};
    c.n_ff_exp = static_cast<int64_t>(ff_exp);
  }
  if (a.deepseek_moe) return read_deepseek_moe(f, a, c);
  if (a.shared_expert) {
    const std::string key = hparam_key(a.name, HParam::ExpertSharedFeedForwardLength);
    STRATA_ASSIGN_OR_RETURN(uint64_t ff_sh, f.get_uint_or(key, static_cast<uint64_t>(c.n_ff)));
    if (ff_sh == 0 || ff_sh > (1u << 20))
      return Error{Code::Corrupt, "key '" + key + "': " + std::to_string(ff_sh) + " outside [1, 1048576]"};
    c.n_ff_shexp = static_cast<int64_t>(ff_sh);
  }
  return {};
}

// Multi-head latent attention (deepseek2): the ranks and the per-head sizes. The file's key_length
// is the latent cache row (kv_lora_rank + rope dims) and its value_length the latent (llama.cpp's
// converter since the attn_k_b / attn_v_b split); the cache has one KV head.
Status read_mla_config(const gguf::GgufFile& f, const std::string& arch, int64_t v_dim, ModelConfig& c) {
  const auto key = [&arch](HParam h) { return hparam_key(arch, h); };
  if (f.find_tensor("blk.0.attn_kv_b.weight"))
    return Error{Code::Unsupported, "tensor 'blk.0.attn_kv_b.weight': a " + arch +
                                        " file from before MLA's split into attn_k_b / attn_v_b (convert it again "
                                        "with llama.cpp's current convert_hf_to_gguf.py)"};
  STRATA_ASSIGN_OR_RETURN(uint64_t q_lora, f.get_uint_or(key(HParam::QLoraRank), 0));
  STRATA_ASSIGN_OR_RETURN(int64_t kv_lora, positive(f, key(HParam::KvLoraRank), 1 << 16));
  STRATA_ASSIGN_OR_RETURN(int64_t k_mla, positive(f, key(HParam::KeyLengthMla), 4096));
  STRATA_ASSIGN_OR_RETURN(int64_t v_mla, positive(f, key(HParam::ValueLengthMla), 4096));
  if (q_lora > (1u << 16)) return Error{Code::Corrupt, "key '" + key(HParam::QLoraRank) + "': " + std::to_string(q_lora)};
  if (kv_lora + c.rope_dims != c.head_dim || v_dim != kv_lora)
    return Error{Code::Corrupt, "key '" + key(HParam::KeyLength) + "' = " + std::to_string(c.head_dim) + " / '" +
                                    key(HParam::ValueLength) + "' = " + std::to_string(v_dim) + ": MLA needs kv_lora_rank (" +
                                    std::to_string(kv_lora) + ") + rope dims (" + std::to_string(c.rope_dims) +
                                    ") and kv_lora_rank"};
  if (k_mla <= c.rope_dims)
    return Error{Code::Corrupt, "key '" + key(HParam::KeyLengthMla) + "': " + std::to_string(k_mla) +
                                    " leaves no dimensions without RoPE (rope dims " + std::to_string(c.rope_dims) + ")"};
  if (c.n_kv_heads != 1)
    return Error{Code::Corrupt, "key '" + key(HParam::HeadCountKv) + "': " + std::to_string(c.n_kv_heads) +
                                    " (MLA's latent cache is one KV head)"};
  c.q_lora_rank = static_cast<int64_t>(q_lora);
  c.kv_lora_rank = kv_lora;
  c.head_dim_k_mla = k_mla;
  c.head_dim_v_mla = v_mla;
  STRATA_ASSIGN_OR_RETURN(double log_mul, f.get_float_or(key(HParam::RopeScalingYarnLogMultiplier), 0.0));
  if (!(log_mul >= 0.0 && log_mul < 100.0))
    return Error{Code::Corrupt, "key '" + key(HParam::RopeScalingYarnLogMultiplier) + "': " + std::to_string(log_mul)};
  c.rope_yarn_log_mul = static_cast<float>(log_mul / 0.1);  // the converter stored 0.1 x mscale_all_dim
  return {};
}

}  // namespace

LayerAttention ModelConfig::layer_attention(int64_t layer) const {
  LayerAttention a;
  if (layer_is_local(layer)) {
    a.window = sliding_window;
    // gemma3's and olmo2's local layers keep an unscaled RoPE of their own base; elsewhere (Mistral, P == 1)
    // every layer is local and uses the model's RoPE.
    const bool own_base = info().local_rope_base;
    a.rope_freq_base = own_base ? rope_freq_base_local : rope_freq_base;
    a.rope_freq_scale = own_base ? 1.0f : rope_freq_scale;
    a.rope_yarn = own_base ? false : rope_yarn;
    a.unit_attn_factor = info().local_rope_plain;
  } else {
    a.rope_freq_base = rope_freq_base;
    a.rope_freq_scale = rope_freq_scale;
    a.rope_yarn = rope_yarn;
  }
  const int64_t step = info().no_rope_layer_step;
  a.rope = (step <= 0 || (layer + 1) % step != 0) && !(info().global_layers_nope && !layer_is_local(layer));
  return a;
}

float ModelConfig::query_scale() const {
  if (attn_scale > 0.0f) return attn_scale;
  if (mla) {
    const float m = mla_mscale();
    return m * m / std::sqrt(static_cast<float>(head_dim_k_mla));
  }
  return 1.0f / std::sqrt(static_cast<float>(head_dim));
}

// llama.cpp (llama-context.cpp and models/deepseek2.cpp): with YaRN applied (ext_factor != 0) the
// factor handed to the rope kernel is get_mscale(factor, m) / get_mscale(factor, m_all) /
// (1 + 0.1 ln factor) x attn_factor, and the kernel multiplies it by 1 + 0.1 ln factor again. For
// deepseek2 with a log multiplier, m = m_all, so cos/sin keep attn_factor alone; without one, the
// usual YaRN magnitude. The query scale's attn_factor_org undoes the division: the cos/sin factor
// with YaRN applied, attn_factor x (1 + 0.1 ln factor) without.
float ModelConfig::rope_cos_sin_factor() const {
  if (!rope_yarn || yarn_ext_factor == 0.0f) return rope_attn_factor;
  if (mla && rope_yarn_log_mul != 0.0f) return rope_attn_factor;
  return rope_attn_factor * kernels::yarn_mscale(rope_freq_scale, yarn_ext_factor);
}

float ModelConfig::mla_mscale() const {
  const float log_factor = std::log(1.0f / rope_freq_scale);
  const float org = rope_yarn && yarn_ext_factor != 0.0f ? rope_cos_sin_factor()
                                                         : rope_attn_factor * (1.0f + 0.1f * log_factor);
  return org * (1.0f + 0.1f * rope_yarn_log_mul * log_factor);
}

Expected<ModelConfig> read_model_config(const gguf::GgufFile& f) {
  ModelConfig c;
  const std::string arch = f.architecture();
  if (arch.empty()) return Error{Code::NotFound, "key 'general.architecture' is missing: not a model file"};
  // A tensor of a type this build does not read makes the file unrunnable, whatever its role.
  STRATA_RETURN_IF_ERROR(f.check_supported());
  const ArchInfo* info = find_arch(arch);
  if (!info)
    return Error{Code::Unsupported, "architecture '" + arch + "' is not supported (" + arch_names() +
                                        " are; mistral and mixtral as llama)"};
  c.arch = info->arch;
  static_cast<ArchTraits&>(c) = info->traits;
  // "<arch>.<suffix>": arch_table.h spells the keys.
  const auto key = [&arch](HParam h) { return hparam_key(arch, h); };
  STRATA_ASSIGN_OR_RETURN(c.name, f.get_string_or("general.name", ""));
  STRATA_ASSIGN_OR_RETURN(c.n_embd, positive(f, key(HParam::EmbeddingLength), 1 << 17));
  STRATA_ASSIGN_OR_RETURN(c.n_layers, positive(f, key(HParam::BlockCount), 4096));
  STRATA_ASSIGN_OR_RETURN(c.n_ff, positive(f, key(HParam::FeedForwardLength), 1 << 20));
  STRATA_ASSIGN_OR_RETURN(c.n_heads, positive(f, key(HParam::HeadCount), 4096));
  STRATA_ASSIGN_OR_RETURN(uint64_t kv, f.get_uint_or(key(HParam::HeadCountKv), c.n_heads));
  c.n_kv_heads = static_cast<int64_t>(kv);
  if (c.n_kv_heads <= 0 || c.n_kv_heads > c.n_heads || c.n_heads % c.n_kv_heads != 0)
    return Error{Code::Corrupt, "key '" + key(HParam::HeadCountKv) + "': " + std::to_string(kv) +
                                    " does not divide head_count " + std::to_string(c.n_heads)};
  STRATA_ASSIGN_OR_RETURN(uint64_t ctx, f.get_uint_or(key(HParam::ContextLength), 2048));
  if (ctx == 0 || ctx > (1u << 24))
    return Error{Code::Corrupt, "key '" + key(HParam::ContextLength) + "': " + std::to_string(ctx) + " outside [1, 16777216]"};
  c.n_ctx_train = static_cast<int64_t>(ctx);

  if (c.n_embd % c.n_heads != 0 && !f.find(key(HParam::KeyLength)))
    return Error{Code::Corrupt, "embedding_length " + std::to_string(c.n_embd) +
                                    " is not a multiple of head_count " + std::to_string(c.n_heads)};
  STRATA_ASSIGN_OR_RETURN(uint64_t head_dim, f.get_uint_or(key(HParam::KeyLength),
                                                           static_cast<uint64_t>(c.n_embd / c.n_heads)));
  STRATA_ASSIGN_OR_RETURN(uint64_t v_dim, f.get_uint_or(key(HParam::ValueLength), head_dim));
  if (head_dim == 0 || head_dim > 1024 || head_dim % 2 != 0 || (v_dim != head_dim && !c.mla))
    return Error{Code::Unsupported, "head size " + std::to_string(head_dim) + " (value size " +
                                        std::to_string(v_dim) + ") is not supported (even, <= 1024, K == V)"};
  c.head_dim = static_cast<int64_t>(head_dim);
  STRATA_ASSIGN_OR_RETURN(uint64_t rope_dims, f.get_uint_or(key(HParam::RopeDimensionCount), head_dim));
  if (rope_dims == 0 || rope_dims > head_dim || rope_dims % 2 != 0)
    return Error{Code::Corrupt, "key '" + key(HParam::RopeDimensionCount) + "': " + std::to_string(rope_dims) +
                                    " must be even and <= head size " + std::to_string(head_dim)};
  c.rope_dims = static_cast<int64_t>(rope_dims);
  if (c.mla) STRATA_RETURN_IF_ERROR(read_mla_config(f, arch, static_cast<int64_t>(v_dim), c));

  // The norms' epsilon: the RMS norm's key, or LayerNorm's where the architecture's norms are LayerNorms.
  const HParam eps_key = c.layer_norm ? HParam::LayerNormEpsilon : HParam::RmsEpsilon;
  STRATA_ASSIGN_OR_RETURN(double eps, f.get_float_or(key(eps_key), 1e-5));
  if (!(eps > 0.0 && eps < 1.0))
    return Error{Code::Corrupt, "key '" + key(eps_key) + "': " + std::to_string(eps)};
  c.rms_eps = static_cast<float>(eps);
  STRATA_ASSIGN_OR_RETURN(double base, f.get_float_or(key(HParam::RopeFreqBase), 10000.0));
  if (!(base > 1.0 && std::isfinite(base)))
    return Error{Code::Corrupt, "key '" + key(HParam::RopeFreqBase) + "': " + std::to_string(base)};
  c.rope_freq_base = static_cast<float>(base);

  STRATA_ASSIGN_OR_RETURN(std::string scaling, f.get_string_or(key(HParam::RopeScalingType), "none"));
  if (scaling == "linear") {
    STRATA_ASSIGN_OR_RETURN(double factor, f.get_float_or(key(HParam::RopeScalingFactor), 1.0));
    if (!(factor >= 1.0 && factor < 1e6))
      return Error{Code::Corrupt, "key '" + key(HParam::RopeScalingFactor) + "': " + std::to_string(factor)};
    c.rope_freq_scale = static_cast<float>(1.0 / factor);
  } else if (scaling == "yarn") {
    STRATA_ASSIGN_OR_RETURN(double factor, f.get_float_or(key(HParam::RopeScalingFactor), 1.0));
    if (!(factor >= 1.0 && factor < 1e6))
      return Error{Code::Corrupt, "key '" + key(HParam::RopeScalingFactor) + "': " + std::to_string(factor)};
    c.rope_freq_scale = static_cast<float>(1.0 / factor);
    c.rope_yarn = true;
    STRATA_ASSIGN_OR_RETURN(double ext, f.get_float_or(key(HParam::RopeScalingYarnExtFactor), 1.0));
    STRATA_ASSIGN_OR_RETURN(double fast, f.get_float_or(key(HParam::RopeScalingYarnBetaFast), 32.0));
    STRATA_ASSIGN_OR_RETURN(double slow, f.get_float_or(key(HParam::RopeScalingYarnBetaSlow), 1.0));
    if (!(ext >= 0.0 && ext <= 1.0))
      return Error{Code::Corrupt, "key '" + key(HParam::RopeScalingYarnExtFactor) + "': " + std::to_string(ext)};
    if (!(fast > 0.0 && fast < 1e4 && slow > 0.0 && slow <= fast))
      return Error{Code::Corrupt, "keys '" + key(HParam::RopeScalingYarnBetaFast) + "' / '" +
                                      key(HParam::RopeScalingYarnBetaSlow) + "': " + std::to_string(fast) + " / " +
                                      std::to_string(slow) + " (want 0 < beta_slow <= beta_fast)"};
    // llama.cpp's deepseek2 loader reads none of the three: YaRN's defaults whatever the file says.
    c.yarn_ext_factor = c.mla ? 1.0f : static_cast<float>(ext);
    c.yarn_beta_fast = c.mla ? 32.0f : static_cast<float>(fast);
    c.yarn_beta_slow = c.mla ? 1.0f : static_cast<float>(slow);
  } else if ((scaling == "longrope" || scaling == "su") && info->longrope) {
    // The per-pair factors are tensors (rope_factors_long / _short); the metadata gives the
    // context they switch at and the cos/sin multiplier.
  } else if (scaling != "none" && !scaling.empty()) {
    return Error{Code::Unsupported, "rope scaling '" + scaling + "' of architecture '" + arch +
                                        "' is not supported (none, linear, yarn are; longrope for " +
                                        arch_names([](const ArchInfo& x) { return x.longrope; }) + ")"};
  }
  STRATA_ASSIGN_OR_RETURN(uint64_t ctx_orig, f.get_uint_or(key(HParam::RopeScalingOrigCtx), 0));
  if (ctx_orig > (1u << 24))
    return Error{Code::Corrupt, "key '" + key(HParam::RopeScalingOrigCtx) + "': " + std::to_string(ctx_orig)};
  c.n_ctx_orig = static_cast<int64_t>(ctx_orig);
  STRATA_ASSIGN_OR_RETURN(double attn_factor, f.get_float_or(key(HParam::RopeScalingAttnFactor), 1.0));
  if (!(attn_factor > 0.0 && attn_factor < 100.0))
    return Error{Code::Corrupt, "key '" + key(HParam::RopeScalingAttnFactor) + "': " + std::to_string(attn_factor)};
  c.rope_attn_factor = static_cast<float>(attn_factor);

  STRATA_ASSIGN_OR_RETURN(double temp_scale, f.get_float_or(key(HParam::AttentionTemperatureScale), 0.0));
  if (temp_scale != 0.0)
    return Error{Code::Unsupported, "key '" + key(HParam::AttentionTemperatureScale) + "' = " + std::to_string(temp_scale) +
                                        ": position-dependent query temperature scaling is not supported"};
  STRATA_ASSIGN_OR_RETURN(double attn_scale, f.get_float_or(key(HParam::AttentionScale), 0.0));
  if (!(attn_scale >= 0.0 && attn_scale < 1e3))
    return Error{Code::Corrupt, "key '" + key(HParam::AttentionScale) + "': " + std::to_string(attn_scale)};
  c.attn_scale = static_cast<float>(attn_scale);

  // Sliding-window attention: the local layers from the file's pattern, else the row's (gemma3:
  // 5 local, 1 global; llama (Mistral): every layer). An architecture whose row says it does not
  // read the window (phi3) ignores the key.
  STRATA_ASSIGN_OR_RETURN(uint64_t window, f.get_uint_or(key(HParam::SlidingWindow), 0));
  if (window > (1u << 24))
    return Error{Code::Corrupt, "key '" + key(HParam::SlidingWindow) + "': " + std::to_string(window)};
  if (info->reads_sliding_window && window > 0) {
    c.sliding_window = static_cast<int64_t>(window);
    const std::string pattern_key = key(HParam::SlidingWindowPattern);
    const gguf::Value* v = f.find(pattern_key);
    c.local_layers.assign(static_cast<size_t>(c.n_layers), 1);
    if (v && f.get_int_array(pattern_key).ok()) {  // one flag per layer
      STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> flags, f.get_int_array(pattern_key));
      if (static_cast<int64_t>(flags.size()) != c.n_layers)
        return Error{Code::Corrupt, "key '" + pattern_key + "': " + std::to_string(flags.size()) + " flags for " +
                                        std::to_string(c.n_layers) + " layers"};
      for (size_t i = 0; i < flags.size(); ++i) c.local_layers[i] = flags[i] != 0;
    } else {
      STRATA_ASSIGN_OR_RETURN(uint64_t pattern, f.get_uint_or(pattern_key, static_cast<uint64_t>(info->swa_pattern)));
      if (pattern > 4096) return Error{Code::Corrupt, "key '" + pattern_key + "': " + std::to_string(pattern)};
      for (int64_t i = 0; i < c.n_layers && pattern > 0; ++i)
        c.local_layers[static_cast<size_t>(i)] = (i + 1) % static_cast<int64_t>(pattern) != 0;
    }
  }
  STRATA_ASSIGN_OR_RETURN(double base_local, f.get_float_or(key(HParam::RopeFreqBaseSwa),
                                                            info->local_base_is_global ? c.rope_freq_base : 10000.0));
  if (!(base_local > 1.0 && std::isfinite(base_local)))
    return Error{Code::Corrupt, "key '" + key(HParam::RopeFreqBaseSwa) + "': " + std::to_string(base_local)};
  c.rope_freq_base_local = static_cast<float>(base_local);
  if (info->embd_scale_sqrt) c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
  if (info->softcaps) {
    STRATA_ASSIGN_OR_RETURN(double attn_cap, f.get_float_or(key(HParam::AttnLogitSoftcapping), 50.0));
    STRATA_ASSIGN_OR_RETURN(double final_cap, f.get_float_or(key(HParam::FinalLogitSoftcapping), 30.0));
    if (!(attn_cap >= 0.0 && attn_cap < 1e6) || !(final_cap >= 0.0 && final_cap < 1e6))
      return Error{Code::Corrupt, "keys '" + key(HParam::AttnLogitSoftcapping) + "' / '" +
                                      key(HParam::FinalLogitSoftcapping) + "': " + std::to_string(attn_cap) + " / " +
                                      std::to_string(final_cap)};
    c.attn_softcap = static_cast<float>(attn_cap);
    c.final_softcap = static_cast<float>(final_cap);
    // llama.cpp's query scale for Gemma 2 27B (46 blocks) is 1/sqrt(n_embd / n_head), not 1/sqrt(head size).
    if (c.attn_scale == 0.0f && c.n_layers == 46)
      c.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.n_embd / c.n_heads));
  }
  if (info->granite_scales) {
    const std::pair<HParam, float*> scales[] = {{HParam::EmbeddingScale, &c.embd_scale},
                                                {HParam::ResidualScale, &c.residual_scale},
                                                {HParam::LogitScale, &c.logit_scale}};
    for (const auto& [hp, dst] : scales) {
      STRATA_ASSIGN_OR_RETURN(double v, f.get_float_or(key(hp), 1.0));
      if (!(v > 0.0 && v < 1e6))
        return Error{Code::Corrupt, "key '" + key(hp) + "': " + std::to_string(v) + " (want a positive scale)"};
      *dst = static_cast<float>(v);
    }
  }
  if (info->logit_scale_multiplies) {
    STRATA_ASSIGN_OR_RETURN(double v, f.get_float_or(key(HParam::LogitScale), 1.0));
    if (!(v > 0.0 && v < 1e6))
      return Error{Code::Corrupt, "key '" + key(HParam::LogitScale) + "': " + std::to_string(v) + " (want a positive scale)"};
    c.logit_mul = static_cast<float>(v);
  }
  if (info->global_layers_nope && c.sliding_window == 0)
    return Error{Code::Corrupt, "key '" + key(HParam::SlidingWindow) + "' is missing or 0: " + arch +
                                    "'s local layers need their window"};
  STRATA_RETURN_IF_ERROR(read_moe_config(f, *info, c));

  const gguf::TensorInfo* embd = f.find_tensor("token_embd.weight");
  if (!embd) return Error{Code::NotFound, "tensor 'token_embd.weight' is missing"};
  if (embd->dims.size() != 2)
    return Error{Code::Corrupt, "tensor 'token_embd.weight': expected 2 dims, found " + std::to_string(embd->dims.size())};
  c.n_vocab = static_cast<int64_t>(embd->dims[1]);
  c.tied_output = info->output_is_embedding || f.find_tensor("output.weight") == nullptr;
  return c;
}

}  // namespace strata::model
