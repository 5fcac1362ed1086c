// engine/model/model_config.cpp — GGUF metadata -> ModelConfig for llama and qwen2.
#include "engine/model/model_config.h"

#include <cmath>

namespace strata::model {

const char* arch_name(Arch arch) {
  switch (arch) {
    case Arch::Llama: return "llama";
    case Arch::Qwen2: return "qwen2";
  }
  return "?";
}

namespace {

Expected<int64_t> positive(const gguf::GgufFile& f, const std::string& key, int64_t max) {
  STRATA_ASSIGN_OR_RETURN(uint64_t v, f.get_uint(key));
  if (v == 0 || v > static_cast<uint64_t>(max))
    return Error{Code::Corrupt, "key '" + key + "': value " + std::to_string(v) +
                                    " outside [1, " + std::to_string(max) + "]"};
  return static_cast<int64_t>(v);
}

}  // namespace

Expected<ModelConfig> read_model_config(const gguf::GgufFile& f) {
  ModelConfig c;
  const std::string arch = f.architecture();
  if (arch == "llama") {
    c.arch = Arch::Llama;
    c.rope_style = RopeStyle::Interleaved;
  } else if (arch == "qwen2") {
    c.arch = Arch::Qwen2;
    c.rope_style = RopeStyle::Neox;
    c.has_qkv_bias = true;
  } else if (arch.empty()) {
    return Error{Code::NotFound, "key 'general.architecture' is missing: not a model file"};
  } else {
    return Error{Code::Unsupported, "architecture '" + arch + "' is not supported (llama, qwen2 are)"};
  }
  const std::string p = arch + ".";
  STRATA_ASSIGN_OR_RETURN(c.name, f.get_string_or("general.name", ""));
  STRATA_ASSIGN_OR_RETURN(c.n_embd, positive(f, p + "embedding_length", 1 << 17));
  STRATA_ASSIGN_OR_RETURN(c.n_layers, positive(f, p + "block_count", 4096));
  STRATA_ASSIGN_OR_RETURN(c.n_ff, positive(f, p + "feed_forward_length", 1 << 20));
  STRATA_ASSIGN_OR_RETURN(c.n_heads, positive(f, p + "attention.head_count", 4096));
  STRATA_ASSIGN_OR_RETURN(uint64_t kv, f.get_uint_or(p + "attention.head_count_kv", c.n_heads));
  c.n_kv_heads = static_cast<int64_t>(kv);
  if (c.n_kv_heads <= 0 || c.n_kv_heads > c.n_heads || c.n_heads % c.n_kv_heads != 0)
    return Error{Code::Corrupt, "key '" + p + "attention.head_count_kv': " + std::to_string(kv) +
                                    " does not divide head_count " + std::to_string(c.n_heads)};
  STRATA_ASSIGN_OR_RETURN(uint64_t ctx, f.get_uint_or(p + "context_length", 2048));
  if (ctx == 0 || ctx > (1u << 24))
    return Error{Code::Corrupt, "key '" + p + "context_length': " + std::to_string(ctx) + " outside [1, 16777216]"};
  c.n_ctx_train = static_cast<int64_t>(ctx);

  if (c.n_embd % c.n_heads != 0 && !f.find(p + "attention.key_length"))
    return Error{Code::Corrupt, "embedding_length " + std::to_string(c.n_embd) +
                                    " is not a multiple of head_count " + std::to_string(c.n_heads)};
  STRATA_ASSIGN_OR_RETURN(uint64_t head_dim, f.get_uint_or(p + "attention.key_length",
                                                           static_cast<uint64_t>(c.n_embd / c.n_heads)));
  STRATA_ASSIGN_OR_RETURN(uint64_t v_dim, f.get_uint_or(p + "attention.value_length", head_dim));
  if (head_dim == 0 || head_dim > 1024 || head_dim % 2 != 0 || v_dim != head_dim)
    return Error{Code::Unsupported, "head size " + std::to_string(head_dim) + " (value size " +
                                        std::to_string(v_dim) + ") is not supported (even, <= 1024, K == V)"};
  c.head_dim = static_cast<int64_t>(head_dim);
  STRATA_ASSIGN_OR_RETURN(uint64_t rope_dims, f.get_uint_or(p + "rope.dimension_count", head_dim));
  if (rope_dims == 0 || rope_dims > head_dim || rope_dims % 2 != 0)
    return Error{Code::Corrupt, "key '" + p + "rope.dimension_count': " + std::to_string(rope_dims) +
                                    " must be even and <= head size " + std::to_string(head_dim)};
  c.rope_dims = static_cast<int64_t>(rope_dims);

  STRATA_ASSIGN_OR_RETURN(double eps, f.get_float_or(p + "attention.layer_norm_rms_epsilon", 1e-5));
  if (!(eps > 0.0 && eps < 1.0))
    return Error{Code::Corrupt, "key '" + p + "attention.layer_norm_rms_epsilon': " + std::to_string(eps)};
  c.rms_eps = static_cast<float>(eps);
  STRATA_ASSIGN_OR_RETURN(double base, f.get_float_or(p + "rope.freq_base", 10000.0));
  if (!(base > 1.0 && std::isfinite(base)))
    return Error{Code::Corrupt, "key '" + p + "rope.freq_base': " + std::to_string(base)};
  c.rope_freq_base = static_cast<float>(base);

  STRATA_ASSIGN_OR_RETURN(std::string scaling, f.get_string_or(p + "rope.scaling.type", "none"));
  if (scaling == "linear") {
    STRATA_ASSIGN_OR_RETURN(double factor, f.get_float_or(p + "rope.scaling.factor", 1.0));
    if (!(factor >= 1.0 && factor < 1e6))
      return Error{Code::Corrupt, "key '" + p + "rope.scaling.factor': " + std::to_string(factor)};
    c.rope_freq_scale = static_cast<float>(1.0 / factor);
  } else if (scaling != "none" && !scaling.empty()) {
    return Error{Code::Unsupported, "rope scaling '" + scaling + "' is not supported (none, linear are)"};
  }

  const gguf::TensorInfo* embd = f.find_tensor("token_embd.weight");
  if (!embd) return Error{Code::NotFound, "tensor 'token_embd.weight' is missing"};
  if (embd->dims.size() != 2)
    return Error{Code::Corrupt, "tensor 'token_embd.weight': expected 2 dims, found " + std::to_string(embd->dims.size())};
  c.n_vocab = static_cast<int64_t>(embd->dims[1]);
  c.tied_output = f.find_tensor("output.weight") == nullptr;
  return c;
}

}  // namespace strata::model
