// engine/exec/placed_weights.cpp — row and column slicing of (quantized) matrices into buffers.
#include "engine/exec/placed_weights.h"

#include <cstring>
#include <vector>

namespace strata::exec {
namespace {

using model::TensorView;

bool reads_in_place(const backend::Device& device) { return device.caps().reads_weights_in_place; }

// Packs slices into host memory (the device buffer itself where the host can write it, else a
// staging copy), in the order they are added; the views it returns point at device memory
// (device_base + the same offset).
class Packer {
 public:
  Packer(uint8_t* host_base, uint8_t* device_base) : cursor_(host_base), host_base_(host_base), device_base_(device_base) {}

  // Rows [r0, r1) of a matrix (or elements of a vector, rows == 1 with cols sliced by caller).
  TensorView rows(const TensorView& t, int64_t r0, int64_t r1) {
    const int64_t rb = kernels::row_bytes(t.type, t.cols);
    TensorView out = t;
    out.rows = r1 - r0;
    out.n_bytes = static_cast<uint64_t>(out.rows * rb);
    out.data = cursor_;
    std::memcpy(cursor_, t.data + r0 * rb, out.n_bytes);
    cursor_ += out.n_bytes;
    return out;
  }
  // Elements [a, b) of a 1-D f32 vector.
  TensorView elements(const TensorView& t, int64_t a, int64_t b) {
    if (!t.present()) return t;
    TensorView out = t;
    out.cols = b - a;
    out.n_bytes = static_cast<uint64_t>(out.cols) * sizeof(float);
    out.data = cursor_;
    std::memcpy(cursor_, t.data + a * static_cast<int64_t>(sizeof(float)), out.n_bytes);
    cursor_ += out.n_bytes;
    return out;
  }
  // Matrices [i0, i1) of a 3-D tensor (a run of experts), as a 3-D view of i1 - i0 matrices.
  TensorView mats(const TensorView& t, int64_t i0, int64_t i1) {
    if (!t.present()) return t;
    TensorView out = t;
    out.n_mats = i1 - i0;
    out.n_bytes = static_cast<uint64_t>(out.n_mats) * t.mat_stride;
    out.data = cursor_;
    std::memcpy(cursor_, t.data + static_cast<uint64_t>(i0) * t.mat_stride, out.n_bytes);
    cursor_ += out.n_bytes;
    return out;
  }
  // A whole tensor (or an absent one).
  TensorView whole(const TensorView& t) {
    if (!t.present()) return t;
    TensorView out = t;
    out.data = cursor_;
    std::memcpy(cursor_, t.data, t.n_bytes);
    cursor_ += t.n_bytes;
    return out;
  }
  // Columns [c0, c1) of every row; c0, c1 are multiples of the block size (tensor_split ensures it).
  TensorView cols(const TensorView& t, int64_t c0, int64_t c1) {
    const kernels::DTypeTraits& tr = kernels::traits(t.type);
    const int64_t rb = kernels::row_bytes(t.type, t.cols);
    const int64_t off = c0 / tr.block_elems * tr.block_bytes;
    const int64_t nb = kernels::row_bytes(t.type, c1 - c0);
    TensorView out = t;
    out.cols = c1 - c0;
    out.n_bytes = static_cast<uint64_t>(nb * t.rows);
    out.data = cursor_;
    for (int64_t r = 0; r < t.rows; ++r) std::memcpy(cursor_ + r * nb, t.data + r * rb + off, static_cast<size_t>(nb));
    cursor_ += out.n_bytes;
    return out;
  }

 private:
  uint8_t* cursor_;
  uint8_t* host_base_;
  uint8_t* device_base_;

 public:
  // Rebases the views of this packer from host to device addresses.
  void rebase(TensorView& t) const {
    if (t.present()) t.data = device_base_ + (t.data - host_base_);
  }
};

}  // namespace

Expected<TensorView> place_tensor(backend::Device& device, const TensorView& t, BufferList& keep) {
  if (!t.present()) return t;
  if (reads_in_place(device)) {
    STRATA_ASSIGN_OR_RETURN(auto buf, device.adopt(t.data, t.n_bytes, backend::BufferUse::Weights));
    keep.push_back(std::move(buf));
    return t;
  }
  STRATA_ASSIGN_OR_RETURN(auto buf, device.allocate(t.n_bytes, backend::BufferUse::Weights));
  TensorView out = t;
  STRATA_RETURN_IF_ERROR(device.copy_from_host({t.data, t.n_bytes, buf->data(), t.n_bytes, t.n_bytes, 1}));
  out.data = buf->data();
  keep.push_back(std::move(buf));
  return out;
}

Expected<ShardWeights> place_shard(backend::Device& device, const model::ModelConfig& c, const model::LayerWeights& l,
                                   const plan::LayerShard& s, BufferList& keep, unsigned parts, PartBytes* charged) {
  ShardWeights w;
  const int64_t group = c.n_heads / c.n_kv_heads;
  const bool attention = (parts & kAttentionPart) != 0, ffn = (parts & kFfnPart) != 0,
             experts = (parts & kExpertsPart) != 0 && l.is_moe();
  w.n_kv_heads = attention ? s.n_kv_heads() : 0;
  w.n_heads = w.n_kv_heads * group;
  w.n_ff = ffn ? s.n_ff() : 0;
  w.expert_begin = experts ? s.expert_begin : 0;
  w.expert_end = experts ? s.expert_end : 0;
  const plan::LayerShard whole = plan::whole_layer(c);
  for (const TensorView* t : {&l.ffn_gate_inp, &l.ffn_gate_exps, &l.ffn_up_exps, &l.ffn_down_exps, &l.ffn_gate_shexp,
                              &l.ffn_up_shexp, &l.ffn_down_shexp}) {
    if (t->present() && !device.supports(t->type))
      return Error{Code::Unsupported, "device '" + device.id() + "' cannot run " + kernels::dtype_name(t->type) +
                                          " weights ('" + t->name + "')"};
  }
  if (s.expert_begin < 0 || s.expert_end < s.expert_begin || s.expert_end > c.n_expert)
    return Error{Code::InvalidArgument, "experts [" + std::to_string(s.expert_begin) + ", " +
                                            std::to_string(s.expert_end) + ") of a layer with " +
                                            std::to_string(c.n_expert) + " experts"};
  const int64_t hd = c.head_dim;
  const int64_t q0 = s.kv_head_begin * group * hd, q1 = s.kv_head_end * group * hd;
  const int64_t k0 = s.kv_head_begin * hd, k1 = s.kv_head_end * hd;
  PartBytes placed;
  // One part: in place on the CPU when it is not cut (the mapping's own bytes, accounted), else
  // packed into one device buffer (through a staging copy where the host cannot write it).
  // `pack` fills the views from a Packer; `in_place` from the mapping.
  auto place_part = [&](uint64_t bytes, bool uncut, const uint8_t* first, auto&& in_place, auto&& pack,
                        std::vector<TensorView*> views, uint64_t& charged_bytes) -> Status {
    if (bytes == 0) return {};
    if (uncut && reads_in_place(device)) {
      STRATA_ASSIGN_OR_RETURN(auto buf, device.adopt(first, bytes, backend::BufferUse::Weights));
      charged_bytes += buf->size();
      keep.push_back(std::move(buf));
      in_place();
      return {};
    }
    STRATA_ASSIGN_OR_RETURN(auto buf, device.allocate(bytes, backend::BufferUse::Weights));
    std::vector<uint8_t> staging;
    uint8_t* host = buf->host();
    if (!host) {
      staging.resize(bytes);
      host = staging.data();
    }
    Packer p(host, buf->data());
    pack(p);
    if (!staging.empty()) {
      STRATA_RETURN_IF_ERROR(device.copy_from_host({staging.data(), bytes, buf->data(), bytes, bytes, 1}));
      for (TensorView* t : views) p.rebase(*t);
    }
    charged_bytes += buf->size();
    keep.push_back(std::move(buf));
    return {};
  };
  if (attention) {
    const bool uncut = s.kv_head_begin == 0 && s.kv_head_end == whole.kv_head_end;
    STRATA_RETURN_IF_ERROR(place_part(
        plan::shard_attention_bytes(c, l, s), uncut, l.wq.data,
        [&] {
          w.attn_norm = l.attn_norm, w.wq = l.wq, w.wk = l.wk, w.wv = l.wv, w.bq = l.bq, w.bk = l.bk, w.bv = l.bv;
          w.wo = l.wo, w.q_norm = l.q_norm, w.k_norm = l.k_norm, w.post_attn_norm = l.post_attn_norm;
        },
        [&](Packer& p) {
          w.attn_norm = p.elements(l.attn_norm, 0, c.n_embd);
          w.q_norm = p.elements(l.q_norm, 0, hd);
          w.k_norm = p.elements(l.k_norm, 0, hd);
          w.post_attn_norm = p.elements(l.post_attn_norm, 0, c.n_embd);
          w.bq = p.elements(l.bq, q0, q1);
          w.bk = p.elements(l.bk, k0, k1);
          w.bv = p.elements(l.bv, k0, k1);
          w.wq = p.rows(l.wq, q0, q1);
          w.wk = p.rows(l.wk, k0, k1);
          w.wv = p.rows(l.wv, k0, k1);
          w.wo = p.cols(l.wo, q0, q1);
        },
        {&w.attn_norm, &w.q_norm, &w.k_norm, &w.post_attn_norm, &w.bq, &w.bk, &w.bv, &w.wq, &w.wk, &w.wv, &w.wo},
        placed.attention));
  }
  if (ffn) {
    // An MoE block's FFN part (router, shared expert) is never cut; a dense one by its units.
    const bool uncut = l.is_moe() || (s.ff_begin == 0 && s.ff_end == whole.ff_end);
    STRATA_RETURN_IF_ERROR(place_part(
        plan::shard_ffn_bytes(c, l, s), uncut, l.is_moe() ? l.ffn_gate_inp.data : l.w_gate.data,
        [&] {
          w.ffn_norm = l.ffn_norm, w.post_ffn_norm = l.post_ffn_norm, w.w_gate = l.w_gate, w.w_up = l.w_up;
          w.w_down = l.w_down, w.ffn_gate_inp = l.ffn_gate_inp, w.ffn_gate_inp_shexp = l.ffn_gate_inp_shexp;
          w.ffn_gate_shexp = l.ffn_gate_shexp, w.ffn_up_shexp = l.ffn_up_shexp, w.ffn_down_shexp = l.ffn_down_shexp;
        },
        [&](Packer& p) {
          w.ffn_norm = p.elements(l.ffn_norm, 0, c.n_embd);
          w.post_ffn_norm = p.elements(l.post_ffn_norm, 0, c.n_embd);
          w.ffn_gate_inp_shexp = p.whole(l.ffn_gate_inp_shexp);  // f32 [n_embd]
          if (l.is_moe()) {
            w.ffn_gate_inp = p.whole(l.ffn_gate_inp);  // the router: f32 in llama.cpp's files
            w.ffn_gate_shexp = p.whole(l.ffn_gate_shexp);
            w.ffn_up_shexp = p.whole(l.ffn_up_shexp);
            w.ffn_down_shexp = p.whole(l.ffn_down_shexp);
          } else {
            w.w_gate = p.rows(l.w_gate, s.ff_begin, s.ff_end);
            w.w_up = p.rows(l.w_up, s.ff_begin, s.ff_end);
            w.w_down = p.cols(l.w_down, s.ff_begin, s.ff_end);
          }
        },
        {&w.ffn_norm, &w.post_ffn_norm, &w.ffn_gate_inp_shexp, &w.ffn_gate_inp, &w.ffn_gate_shexp, &w.ffn_up_shexp,
         &w.ffn_down_shexp, &w.w_gate, &w.w_up, &w.w_down},
        placed.ffn));
  }
  if (experts && s.expert_end > s.expert_begin) {
    // A run of experts is contiguous in each merged tensor: in place on the CPU whatever the range
    // (three mapping regions, charged as one).
    const auto at = [&](const TensorView& t) { return t.data + static_cast<uint64_t>(s.expert_begin) * t.mat_stride; };
    STRATA_RETURN_IF_ERROR(place_part(
        plan::expert_range_bytes(c, l, s.expert_begin, s.expert_end), true, at(l.ffn_gate_exps),
        [&] {
          for (auto [from, to] : {std::pair{&l.ffn_gate_exps, &w.ffn_gate_exps}, std::pair{&l.ffn_up_exps, &w.ffn_up_exps},
                                  std::pair{&l.ffn_down_exps, &w.ffn_down_exps}}) {
            *to = *from;
            to->data = at(*from);
            to->n_mats = s.expert_end - s.expert_begin;
            to->n_bytes = static_cast<uint64_t>(to->n_mats) * from->mat_stride;
          }
        },
        [&](Packer& p) {
          w.ffn_gate_exps = p.mats(l.ffn_gate_exps, s.expert_begin, s.expert_end);
          w.ffn_up_exps = p.mats(l.ffn_up_exps, s.expert_begin, s.expert_end);
          w.ffn_down_exps = p.mats(l.ffn_down_exps, s.expert_begin, s.expert_end);
        },
        {&w.ffn_gate_exps, &w.ffn_up_exps, &w.ffn_down_exps}, placed.experts));
  }
  if (charged) *charged = placed;
  return w;
}

}  // namespace strata::exec
