// engine/model/random_model.cpp — make-model: the arch table's keys and block tensors written with
// a type mix and a deterministic random fill.
#include "engine/model/random_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_weights.h"
#include "kernels/cpu/quant.h"

namespace strata::model {
namespace {

using kernels::DType;

struct TypeMix {
  DType base;
  DType more_bits;   // for output.weight and some attn_v / ffn_down layers (the "_M" mixes)
  uint32_t file_type;  // llama.cpp's general.file_type value
  bool experts_own = false;  // the routed experts' matrices are `experts`, whatever the layer's mix
  DType experts = DType::F32;
};

Expected<TypeMix> type_mix(const std::string& name) {
  if (name == "q4_k_m") return TypeMix{DType::Q4_K, DType::Q6_K, 15};
  if (name == "q5_k_m") return TypeMix{DType::Q5_K, DType::Q6_K, 17};
  // llama.cpp's MXFP4_MOE (the published gpt-oss files): MXFP4 experts, the other matrices Q8_0.
  if (name == "mxfp4_moe") return TypeMix{DType::Q8_0, DType::Q8_0, 38, true, DType::MXFP4};
  auto t = kernels::dtype_from_name(name);
  if (!t || !kernels::traits(*t).weight_type || !kernels::can_quantize(*t)) {
    std::string writable;
    for (uint32_t id = 0; id < 64; ++id) {
      const kernels::DTypeTraits* tr = kernels::dtype_traits(id);
      if (tr && tr->weight_type && kernels::can_quantize(tr->type)) writable += std::string(tr->name) + " ";
    }
    const std::string why = t && kernels::traits(*t).weight_type
                                ? "' is read but not written (its quantizer needs llama-quantize's grid search); "
                                : "' is not a weight type; ";
    return Error{Code::InvalidArgument, "tensor type '" + name + why + "make-model writes " + writable +
                                            "q4_k_m q5_k_m mxfp4_moe"};
  }
  // llama.cpp's general.file_type (LLAMA_FTYPE_MOSTLY_*) of a file of one type.
  static const std::pair<DType, uint32_t> kFileTypes[] = {
      {DType::F32, 0},  {DType::F16, 1},  {DType::Q4_0, 2},  {DType::Q4_1, 3},  {DType::Q8_0, 7},
      {DType::Q5_0, 8}, {DType::Q5_1, 9}, {DType::Q2_K, 10}, {DType::Q3_K, 12}, {DType::Q4_K, 14},
      {DType::Q5_K, 16}, {DType::Q6_K, 18}, {DType::IQ4_NL, 25}, {DType::IQ4_XS, 30}, {DType::BF16, 32},
      {DType::TQ1_0, 36}, {DType::TQ2_0, 37}, {DType::MXFP4, 38}};
  uint32_t ft = 0;
  for (const auto& [type, value] : kFileTypes) {
    if (type == *t) ft = value;
  }
  return TypeMix{*t, *t, ft};
}

// llama.cpp's rule for which layers get more bits in the _M mixes: the first and last eighth,
// and every third layer in between.
bool use_more_bits(int64_t layer, int64_t n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

// A type whose block divides the row; K-quants fall back as llama.cpp's quantizer does.
DType fit_type(DType want, int64_t cols) {
  if (cols % kernels::traits(want).block_elems == 0) return want;
  if (cols % 32 == 0) return DType::Q8_0;
  return DType::F16;
}

uint64_t name_hash(const std::string& s, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Fills rows x cols values ~ N(0, stddev) (or the constant `fill_value` when stddev == 0),
// quantized to type, each row from its own seed so the bytes do not depend on thread count. With
// row_pool > 0 only rows [0, row_pool) are drawn; row r is a copy of row r mod row_pool.
gguf::GgufWriter::FillFn random_fill(DType type, int64_t cols, int64_t rows, float stddev, float fill_value,
                                     uint64_t seed, int n_threads, int64_t row_pool = 0) {
  return [=](uint8_t* dst, uint64_t /*n_bytes*/) {
    const int64_t row_bytes = kernels::row_bytes(type, cols);
    const int64_t drawn = row_pool > 0 ? std::min(rows, row_pool) : rows;
    auto work = [&](int64_t r0, int64_t r1) {
      std::vector<float> row(static_cast<size_t>(cols));
      for (int64_t r = r0; r < r1; ++r) {
        if (stddev > 0) {
          std::mt19937_64 rng(seed + static_cast<uint64_t>(r) * 0x9E3779B97F4A7C15ull);
          std::normal_distribution<float> normal(0.0f, stddev);
          for (float& v : row) v = normal(rng);
        } else {
          std::fill(row.begin(), row.end(), fill_value);
        }
        kernels::quantize_row(type, row.data(), dst + r * row_bytes, cols);
      }
    };
    auto copies = [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) std::memcpy(dst + r * row_bytes, dst + (r % drawn) * row_bytes, row_bytes);
    };
    // Each phase over the threads: the drawn rows first, then (with a pool) the copies of them.
    auto parallel = [&](auto&& fn, int64_t begin, int64_t end) {
      const int64_t count = end - begin;
      if (count <= 0) return;
      const int64_t n = std::max(1, std::min<int>(n_threads, static_cast<int>(std::min<int64_t>(count, 64))));
      std::vector<std::thread> threads;
      for (int64_t i = 1; i < n; ++i) threads.emplace_back(fn, begin + count * i / n, begin + count * (i + 1) / n);
      fn(begin, begin + count / n);
      for (auto& t : threads) t.join();
    };
    parallel(work, 0, drawn);
    parallel(copies, drawn, rows);
  };
}

}  // namespace

Status validate(const RandomModelSpec& s) {
  auto bad = [](const std::string& m) { return Error{Code::InvalidArgument, m}; };
  if (s.n_embd <= 0 || s.n_embd > 65536) return bad("--dim " + std::to_string(s.n_embd) + " outside [1, 65536]");
  if (s.n_layers <= 0 || s.n_layers > 1024) return bad("--layers " + std::to_string(s.n_layers) + " outside [1, 1024]");
  if (s.n_heads <= 0 || s.n_heads > 4096) return bad("--heads " + std::to_string(s.n_heads) + " outside [1, 4096]");
  if (s.head_dim == 0 && s.n_embd % s.n_heads != 0)
    return bad("--heads " + std::to_string(s.n_heads) + " does not divide --dim " + std::to_string(s.n_embd) +
               " (or give --head-dim)");
  const int64_t head_dim = s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_heads;
  if (head_dim <= 0 || head_dim > 1024 || head_dim % 2 != 0)
    return bad("head size " + std::to_string(head_dim) + " is not even in [2, 1024]");
  if (s.rope_dims < 0 || s.rope_dims > head_dim || s.rope_dims % 2 != 0)
    return bad("rotated dimensions " + std::to_string(s.rope_dims) + " are not even in [0, head size " +
               std::to_string(head_dim) + "]");
  if (s.sliding_window < 0 || s.sliding_window > (1 << 24))
    return bad("--sliding-window " + std::to_string(s.sliding_window));
  if (s.swa_pattern < 0 || s.swa_pattern > 4096) return bad("--swa-pattern " + std::to_string(s.swa_pattern));
  if (s.yarn_factor != 0.0f && !(s.yarn_factor > 1.0f && s.yarn_factor < 1e6f))
    return bad("--yarn-factor " + std::to_string(s.yarn_factor) + " is not in (1, 1e6)");
  if (s.yarn_orig_ctx < 0 || s.yarn_orig_ctx > (1 << 24)) return bad("--yarn-orig-ctx " + std::to_string(s.yarn_orig_ctx));
  if (s.yarn_factor > 0.0f && arch_info(s.arch).longrope && s.longrope)
    return bad("--yarn-factor: " + std::string(arch_name(s.arch)) + " writes longrope scaling (add --no-longrope)");
  if (s.n_kv_heads <= 0 || s.n_heads % s.n_kv_heads != 0)
    return bad("--kv-heads " + std::to_string(s.n_kv_heads) + " does not divide --heads " + std::to_string(s.n_heads));
  if (s.n_ff <= 0 || s.n_ff > (1 << 20)) return bad("--ffn " + std::to_string(s.n_ff) + " outside [1, 1048576]");
  if (s.n_ctx <= 0 || s.n_ctx > (1 << 24)) return bad("--ctx " + std::to_string(s.n_ctx) + " outside [1, 16777216]");
  if (s.n_threads <= 0 || s.n_threads > 1024) return bad("--threads " + std::to_string(s.n_threads));
  if (!(s.stddev >= 0.0f && s.stddev < 10.0f)) return bad("--std " + std::to_string(s.stddev));
  const ArchInfo& a = arch_info(s.arch);
  const bool moe_arch = a.experts == Experts::Required;
  if (s.n_expert < 0 || s.n_expert > 4096) return bad("--experts " + std::to_string(s.n_expert) + " outside [0, 4096]");
  if (moe_arch && s.n_expert == 0) return bad(std::string("--arch ") + a.name + " needs --experts");
  if (s.n_expert > 0 && a.experts == Experts::None)
    return bad(std::string("--experts: ") + a.name + " has no mixture-of-experts form (" +
               arch_names([](const ArchInfo& x) { return x.experts != Experts::None; }) + " do)");
  if (s.n_expert > 0 && (s.n_expert_used < 1 || s.n_expert_used > s.n_expert))
    return bad("--experts-used " + std::to_string(s.n_expert_used) + " outside [1, --experts " +
               std::to_string(s.n_expert) + "]");
  if (s.n_ff_exp < 0 || s.n_ff_exp > (1 << 20)) return bad("--expert-ff " + std::to_string(s.n_ff_exp));
  if (!a.expert_ff_key && s.n_ff_exp != 0 && s.n_ff_exp != s.n_ff)
    return bad("--expert-ff: a Mixtral-style llama model's experts have --ffn units");
  if (s.n_ff_shexp < 0 || s.n_ff_shexp > (1 << 20)) return bad("--shared-expert-ff " + std::to_string(s.n_ff_shexp));
  if (s.n_ff_shexp > 0 && (!a.shared_expert || a.deepseek_moe))
    return bad("--shared-expert-ff: only " +
               arch_names([](const ArchInfo& x) { return x.shared_expert && !x.deepseek_moe; }) +
               " has a shared expert of its own size" +
               (a.deepseek_moe ? std::string(" (") + a.name + "'s have --expert-ff units: give their count, --shared-experts)"
                               : std::string()));
  if (a.traits.mla) {
    if (s.rope_dims <= 0) return bad(std::string("--arch ") + a.name + " needs --rope-dims (the RoPE part of a head)");
    if (s.kv_lora_rank <= 0 || s.kv_lora_rank > (1 << 16))
      return bad(std::string("--arch ") + a.name + " needs --kv-lora-rank in [1, 65536]");
    if (s.q_lora_rank < 0 || s.q_lora_rank > (1 << 16)) return bad("--q-lora-rank " + std::to_string(s.q_lora_rank));
    if (s.head_dim > 0 && s.head_dim <= s.rope_dims)
      return bad("--head-dim " + std::to_string(s.head_dim) + " leaves no dimensions without RoPE (--rope-dims " +
                 std::to_string(s.rope_dims) + ")");
    if (s.kv_lora_rank + s.rope_dims > 1024)
      return bad("--kv-lora-rank + --rope-dims = " + std::to_string(s.kv_lora_rank + s.rope_dims) + " (the cache row) above 1024");
    if (s.n_dense_lead < 0 || s.n_dense_lead > s.n_layers) return bad("--dense-layers " + std::to_string(s.n_dense_lead));
    if (s.n_shared_experts < 0 || s.n_shared_experts > 64) return bad("--shared-experts " + std::to_string(s.n_shared_experts));
    if (s.gating != "softmax" && s.gating != "sigmoid") return bad("--gating '" + s.gating + "' (softmax or sigmoid)");
    if (s.expert_groups > 1 && (s.expert_groups >= s.n_expert || s.n_expert % s.expert_groups != 0 ||
                                s.expert_groups_used < 1 || s.expert_groups_used >= s.expert_groups ||
                                s.expert_groups_used * (s.n_expert / s.expert_groups) < s.n_expert_used))
      return bad("--expert-groups " + std::to_string(s.expert_groups) + " / --expert-groups-used " +
                 std::to_string(s.expert_groups_used) + " do not fit " + std::to_string(s.n_expert) + " experts, top-" +
                 std::to_string(s.n_expert_used));
    if (!(s.expert_weights_scale > 0.0f && s.expert_weights_scale < 1e6f))
      return bad("--expert-weights-scale " + std::to_string(s.expert_weights_scale));
    if (!(s.yarn_log_mul >= 0.0f && s.yarn_log_mul < 100.0f)) return bad("--yarn-log-mul " + std::to_string(s.yarn_log_mul));
  }
  if (a.global_layers_nope && s.sliding_window == 0)
    return bad(std::string("--arch ") + a.name + " needs --sliding-window (its local layers' window)");
  auto mix = type_mix(s.type);
  if (!mix.ok()) return mix.error();
  return {};
}

Status write_random_model(const RandomModelSpec& s, const gguf::GgufFile& vocab_source,
                          const std::filesystem::path& out) {
  STRATA_RETURN_IF_ERROR(validate(s));
  STRATA_ASSIGN_OR_RETURN(TypeMix mix, type_mix(s.type));
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> tokens, vocab_source.get_string_array("tokenizer.ggml.tokens"));
  const int64_t n_vocab = static_cast<int64_t>(tokens.size());
  if (n_vocab == 0) return Error{Code::Corrupt, "key 'tokenizer.ggml.tokens' of the vocabulary source is empty"};

  gguf::GgufWriter w;
  const ArchInfo& info = arch_info(s.arch);
  const std::string a = info.name;
  const auto key = [&a](HParam h) { return hparam_key(a, h); };
  const bool mla = info.traits.mla;
  // MLA: head_dim is the cache row (the reader's), the query head key_length_mla.
  const int64_t head_dim_k_mla = !mla ? 0 : s.head_dim > 0 ? s.head_dim : 3 * s.rope_dims;
  const int64_t head_dim = mla ? s.kv_lora_rank + s.rope_dims : s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_heads;
  const int64_t rope_dims = s.rope_dims > 0 ? s.rope_dims : head_dim;
  // The shape as the reader will see it: the layer table's shape rules take it.
  ModelConfig c;
  c.arch = s.arch;
  static_cast<ArchTraits&>(c) = info.traits;
  c.n_embd = s.n_embd, c.n_layers = s.n_layers, c.n_heads = s.n_heads, c.n_kv_heads = s.n_kv_heads;
  c.head_dim = head_dim, c.n_ff = s.n_ff, c.n_expert = s.n_expert, c.n_expert_used = s.n_expert_used;
  c.n_ff_exp = !info.expert_ff_key || s.n_ff_exp == 0 ? s.n_ff : s.n_ff_exp;
  c.n_ff_shexp = !info.shared_expert ? 0 : s.n_ff_shexp > 0 ? s.n_ff_shexp : s.n_ff;
  c.rope_dims = rope_dims;
  if (mla) {
    c.n_kv_heads = 1;
    c.q_lora_rank = s.q_lora_rank, c.kv_lora_rank = s.kv_lora_rank;
    c.head_dim_k_mla = head_dim_k_mla;
    c.head_dim_v_mla = s.v_head_dim > 0 ? s.v_head_dim : head_dim_k_mla - rope_dims;
    c.n_dense_lead = s.n_dense_lead;
    c.n_ff_shexp = s.n_shared_experts * c.n_ff_exp;
  }
  w.set_string("general.architecture", a);
  w.set_string("general.name", s.name);
  w.set_u32("general.file_type", mix.file_type);
  w.set_u32(key(HParam::ContextLength), static_cast<uint32_t>(s.n_ctx));
  w.set_u32(key(HParam::EmbeddingLength), static_cast<uint32_t>(s.n_embd));
  w.set_u32(key(HParam::BlockCount), static_cast<uint32_t>(s.n_layers));
  w.set_u32(key(HParam::FeedForwardLength), static_cast<uint32_t>(s.n_ff));
  w.set_u32(key(HParam::HeadCount), static_cast<uint32_t>(s.n_heads));
  w.set_u32(key(HParam::HeadCountKv), static_cast<uint32_t>(c.n_kv_heads));
  w.set_f32(key(info.traits.layer_norm ? HParam::LayerNormEpsilon : HParam::RmsEpsilon), info.default_rms_eps);
  w.set_f32(key(HParam::RopeFreqBase), info.default_rope_base);
  w.set_u32(key(HParam::RopeDimensionCount), static_cast<uint32_t>(rope_dims));
  if (mla) {
    // llama.cpp's converter since the attn_k_b / attn_v_b split: key_length is the latent cache row,
    // value_length the latent; the heads' sizes are the _mla keys. q_lora_rank is written even when
    // 0 (llama.cpp requires the key of every non-Lite shape).
    w.set_u32(key(HParam::KeyLength), static_cast<uint32_t>(head_dim));
    w.set_u32(key(HParam::ValueLength), static_cast<uint32_t>(s.kv_lora_rank));
    w.set_u32(key(HParam::KeyLengthMla), static_cast<uint32_t>(c.head_dim_k_mla));
    w.set_u32(key(HParam::ValueLengthMla), static_cast<uint32_t>(c.head_dim_v_mla));
    w.set_u32(key(HParam::QLoraRank), static_cast<uint32_t>(s.q_lora_rank));
    w.set_u32(key(HParam::KvLoraRank), static_cast<uint32_t>(s.kv_lora_rank));
    w.set_u32(key(HParam::LeadingDenseBlockCount), static_cast<uint32_t>(s.n_dense_lead));
    w.set_u32(key(HParam::ExpertSharedCount), static_cast<uint32_t>(s.n_shared_experts));
    w.set_f32(key(HParam::ExpertWeightsScale), s.expert_weights_scale);
    w.set_bool(key(HParam::ExpertWeightsNorm), s.expert_weights_norm);
    w.set_u32(key(HParam::ExpertGatingFunc), s.gating == "sigmoid" ? 2u : 1u);
    if (s.expert_groups > 1) {
      w.set_u32(key(HParam::ExpertGroupCount), static_cast<uint32_t>(s.expert_groups));
      w.set_u32(key(HParam::ExpertGroupUsedCount), static_cast<uint32_t>(s.expert_groups_used));
    }
    if (s.yarn_factor > 0.0f && s.yarn_log_mul > 0.0f) w.set_f32(key(HParam::RopeScalingYarnLogMultiplier), s.yarn_log_mul);
  } else if (head_dim * s.n_heads != s.n_embd) {
    w.set_u32(key(HParam::KeyLength), static_cast<uint32_t>(head_dim));
    w.set_u32(key(HParam::ValueLength), static_cast<uint32_t>(head_dim));
  }
  if (s.sliding_window > 0) w.set_u32(key(HParam::SlidingWindow), static_cast<uint32_t>(s.sliding_window));
  if (s.swa_pattern > 0) w.set_u32(key(HParam::SlidingWindowPattern), static_cast<uint32_t>(s.swa_pattern));
  const bool longrope = info.longrope && s.longrope;
  const int64_t ctx_orig = std::max<int64_t>(1, s.n_ctx / 4);
  if (longrope) {
    w.set_string(key(HParam::RopeScalingType), "longrope");
    w.set_u32(key(HParam::RopeScalingOrigCtx), static_cast<uint32_t>(ctx_orig));
    const double factor = static_cast<double>(s.n_ctx) / static_cast<double>(ctx_orig);
    w.set_f32(key(HParam::RopeScalingAttnFactor),
              static_cast<float>(std::sqrt(1.0 + std::log(factor) / std::log(static_cast<double>(ctx_orig)))));
  }
  if (info.softcaps) {
    w.set_f32(key(HParam::AttnLogitSoftcapping), s.attn_softcap);
    w.set_f32(key(HParam::FinalLogitSoftcapping), s.final_softcap);
  }
  if (info.logit_scale_multiplies) w.set_f32(key(HParam::LogitScale), 0.25f);  // Command R7B's value
  if (info.granite_scales) {  // Granite 3.x 2B's values
    w.set_f32(key(HParam::EmbeddingScale), 12.0f);
    w.set_f32(key(HParam::ResidualScale), 0.22f);
    w.set_f32(key(HParam::LogitScale), 8.0f);
    w.set_f32(key(HParam::AttentionScale), 0.015625f);
  }
  if (s.yarn_factor > 0.0f) {
    w.set_string(key(HParam::RopeScalingType), "yarn");
    w.set_f32(key(HParam::RopeScalingFactor), s.yarn_factor);
    const int64_t orig = s.yarn_orig_ctx > 0 ? s.yarn_orig_ctx
                                             : std::max<int64_t>(1, static_cast<int64_t>(static_cast<float>(s.n_ctx) / s.yarn_factor));
    w.set_u32(key(HParam::RopeScalingOrigCtx), static_cast<uint32_t>(orig));
  }
  if (c.is_moe()) {
    w.set_u32(key(HParam::ExpertCount), static_cast<uint32_t>(s.n_expert));
    w.set_u32(key(HParam::ExpertUsedCount), static_cast<uint32_t>(s.n_expert_used));
    if (info.expert_ff_key) w.set_u32(key(HParam::ExpertFeedForwardLength), static_cast<uint32_t>(c.n_ff_exp));
    if (c.n_ff_shexp > 0 && !info.deepseek_moe)
      w.set_u32(key(HParam::ExpertSharedFeedForwardLength), static_cast<uint32_t>(c.n_ff_shexp));
  }
  w.set_u32(key(HParam::VocabSize), static_cast<uint32_t>(n_vocab));
  for (const auto& [k, value] : vocab_source.metadata()) {
    if (k.rfind("tokenizer.", 0) == 0) w.set(k, value);
  }

  auto matrix = [&](const std::string& name, int64_t cols, int64_t rows, DType want) -> Status {
    const DType type = fit_type(want, cols);
    return w.add_tensor_generated(name, type, {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)},
                                  random_fill(type, cols, rows, s.stddev, 0.0f, name_hash(name, s.seed), s.n_threads,
                                              s.row_pool));
  };
  // n matrices of [rows][cols] (gguf dims [cols, rows, n]): merged experts.
  auto matrices = [&](const std::string& name, int64_t cols, int64_t rows, int64_t n, DType want) -> Status {
    const DType type = fit_type(want, cols);
    return w.add_tensor_generated(
        name, type, {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows), static_cast<uint64_t>(n)},
        random_fill(type, cols, rows * n, s.stddev, 0.0f, name_hash(name, s.seed), s.n_threads, s.row_pool));
  };
  auto vector = [&](const std::string& name, int64_t n, float stddev, float value) -> Status {
    return w.add_tensor_generated(name, DType::F32, {static_cast<uint64_t>(n)},
                                  random_fill(DType::F32, n, 1, stddev, value, name_hash(name, s.seed), 1));
  };

  STRATA_RETURN_IF_ERROR(matrix("token_embd.weight", s.n_embd, n_vocab, mix.base));
  if (longrope) {
    // Per-pair divisors >= 1, as the long-context factors of real files are.
    STRATA_RETURN_IF_ERROR(vector("rope_factors_short.weight", head_dim / 2, 0.05f, 1.1f));
    STRATA_RETURN_IF_ERROR(vector("rope_factors_long.weight", head_dim / 2, 0.5f, 3.0f));
  }
  const std::span<const LayerTensor> table = layer_tensors();
  for (int64_t l = 0; l < s.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const DType more = use_more_bits(l, s.n_layers) ? mix.more_bits : mix.base;
    for (size_t i = 0; i < table.size(); ++i) {
      const LayerTensor& t = table[i];
      const bool wanted = tensor_required(t, c) || (t.view == &LayerWeights::exp_probs_b && s.selection_bias && info.deepseek_moe);
      if (!tensor_needed(t, c, l) || !wanted) continue;
      DType want = t.quant == Quant::F32 ? DType::F32 : t.quant == Quant::MoreBits ? more : mix.base;
      if (mix.experts_own && t.kind == TensorKind::Experts) want = mix.experts;
      const int64_t cols = dim_size(t.cols, c), rows = dim_size(t.rows, c);
      if (tensor_fused(t, c)) {
        // One file tensor for the run of members, in the first member's type.
        if (i > 0 && table[i - 1].fuse == t.fuse) continue;
        int64_t fused_rows = 0;
        for (size_t j = i; j < table.size() && table[j].fuse == t.fuse; ++j) fused_rows += dim_size(table[j].rows, c);
        STRATA_RETURN_IF_ERROR(matrix(b + fused_tensor(t.fuse).name, cols, fused_rows, want));
        continue;
      }
      const std::string name = b + tensor_name(t, c);
      switch (t.kind) {
        case TensorKind::Norm:
        case TensorKind::Bias:
          STRATA_RETURN_IF_ERROR(t.fill == Fill::Ones      ? vector(name, cols, 0.0f, 1.0f)
                                 : t.fill == Fill::NearOne ? vector(name, cols, 0.1f, 1.0f)
                                                           : vector(name, cols, s.stddev, 0.0f));
          break;
        case TensorKind::Matrix:
          STRATA_RETURN_IF_ERROR(matrix(name, cols, rows, want));
          break;
        case TensorKind::Experts:
          STRATA_RETURN_IF_ERROR(matrices(name, cols, rows, dim_size(t.mats, c), want));
          break;
        case TensorKind::ExpertBias:  // [n_expert][cols] f32, 2-D as llama.cpp's converter writes it
          STRATA_RETURN_IF_ERROR(matrix(name, cols, dim_size(t.mats, c), DType::F32));
          break;
      }
    }
  }
  STRATA_RETURN_IF_ERROR(vector("output_norm.weight", s.n_embd, 0.0f, 1.0f));
  if (info.traits.has_norm_bias) STRATA_RETURN_IF_ERROR(vector("output_norm.bias", s.n_embd, s.stddev, 0.0f));
  // An architecture that ties its head to the embedding (gemma3) gets no output.weight.
  if (!info.ties_output) STRATA_RETURN_IF_ERROR(matrix("output.weight", s.n_embd, n_vocab, mix.more_bits));
  return w.write(out);
}

}  // namespace strata::model
