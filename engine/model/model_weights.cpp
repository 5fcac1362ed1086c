// engine/model/model_weights.cpp — tensor names and shapes of every supported layout, the
// mixture-of-experts tensors (3-D merged experts, router, shared expert) included.
#include "engine/model/model_weights.h"


namespace strata::model {
namespace {

std::string dims_text(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Binds one tensor; rows == 0 means 1-D of length cols. f32_only for norms and biases.
Expected<TensorView> bind(const gguf::GgufFile& f, const std::string& name, int64_t cols, int64_t rows,
                          bool optional, bool f32_only) {
  TensorView v;
  v.name = name;
  const gguf::TensorInfo* t = f.find_tensor(name);
  if (!t) {
    if (optional) return v;
    return Error{Code::NotFound, "tensor '" + name + "' is missing"};
  }
  const std::vector<uint64_t> want = rows == 0 ? std::vector<uint64_t>{static_cast<uint64_t>(cols)}
                                               : std::vector<uint64_t>{static_cast<uint64_t>(cols),
                                                                       static_cast<uint64_t>(rows)};
  if (t->dims != want)
    return Error{Code::Corrupt, "tensor '" + name + "': shape " + dims_text(t->dims) + ", expected " +
                                    dims_text(want)};
  const kernels::DTypeTraits& tr = kernels::traits(t->type);
  if (f32_only && t->type != kernels::DType::F32)
    return Error{Code::Unsupported, "tensor '" + name + "': type " + tr.name + ", expected f32"};
  if (!tr.weight_type)
    return Error{Code::Unsupported, "tensor '" + name + "': type " + tr.name + " is not a weight type"};
  v.data = f.tensor_data(*t);
  v.type = t->type;
  v.cols = cols;
  v.rows = rows == 0 ? 1 : rows;
  v.n_bytes = t->n_bytes;
  return v;
}

// Rows [first, first + n) of a matrix view, as a matrix of its own.
TensorView row_range(const TensorView& m, const std::string& role, int64_t first, int64_t n) {
  TensorView v = m;
  const int64_t rb = kernels::row_bytes(m.type, m.cols);
  v.name = m.name + "[" + role + "]";
  v.data = m.data + first * rb;
  v.rows = n;
  v.n_bytes = static_cast<uint64_t>(n * rb);
  return v;
}

// A 3-D tensor of n_mats matrices of [rows][cols] (gguf dims [cols, rows, n_mats]).
Expected<TensorView> bind3(const gguf::GgufFile& f, const std::string& name, int64_t cols, int64_t rows,
                           int64_t n_mats) {
  TensorView v;
  v.name = name;
  const gguf::TensorInfo* t = f.find_tensor(name);
  if (!t) return Error{Code::NotFound, "tensor '" + name + "' is missing"};
  const std::vector<uint64_t> want = {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows),
                                      static_cast<uint64_t>(n_mats)};
  if (t->dims != want)
    return Error{Code::Corrupt, "tensor '" + name + "': shape " + dims_text(t->dims) + ", expected " +
                                    dims_text(want) + " ([n_embd or n_ff, n_ff or n_embd, n_expert])"};
  const kernels::DTypeTraits& tr = kernels::traits(t->type);
  if (!tr.weight_type)
    return Error{Code::Unsupported, "tensor '" + name + "': type " + tr.name + " is not a weight type"};
  if (cols % tr.block_elems != 0)
    return Error{Code::Corrupt, "tensor '" + name + "': row length " + std::to_string(cols) +
                                    " is not a multiple of the " + tr.name + " block size " +
                                    std::to_string(tr.block_elems)};
  v.data = f.tensor_data(*t);
  v.type = t->type;
  v.cols = cols;
  v.rows = rows;
  v.n_mats = n_mats;
  v.mat_stride = static_cast<uint64_t>(rows * kernels::row_bytes(t->type, cols));
  v.n_bytes = t->n_bytes;
  return v;
}

// The router, routed experts and shared expert of one layer.
Status bind_moe(const gguf::GgufFile& f, const ModelConfig& c, const std::string& b, LayerWeights& l) {
  STRATA_ASSIGN_OR_RETURN(l.ffn_gate_inp, bind(f, b + "ffn_gate_inp.weight", c.n_embd, c.n_expert, false, false));
  STRATA_ASSIGN_OR_RETURN(l.ffn_gate_exps, bind3(f, b + "ffn_gate_exps.weight", c.n_embd, c.n_ff_exp, c.n_expert));
  STRATA_ASSIGN_OR_RETURN(l.ffn_up_exps, bind3(f, b + "ffn_up_exps.weight", c.n_embd, c.n_ff_exp, c.n_expert));
  STRATA_ASSIGN_OR_RETURN(l.ffn_down_exps, bind3(f, b + "ffn_down_exps.weight", c.n_ff_exp, c.n_embd, c.n_expert));
  if (l.ffn_gate_exps.type != l.ffn_up_exps.type)
    return Error{Code::Unsupported, "tensors '" + l.ffn_gate_exps.name + "' (" +
                                        kernels::dtype_name(l.ffn_gate_exps.type) + ") and '" + l.ffn_up_exps.name +
                                        "' (" + kernels::dtype_name(l.ffn_up_exps.type) + ") differ in type"};
  if (c.n_ff_shexp > 0) {
    STRATA_ASSIGN_OR_RETURN(l.ffn_gate_shexp, bind(f, b + "ffn_gate_shexp.weight", c.n_embd, c.n_ff_shexp, false, false));
    STRATA_ASSIGN_OR_RETURN(l.ffn_up_shexp, bind(f, b + "ffn_up_shexp.weight", c.n_embd, c.n_ff_shexp, false, false));
    STRATA_ASSIGN_OR_RETURN(l.ffn_down_shexp, bind(f, b + "ffn_down_shexp.weight", c.n_ff_shexp, c.n_embd, false, false));
    STRATA_ASSIGN_OR_RETURN(l.ffn_gate_inp_shexp,
                            bind(f, b + "ffn_gate_inp_shexp.weight", c.n_embd, 0, !c.has_shexp_gate, true));
  }
  for (const TensorView* m : {&l.ffn_gate_inp, &l.ffn_gate_shexp, &l.ffn_up_shexp, &l.ffn_down_shexp}) {
    if (!m->present()) continue;
    const int64_t block = kernels::traits(m->type).block_elems;
    if (m->cols % block != 0)
      return Error{Code::Corrupt, "tensor '" + m->name + "': row length " + std::to_string(m->cols) +
                                      " is not a multiple of the " + kernels::dtype_name(m->type) + " block size " +
                                      std::to_string(block)};
  }
  return {};
}

}  // namespace

TensorView TensorView::mat(int64_t i) const {
  TensorView v = *this;
  v.name = name + "[" + std::to_string(i) + "]";
  v.data = data ? data + static_cast<uint64_t>(i) * mat_stride : nullptr;
  v.n_mats = 1;
  v.n_bytes = mat_stride;
  return v;
}

uint64_t LayerWeights::n_bytes() const {
  uint64_t total = 0;
  for (const TensorView* t : {&attn_norm, &wq, &wk, &wv, &bq, &bk, &bv, &q_norm, &k_norm, &wo, &post_attn_norm,
                              &ffn_norm, &w_gate, &w_up, &w_down, &post_ffn_norm, &ffn_gate_inp, &ffn_gate_exps,
                              &ffn_up_exps, &ffn_down_exps, &ffn_gate_inp_shexp, &ffn_gate_shexp, &ffn_up_shexp,
                              &ffn_down_shexp})
    total += t->n_bytes;
  return total;
}

uint64_t LayerWeights::expert_bytes() const {
  return ffn_gate_exps.n_bytes + ffn_up_exps.n_bytes + ffn_down_exps.n_bytes;
}

Expected<ModelWeights> bind_weights(const gguf::GgufFile& f, const ModelConfig& c) {
  ModelWeights w;
  STRATA_ASSIGN_OR_RETURN(w.token_embd, bind(f, "token_embd.weight", c.n_embd, c.n_vocab, false, false));
  STRATA_ASSIGN_OR_RETURN(w.output_norm, bind(f, "output_norm.weight", c.n_embd, 0, false, true));
  STRATA_ASSIGN_OR_RETURN(w.output, bind(f, "output.weight", c.n_embd, c.n_vocab, true, false));
  if (!w.output.present()) w.output = w.token_embd;
  if (c.arch == Arch::Phi3) {
    STRATA_ASSIGN_OR_RETURN(w.rope_freqs, bind(f, "rope_factors_short.weight", c.rope_dims / 2, 0, true, true));
    STRATA_ASSIGN_OR_RETURN(w.rope_freqs_long, bind(f, "rope_factors_long.weight", c.rope_dims / 2, 0, true, true));
  } else {
    STRATA_ASSIGN_OR_RETURN(w.rope_freqs, bind(f, "rope_freqs.weight", c.rope_dims / 2, 0, true, true));
  }

  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int64_t i = 0; i < c.n_layers; ++i) {
    LayerWeights& l = w.layers[static_cast<size_t>(i)];
    const std::string b = "blk." + std::to_string(i) + ".";
    STRATA_ASSIGN_OR_RETURN(l.attn_norm, bind(f, b + "attn_norm.weight", c.n_embd, 0, false, true));
    if (c.fused_qkv) {
      STRATA_ASSIGN_OR_RETURN(TensorView qkv, bind(f, b + "attn_qkv.weight", c.n_embd, c.q_dim() + 2 * c.kv_dim(),
                                                   false, false));
      l.wq = row_range(qkv, "q", 0, c.q_dim());
      l.wk = row_range(qkv, "k", c.q_dim(), c.kv_dim());
      l.wv = row_range(qkv, "v", c.q_dim() + c.kv_dim(), c.kv_dim());
    } else {
      STRATA_ASSIGN_OR_RETURN(l.wq, bind(f, b + "attn_q.weight", c.n_embd, c.q_dim(), false, false));
      STRATA_ASSIGN_OR_RETURN(l.wk, bind(f, b + "attn_k.weight", c.n_embd, c.kv_dim(), false, false));
      STRATA_ASSIGN_OR_RETURN(l.wv, bind(f, b + "attn_v.weight", c.n_embd, c.kv_dim(), false, false));
    }
    STRATA_ASSIGN_OR_RETURN(l.wo, bind(f, b + "attn_output.weight", c.q_dim(), c.n_embd, false, false));
    const bool no_qk_norm = !c.has_qk_norm;
    STRATA_ASSIGN_OR_RETURN(l.q_norm, bind(f, b + "attn_q_norm.weight", c.head_dim, 0, no_qk_norm, true));
    STRATA_ASSIGN_OR_RETURN(l.k_norm, bind(f, b + "attn_k_norm.weight", c.head_dim, 0, no_qk_norm, true));
    const bool no_post = !c.has_post_norms;
    STRATA_ASSIGN_OR_RETURN(l.post_attn_norm, bind(f, b + "post_attention_norm.weight", c.n_embd, 0, no_post, true));
    STRATA_ASSIGN_OR_RETURN(l.post_ffn_norm, bind(f, b + "post_ffw_norm.weight", c.n_embd, 0, no_post, true));
    const bool bias_optional = !c.has_qkv_bias;
    STRATA_ASSIGN_OR_RETURN(l.bq, bind(f, b + "attn_q.bias", c.q_dim(), 0, bias_optional, true));
    STRATA_ASSIGN_OR_RETURN(l.bk, bind(f, b + "attn_k.bias", c.kv_dim(), 0, bias_optional, true));
    STRATA_ASSIGN_OR_RETURN(l.bv, bind(f, b + "attn_v.bias", c.kv_dim(), 0, bias_optional, true));
    STRATA_ASSIGN_OR_RETURN(l.ffn_norm, bind(f, b + "ffn_norm.weight", c.n_embd, 0, false, true));
    if (c.is_moe()) {
      STRATA_RETURN_IF_ERROR(bind_moe(f, c, b, l));
    } else if (c.fused_gate_up) {
      STRATA_ASSIGN_OR_RETURN(TensorView gate_up, bind(f, b + "ffn_up.weight", c.n_embd, 2 * c.n_ff, false, false));
      l.w_gate = row_range(gate_up, "gate", 0, c.n_ff);
      l.w_up = row_range(gate_up, "up", c.n_ff, c.n_ff);
    } else {
      STRATA_ASSIGN_OR_RETURN(l.w_gate, bind(f, b + "ffn_gate.weight", c.n_embd, c.n_ff, false, false));
      STRATA_ASSIGN_OR_RETURN(l.w_up, bind(f, b + "ffn_up.weight", c.n_embd, c.n_ff, false, false));
    }
    if (!c.is_moe()) {
      STRATA_ASSIGN_OR_RETURN(l.w_down, bind(f, b + "ffn_down.weight", c.n_ff, c.n_embd, false, false));
    }
    for (const TensorView* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      if (!m->present()) continue;
      const int64_t block = kernels::traits(m->type).block_elems;
      if (m->cols % block != 0)
        return Error{Code::Corrupt, "tensor '" + m->name + "': row length " + std::to_string(m->cols) +
                                        " is not a multiple of the " + kernels::dtype_name(m->type) +
                                        " block size " + std::to_string(block)};
    }
  }
  return w;
}

}  // namespace strata::model
