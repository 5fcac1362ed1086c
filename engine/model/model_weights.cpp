// engine/model/model_weights.cpp — binds the block tensors the arch table lists (3-D merged
// experts, fused row ranges included) and the model-level tensors.
#include "engine/model/model_weights.h"

#include <span>
#include <string>

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
  TensorView v = m.row_slice(first, n);
  v.name = m.name + "[" + role + "]";
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

// One f32 bias row per expert (gguf dims [cols, n_mats]), as n_mats matrices of one row.
Expected<TensorView> bind_expert_bias(const gguf::GgufFile& f, const std::string& name, int64_t cols, int64_t n_mats,
                                      bool optional) {
  STRATA_ASSIGN_OR_RETURN(TensorView v, bind(f, name, cols, n_mats, optional, true));
  if (!v.present()) return v;
  v.rows = 1;
  v.n_mats = n_mats;
  v.mat_stride = static_cast<uint64_t>(cols) * sizeof(float);
  return v;
}

// The label of a view inside a fused tensor: its own name less the "attn_"/"ffn_" prefix and
// ".weight" ("attn_q.weight" -> "q"), so that phi3's Q is "blk.N.attn_qkv.weight[q]".
std::string fused_label(const std::string& name) {
  const size_t underscore = name.find('_'), dot = name.find('.');
  return name.substr(underscore + 1, dot - underscore - 1);
}

Error block_error(const TensorView& m) {
  return Error{Code::Corrupt, "tensor '" + m.name + "': row length " + std::to_string(m.cols) +
                                  " is not a multiple of the " + kernels::dtype_name(m.type) + " block size " +
                                  std::to_string(kernels::traits(m.type).block_elems)};
}

// One block's tensors, as layer_tensors() lists them: the ones this model needs, required or
// optional as its architecture's traits say; a fused file tensor becomes its members' row ranges.
Status bind_layer(const gguf::GgufFile& f, const ModelConfig& c, int64_t index, LayerWeights& l) {
  const std::string b = "blk." + std::to_string(index) + ".";
  const std::span<const LayerTensor> table = layer_tensors();
  for (size_t i = 0; i < table.size(); ++i) {
    const LayerTensor& t = table[i];
    if (!tensor_needed(t, c, index)) continue;
    TensorView& view = l.*t.view;
    const int64_t cols = dim_size(t.cols, c);
    if (tensor_fused(t, c)) {
      if (i > 0 && table[i - 1].fuse == t.fuse) continue;  // bound with the first member
      int64_t rows = 0;
      for (size_t j = i; j < table.size() && table[j].fuse == t.fuse; ++j) rows += dim_size(table[j].rows, c);
      STRATA_ASSIGN_OR_RETURN(TensorView fused, bind(f, b + fused_tensor(t.fuse).name, cols, rows, false, false));
      int64_t first = 0;
      for (size_t j = i; j < table.size() && table[j].fuse == t.fuse; ++j) {
        const int64_t n = dim_size(table[j].rows, c);
        l.*table[j].view = row_range(fused, fused_label(table[j].name), first, n);
        first += n;
      }
      continue;
    }
    const std::string name = b + tensor_name(t, c);
    if (t.kind == TensorKind::Experts) {
      STRATA_ASSIGN_OR_RETURN(view, bind3(f, name, cols, dim_size(t.rows, c), dim_size(t.mats, c)));
    } else if (t.kind == TensorKind::ExpertBias) {
      STRATA_ASSIGN_OR_RETURN(view, bind_expert_bias(f, name, cols, dim_size(t.mats, c), !tensor_required(t, c)));
    } else {
      const bool vector = t.kind == TensorKind::Norm || t.kind == TensorKind::Bias;  // f32 only
      STRATA_ASSIGN_OR_RETURN(view, bind(f, name, cols, dim_size(t.rows, c), !tensor_required(t, c), vector));
    }
  }
  // One expert's gate and up run as a pair (one activation kernel over both).
  if (l.ffn_gate_exps.present() && l.ffn_gate_exps.type != l.ffn_up_exps.type)
    return Error{Code::Unsupported, "tensors '" + l.ffn_gate_exps.name + "' (" +
                                        kernels::dtype_name(l.ffn_gate_exps.type) + ") and '" + l.ffn_up_exps.name +
                                        "' (" + kernels::dtype_name(l.ffn_up_exps.type) + ") differ in type"};
  // A quantized row cannot end inside a block.
  for (const LayerTensor& t : table) {
    const TensorView& m = l.*t.view;
    if (t.kind == TensorKind::Matrix && m.present() && m.cols % kernels::traits(m.type).block_elems != 0)
      return block_error(m);
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

TensorView TensorView::row_slice(int64_t first, int64_t n) const {
  TensorView v = *this;
  const auto rb = static_cast<uint64_t>(kernels::row_bytes(type, cols));
  v.data = data ? data + static_cast<uint64_t>(first) * rb : nullptr;
  v.rows = n;
  v.n_bytes = static_cast<uint64_t>(n) * rb;
  return v;
}

uint64_t LayerWeights::n_bytes() const {
  uint64_t total = 0;
  for (const LayerTensor& t : layer_tensors()) total += (this->*t.view).n_bytes;
  return total;
}

uint64_t LayerWeights::part_bytes(Part part) const {
  uint64_t total = 0;
  for (const LayerTensor& t : layer_tensors())
    if (t.part == part) total += (this->*t.view).n_bytes;
  return total;
}

uint64_t LayerWeights::expert_bytes() const { return part_bytes(Part::Experts); }

Expected<ModelWeights> bind_weights(const gguf::GgufFile& f, const ModelConfig& c) {
  ModelWeights w;
  STRATA_ASSIGN_OR_RETURN(w.token_embd, bind(f, "token_embd.weight", c.n_embd, c.n_vocab, false, false));
  STRATA_ASSIGN_OR_RETURN(w.output_norm, bind(f, "output_norm.weight", c.n_embd, 0, false, true));
  STRATA_ASSIGN_OR_RETURN(w.output_norm_b, bind(f, "output_norm.bias", c.n_embd, 0, !c.has_norm_bias, true));
  // The head: output.weight, else (or always, where the architecture says: cohere2) the embedding.
  if (!c.info().output_is_embedding) {
    STRATA_ASSIGN_OR_RETURN(w.output, bind(f, "output.weight", c.n_embd, c.n_vocab, true, false));
  }
  if (!w.output.present()) w.output = w.token_embd;
  if (c.info().longrope) {
    STRATA_ASSIGN_OR_RETURN(w.rope_freqs, bind(f, "rope_factors_short.weight", c.rope_dims / 2, 0, true, true));
    STRATA_ASSIGN_OR_RETURN(w.rope_freqs_long, bind(f, "rope_factors_long.weight", c.rope_dims / 2, 0, true, true));
  } else {
    STRATA_ASSIGN_OR_RETURN(w.rope_freqs, bind(f, "rope_freqs.weight", c.rope_dims / 2, 0, true, true));
  }

  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int64_t i = 0; i < c.n_layers; ++i) STRATA_RETURN_IF_ERROR(bind_layer(f, c, i, w.layers[static_cast<size_t>(i)]));
  return w;
}

}  // namespace strata::model
