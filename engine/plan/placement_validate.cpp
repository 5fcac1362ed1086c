// engine/plan/placement_validate.cpp — a placement checked against a model and devices.
// No memory arithmetic here (memory_estimate.cpp) and no device is touched.
#include "engine/plan/placement_validate.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "engine/plan/tensor_split.h"

namespace strata::plan {

std::string device_id_list(const std::vector<DeviceInfo>& devices) {
  std::string out;
  for (const auto& d : devices) out += (out.empty() ? "" : ", ") + d.id;
  return out.empty() ? "(no devices)" : out;
}

const DeviceInfo* find_device(const std::vector<DeviceInfo>& devices, const std::string& id) {
  for (const auto& d : devices)
    if (d.id == id) return &d;
  return nullptr;
}

namespace {

Error bad(Code code, const std::string& message) { return Error{code, message}; }

Status check_device(const std::string& id, const std::string& where, const std::vector<DeviceInfo>& devices) {
  if (find_device(devices, id)) return {};
  return bad(Code::NotFound, where + ": placement names device '" + id + "', which is not among: " +
                                 device_id_list(devices));
}

Status check_target(const Target& t, const std::string& where, const std::vector<DeviceInfo>& devices) {
  if (t.devices.empty()) return bad(Code::InvalidArgument, where + ": no device");
  for (size_t i = 0; i < t.devices.size(); ++i) {
    STRATA_RETURN_IF_ERROR(check_device(t.devices[i], where, devices));
    for (size_t k = 0; k < i; ++k)
      if (t.devices[k] == t.devices[i])
        return bad(Code::InvalidArgument, where + ": device '" + t.devices[i] + "' appears twice in the group");
  }
  if (!t.is_group()) {
    if (!t.ratio.empty() && t.ratio.size() != 1)
      return bad(Code::InvalidArgument, where + ": one device with " + std::to_string(t.ratio.size()) + " ratios");
    return {};
  }
  if (t.ratio.size() != t.devices.size())
    return bad(Code::InvalidArgument, where + ": " + std::to_string(t.ratio.size()) + " ratios for a group of " +
                                          std::to_string(t.devices.size()) + " devices");
  for (size_t i = 0; i < t.ratio.size(); ++i) {
    if (!(t.ratio[i] > 0.0) || !std::isfinite(t.ratio[i])) {
      std::ostringstream os;
      os << where << ": ratio " << t.ratio[i] << " of device '" << t.devices[i] << "' must be > 0";
      return bad(Code::InvalidArgument, os.str());
    }
  }
  return {};
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

Status check_limit(const char* name, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi) return {};
  return bad(Code::OutOfRange, std::string("placement: ") + name + " " + std::to_string(value) + " is outside " +
                                   std::to_string(lo) + ".." + std::to_string(hi));
}

// The parts of a block placed below it (docs/placement.md, "Parts of a block").
Status check_parts(const LayerPlacement& l, const std::string& where, const model::ModelConfig& config,
                   const std::vector<DeviceInfo>& devices) {
  if (!l.ffn_device.empty()) STRATA_RETURN_IF_ERROR(check_device(l.ffn_device, where + " ffn_device", devices));
  if (!l.ffn_device.empty() && config.parallel_block)
    return bad(Code::Unsupported, where + ": places the FFN on '" + l.ffn_device + "', but " +
                                      model::arch_name(config.arch) +
                                      " computes attention and the FFN from the same normalised input in one "
                                      "step, so its FFN stays with its attention");
  if (l.experts.empty()) return {};
  if (config.n_expert <= 0)
    return bad(Code::InvalidArgument, where + ": places routed experts, but the model's blocks have a dense FFN "
                                              "(no experts); use 'ffn_device' to place the FFN");
  if (l.ffn_device.empty() && l.target.is_group())
    return bad(Code::Unsupported, where + ": its FFN part is split across a group; place it on one device "
                                          "('ffn_device') to place its experts");
  int64_t next = 0;
  for (size_t r = 0; r < l.experts.size(); ++r) {
    const ExpertRange& e = l.experts[r];
    const std::string at = where + " experts[" + std::to_string(r) + "]";
    STRATA_RETURN_IF_ERROR(check_device(e.device, at, devices));
    const int64_t end = e.end == kAllExperts ? config.n_expert : e.end;
    if (e.begin != next)
      return bad(Code::InvalidArgument, at + ": starts at expert " + std::to_string(e.begin) + ", expected " +
                                            std::to_string(next) + " (ranges must cover experts 0-" +
                                            std::to_string(config.n_expert - 1) + " once, in order)");
    if (end <= e.begin || end > config.n_expert)
      return bad(Code::InvalidArgument, at + ": experts " + std::to_string(e.begin) + "-" + std::to_string(end - 1) +
                                            " out of range: the block has " + std::to_string(config.n_expert) +
                                            " experts (0-" + std::to_string(config.n_expert - 1) + ")");
    next = end;
  }
  if (next != config.n_expert)
    return bad(Code::InvalidArgument, where + ": experts " + std::to_string(next) + "-" +
                                          std::to_string(config.n_expert - 1) + " have no placement");
  return {};
}

}  // namespace

Status validate_placement(const Placement& p, const model::ModelConfig& config, const model::ModelWeights& weights,
                          const std::vector<DeviceInfo>& devices) {
  STRATA_RETURN_IF_ERROR(check_limit("n_ctx", p.n_ctx, 1, kMaxCtx));
  STRATA_RETURN_IF_ERROR(check_limit("n_seq", p.n_seq, 1, kMaxSeq));
  STRATA_RETURN_IF_ERROR(check_limit("max_batch", p.max_batch, 1, kMaxBatch));
  if (static_cast<int64_t>(p.layers.size()) != config.n_layers)
    return bad(Code::InvalidArgument, "placement has " + std::to_string(p.layers.size()) + " layers, the model " +
                                          std::to_string(config.n_layers));
  if (static_cast<int64_t>(weights.layers.size()) != config.n_layers)
    return bad(Code::Internal, "model weights have " + std::to_string(weights.layers.size()) +
                                   " layers, its config " + std::to_string(config.n_layers));
  for (size_t i = 0; i < devices.size(); ++i)
    for (size_t k = 0; k < i; ++k)
      if (devices[k].id == devices[i].id)
        return bad(Code::InvalidArgument, "device id '" + devices[i].id + "' is given twice");

  STRATA_RETURN_IF_ERROR(check_target(p.embedding, "embedding", devices));
  if (p.embedding.is_group())
    return bad(Code::InvalidArgument, "the embedding must be on one device, not a group of " +
                                          std::to_string(p.embedding.devices.size()) + " (" +
                                          join(p.embedding.devices) + ")");
  STRATA_RETURN_IF_ERROR(check_target(p.head, "head", devices));
  if (p.head.is_group())
    return bad(Code::InvalidArgument, "the output head must be on one device, not a group of " +
                                          std::to_string(p.head.devices.size()) + " (" + join(p.head.devices) + ")");

  for (size_t i = 0; i < p.layers.size(); ++i) {
    const std::string where = "layer " + std::to_string(i);
    const LayerPlacement& l = p.layers[i];
    STRATA_RETURN_IF_ERROR(check_target(l.target, where, devices));
    if (!l.kv_device.empty()) STRATA_RETURN_IF_ERROR(check_device(l.kv_device, where + " kv_device", devices));
    if (l.target.is_group()) {
      auto shards = split_layer(config, weights.layers[i], l.target.ratio, static_cast<int64_t>(i));
      if (!shards.ok()) return shards.error();
    }
    STRATA_RETURN_IF_ERROR(check_parts(l, where, config, devices));
    for (const std::string& id : l.target.devices) {
      const DeviceInfo* d = find_device(devices, id);
      if (d && !d->caps.runs_attention(config.head_dim))
        return bad(Code::Unsupported, where + ": device '" + id + "' (" + d->backend + ") attends over heads of up to " +
                                          std::to_string(d->caps.max_head_dim) + " elements; this model's KV rows are " +
                                          std::to_string(config.head_dim) +
                                          " (place the block's attention on another device and its FFN here: "
                                          "'device' and 'ffn_device')");
    }
  }
  return check_kv_type(p, config, devices);
}

namespace {
// "f32 or f16", "f32, f16 or q8_0".
std::string kv_type_list(const DeviceCaps& caps) {
  std::string out;
  for (size_t i = 0; i < caps.kv_types.size(); ++i)
    out += (i == 0 ? "" : i + 1 == caps.kv_types.size() ? " or " : ", ") + std::string(kernels::dtype_name(caps.kv_types[i]));
  return out.empty() ? "no" : out;
}
}  // namespace

Status check_kv_type(const Placement& p, const model::ModelConfig& config, const std::vector<DeviceInfo>& devices) {
  const kernels::DType t = p.kv_type;
  if (t != kernels::DType::F32 && t != kernels::DType::F16 && t != kernels::DType::Q8_0)
    return bad(Code::InvalidArgument, std::string("KV cache type ") + kernels::dtype_name(t) + " is not one of f32, f16, q8_0");
  if (t != kernels::DType::Q8_0) return {};
  if (config.head_dim % 32 != 0)
    return bad(Code::Unsupported, "a q8_0 KV cache needs head sizes that are multiples of 32; this model's is " +
                                      std::to_string(config.head_dim) + " (use --kv-type f16)");
  // Tensor-parallel shards cut KV heads, so every shard row stays a whole number of blocks.
  auto check = [&](const std::string& id, const std::string& where) -> Status {
    for (const DeviceInfo& d : devices)
      if (d.id == id && !d.caps.keeps_kv(t))
        return bad(Code::Unsupported, where + ": device '" + id + "' (" + d.backend + ") keeps " + kv_type_list(d.caps) +
                                          " KV caches, not " + kernels::dtype_name(t));
    return {};
  };
  for (size_t i = 0; i < p.layers.size(); ++i) {
    const LayerPlacement& l = p.layers[i];
    const std::string where = "layer " + std::to_string(i);
    if (!l.kv_device.empty()) {
      STRATA_RETURN_IF_ERROR(check(l.kv_device, where));
    } else {
      for (const std::string& id : l.target.devices) STRATA_RETURN_IF_ERROR(check(id, where));
    }
  }
  return {};
}

// Blocks on a device whose attention kernel cannot take the model's KV rows (DeviceCaps::
// max_head_dim: CUDA's 256 against DeepSeek's latent rows of 576) keep their attention and KV
// cache on the CPU, their FFN and experts where the plan put them. What moved, in words
// ("attention and KV cache of blocks 3-5, 9 on cpu: ..."), or "" when nothing did.
std::string attention_on_capable_devices(Placement& p, const model::ModelConfig& c,
                                         const std::vector<DeviceInfo>& devices) {
  const DeviceInfo* cpu = nullptr;
  for (const DeviceInfo& d : devices)
    if (!cpu && d.caps.host_cpu) cpu = &d;
  std::string moved, limits;
  if (!cpu) return moved;
  int64_t run_begin = -1;
  auto close_run = [&](int64_t end) {
    if (run_begin < 0) return;
    moved += (moved.empty() ? "" : ", ") + std::to_string(run_begin) +
             (end - 1 > run_begin ? "-" + std::to_string(end - 1) : std::string());
    run_begin = -1;
  };
  for (size_t i = 0; i < p.layers.size(); ++i) {
    LayerPlacement& l = p.layers[i];
    const DeviceInfo* d = l.target.is_group() ? nullptr : find_device(devices, l.target.devices[0]);
    if (!d || d->caps.runs_attention(c.head_dim)) {
      close_run(static_cast<int64_t>(i));
      continue;
    }
    if (limits.find("'" + d->id + "'") == std::string::npos)
      limits += (limits.empty() ? "" : ", ") + std::string("'") + d->id + "' up to " + std::to_string(d->caps.max_head_dim);
    if (l.ffn_device.empty()) l.ffn_device = d->id;
    l.target = Target{{cpu->id}, {}};
    if (l.kv_device == cpu->id) l.kv_device.clear();
    if (run_begin < 0) run_begin = static_cast<int64_t>(i);
  }
  close_run(static_cast<int64_t>(p.layers.size()));
  if (moved.empty()) return moved;
  return "attention and KV cache of blocks " + moved + " on " + cpu->id + " (the model's KV rows are " +
         std::to_string(c.head_dim) + " elements; the attention of " + limits + ")";
}

std::vector<HeadShare> head_shares(const Placement& p, int64_t n_vocab, const std::vector<DeviceInfo>& devices) {
  return head_shares(p, n_vocab, [&](const std::string& id) {
    const DeviceInfo* d = find_device(devices, id);
    return d ? d->rank : 0;
  });
}

}  // namespace strata::plan
