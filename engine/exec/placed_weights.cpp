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
  // The mixture-of-experts matrices (the dense ones are checked by the pipeline for every member).
  for (const model::LayerTensor& row : model::layer_tensors()) {
    const TensorView& t = l.*row.view;
    const bool moe_matrix = row.need == model::Need::Moe || row.need == model::Need::SharedExpert;
    const bool matrix = row.kind == model::TensorKind::Matrix || row.kind == model::TensorKind::Experts ||
                        row.kind == model::TensorKind::ExpertBias;
    if (moe_matrix && matrix && t.present() && !device.supports(t.type))
      return Error{Code::Unsupported, "device '" + device.id() + "' cannot run " + kernels::dtype_name(t.type) +
                                          " weights ('" + t.name + "')"};
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
  // Each part from the arch table's rows of that part: in place, the mapping's views; packed, the
  // part's vectors first, then its matrices (table order), each cut by the row's rule.
  const auto part_views = [&](model::Part part) {
    std::vector<TensorView*> views;
    for (const model::LayerTensor& t : model::layer_tensors())
      if (t.part == part) views.push_back(&(w.*t.view));
    return views;
  };
  const auto pack_part = [&](Packer& p, model::Part part) {
    for (const bool vectors : {true, false}) {
      for (const model::LayerTensor& t : model::layer_tensors()) {
        const bool vector = t.kind == model::TensorKind::Norm || t.kind == model::TensorKind::Bias;
        if (t.part != part || vector != vectors) continue;
        const TensorView& from = l.*t.view;
        TensorView& to = w.*t.view;
        if (!from.present()) {
          to = from;
          continue;
        }
        if (c.mla && t.part == model::Part::Attention) {  // never cut (plan::shard_tensor_bytes)
          to = p.whole(from);
          continue;
        }
        switch (t.cut) {
          case model::Cut::Whole: to = p.whole(from); break;
          case model::Cut::QRows: to = p.rows(from, q0, q1); break;
          case model::Cut::KvRows: to = p.rows(from, k0, k1); break;
          case model::Cut::QElems: to = p.elements(from, q0, q1); break;
          case model::Cut::KvElems: to = p.elements(from, k0, k1); break;
          case model::Cut::QCols: to = p.cols(from, q0, q1); break;
          case model::Cut::FfRows: to = p.rows(from, s.ff_begin, s.ff_end); break;
          case model::Cut::FfCols: to = p.cols(from, s.ff_begin, s.ff_end); break;
          case model::Cut::ExpertRange: to = p.mats(from, s.expert_begin, s.expert_end); break;
          case model::Cut::QHeads: to = p.elements(from, s.kv_head_begin * group, s.kv_head_end * group); break;
          case model::Cut::FfElems: to = p.elements(from, s.ff_begin, s.ff_end); break;
          case model::Cut::FirstShard:
            if (plan::holds_first_shard_tensor(t, s)) {
              to = p.whole(from);
            } else {
              to = TensorView{};
              to.name = from.name;
            }
            break;
        }
      }
    }
  };
  // Where a part's bytes begin in the mapping, for the CPU's accounting: its first matrix.
  const auto first_matrix = [&](model::Part part) -> const TensorView& {
    for (const model::LayerTensor& t : model::layer_tensors()) {
      const TensorView& v = l.*t.view;
      if (t.part == part && t.kind != model::TensorKind::Norm && t.kind != model::TensorKind::Bias && v.present())
        return v;
    }
    return l.wq;
  };
  const auto in_place = [&](model::Part part) {
    for (const model::LayerTensor& t : model::layer_tensors())
      if (t.part == part) w.*t.view = l.*t.view;
  };
  if (attention) {
    const bool uncut = s.kv_head_begin == 0 && s.kv_head_end == whole.kv_head_end;
    STRATA_RETURN_IF_ERROR(place_part(
        plan::shard_attention_bytes(c, l, s), uncut, first_matrix(model::Part::Attention).data,
        [&] { in_place(model::Part::Attention); },
        [&](Packer& p) { pack_part(p, model::Part::Attention); }, part_views(model::Part::Attention),
        placed.attention));
  }
  if (ffn) {
    // An MoE block's FFN part (router, shared expert) is never cut; a dense one by its units.
    const bool uncut = l.is_moe() || (s.ff_begin == 0 && s.ff_end == whole.ff_end);
    STRATA_RETURN_IF_ERROR(place_part(
        plan::shard_ffn_bytes(c, l, s), uncut, first_matrix(model::Part::Ffn).data,
        [&] { in_place(model::Part::Ffn); }, [&](Packer& p) { pack_part(p, model::Part::Ffn); },
        part_views(model::Part::Ffn), placed.ffn));
  }
  if (experts && s.expert_end > s.expert_begin) {
    // A run of experts is contiguous in each merged tensor: in place on the CPU whatever the range
    // (three mapping regions, charged as one).
    const auto at = [&](const TensorView& t) { return t.data + static_cast<uint64_t>(s.expert_begin) * t.mat_stride; };
    STRATA_RETURN_IF_ERROR(place_part(
        plan::expert_range_bytes(c, l, s.expert_begin, s.expert_end), true, at(first_matrix(model::Part::Experts)),
        [&] {
          for (const model::LayerTensor& t : model::layer_tensors()) {
            if (t.part != model::Part::Experts) continue;
            const TensorView& from = l.*t.view;
            TensorView& to = w.*t.view;
            to = from;
            to.data = at(from);
            to.n_mats = s.expert_end - s.expert_begin;
            to.n_bytes = static_cast<uint64_t>(to.n_mats) * from.mat_stride;
          }
        },
        [&](Packer& p) { pack_part(p, model::Part::Experts); }, part_views(model::Part::Experts), placed.experts));
  }
  if (charged) *charged = placed;
  return w;
}

}  // namespace strata::exec
