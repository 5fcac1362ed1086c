// engine/exec/pipeline_build.cpp — placing a model on devices: the blocks' weights and KV caches,
// each device's runtime (ops, scratch, embedding and head copies), the stages, and re-placement
// with roll-back. Calling thread: the driver (create / apply), with the stage threads stopped.
#include <algorithm>
#include <cstring>

#include "engine/comm/transfer.h"
#include "engine/exec/pipeline_internal.h"

namespace strata::exec {

Pipeline::Pipeline(const model::Model& model, std::vector<backend::Device*> devices, trace::Recorder* recorder)
    : model_(model), devices_(std::move(devices)), recorder_(recorder) {}

Pipeline::~Pipeline() { stop_stages(); }

Expected<backend::Device*> Pipeline::device(const std::string& id) const {
  for (backend::Device* d : devices_) {
    if (d->id() == id) return d;
  }
  std::string known;
  for (backend::Device* d : devices_) known += (known.empty() ? "" : ", ") + d->id();
  return Error{Code::NotFound, "placement names device '" + id + "', which is not among: " + known};
}

std::vector<Pipeline::LayerSlot*> Pipeline::layer_list() const {
  std::vector<LayerSlot*> out;
  for (const auto& l : layers_) out.push_back(l.get());
  return out;
}

Expected<std::unique_ptr<Pipeline>> Pipeline::create(const model::Model& model, std::vector<backend::Device*> devices,
                                                     const plan::Placement& placement, trace::Recorder* recorder,
                                                     RankBridge* ranks) {
  const model::ModelConfig& c = model.config();
  if (static_cast<int64_t>(placement.layers.size()) != c.n_layers)
    return Error{Code::InvalidArgument, "placement has " + std::to_string(placement.layers.size()) +
                                            " blocks, the model " + std::to_string(c.n_layers)};
  if (placement.n_ctx <= 0 || placement.n_ctx > (1 << 24) || placement.n_seq <= 0 || placement.n_seq > 256 ||
      placement.max_batch <= 0 || placement.max_batch > 65536)
    return Error{Code::InvalidArgument, "placement n_ctx " + std::to_string(placement.n_ctx) + ", n_seq " +
                                            std::to_string(placement.n_seq) + ", max_batch " +
                                            std::to_string(placement.max_batch) + " out of range"};
  if (placement.embedding.is_group() || placement.head.is_group() || placement.embedding.devices.empty() ||
      placement.head.devices.empty())
    return Error{Code::InvalidArgument, "the embedding and the head each need exactly one device"};
  std::unique_ptr<Pipeline> p(new Pipeline(model, std::move(devices), recorder));
  p->ranks_ = ranks;
  p->placement_ = placement;
  // The driver asks the other ranks to place their part first: they build beside it, and the
  // cross-rank groups are made by all members at once.
  const bool driver = ranks && ranks->rank() == 0;
  if (driver) STRATA_RETURN_IF_ERROR(ranks->begin_place(placement, true, true));
  auto built = [&]() -> Status {
    for (int64_t l = 0; l < c.n_layers; ++l) {
      STRATA_ASSIGN_OR_RETURN(auto slot, p->build_layer(l, placement.layers[static_cast<size_t>(l)]));
      p->layers_.push_back(std::move(slot));
    }
    STRATA_ASSIGN_OR_RETURN(p->runtime_, p->build_runtimes(placement, p->layer_list()));
    return {};
  }();
  if (driver) {
    Status remote = ranks->end_place(nullptr, !built.ok());
    if (built.ok() && !remote.ok()) return remote.error();
  }
  STRATA_RETURN_IF_ERROR(built);
  p->positions_.assign(static_cast<size_t>(placement.n_seq), 0);
  p->written_.assign(static_cast<size_t>(placement.n_seq), 0);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const int64_t rows = plan::kv_cells(c, l, placement.n_ctx, placement.max_batch, placement.swa_full);
    if (rows < placement.n_ctx) p->kv_rewind_ = std::min(p->kv_rewind_, rows - c.layer_attention(l).window);
  }
  p->start_stages();
  return p;
}

Expected<std::unique_ptr<Pipeline::LayerSlot>> Pipeline::build_layer(int64_t index, const plan::LayerPlacement& where) {
  const model::ModelConfig& c = model_.config();
  const model::LayerWeights& lw = model_.weights().layers[static_cast<size_t>(index)];
  auto slot = std::make_unique<LayerSlot>();
  slot->where = where;
  for (const std::string& id : where.target.devices) {
    STRATA_ASSIGN_OR_RETURN(backend::Device * d, device(id));
    if (d->failed()) return Error{Code::Device, "layer " + std::to_string(index) + ": device '" + id + "' has failed: " + d->failure()};
    slot->members.push_back(d);
  }
  if (slot->members.empty()) return Error{Code::InvalidArgument, "layer " + std::to_string(index) + " has no device"};
  if (!where.kv_device.empty()) {
    // A KV cache is read by its layer's members directly: it stays on their rank.
    STRATA_ASSIGN_OR_RETURN(backend::Device * kv_dev, device(where.kv_device));
    for (backend::Device* m : slot->members) {
      if (m->remote_rank() != kv_dev->remote_rank())
        return Error{Code::Unsupported, "layer " + std::to_string(index) + ": device '" + m->id() +
                                            "' cannot read a KV cache kept on '" + kv_dev->id() + "' (another rank)"};
    }
  }
  if (where.target.is_group()) {
    STRATA_ASSIGN_OR_RETURN(slot->shards, plan::split_layer(c, lw, where.target.ratio, index));
  } else {
    slot->shards = {plan::whole_layer(c)};
  }
  for (size_t i = 0; i < slot->members.size(); ++i) {
    backend::Device& d = *slot->members[i];
    if (!local(&d)) {  // placed by its own rank
      slot->weights.emplace_back();
      continue;
    }
    // The dense matrices (the arch table's; place_shard checks the mixture-of-experts ones).
    for (const model::LayerTensor& row : model::layer_tensors()) {
      const model::TensorView& t = lw.*row.view;
      const bool dense = row.need == model::Need::Always || row.need == model::Need::Dense;
      if (!dense || row.kind != model::TensorKind::Matrix) continue;
      if (!d.supports(t.type))
        return Error{Code::Unsupported, "layer " + std::to_string(index) + ": device '" + d.id() + "' cannot run " +
                                            kernels::dtype_name(t.type) + " weights ('" + t.name + "')"};
    }
    // A block in parts: the members hold its attention, and its FFN part and experts unless
    // those are placed apart (place_parts).
    unsigned parts = kAllParts;
    if (!where.ffn_device.empty()) parts &= ~(kFfnPart | kExpertsPart);
    if (!where.experts.empty()) parts &= ~kExpertsPart;
    PartBytes charged;
    STRATA_ASSIGN_OR_RETURN(ShardWeights w,
                            place_shard(d, c, lw, slot->shards[i], slot->weight_buffers, parts, &charged));
    slot->charged.emplace_back(&d, charged);
    slot->weights.push_back(w);
  }
  STRATA_RETURN_IF_ERROR(place_parts(*slot, index));
  const int64_t n_ctx = placement_.n_ctx, n_seq = placement_.n_seq;
  slot->shared_kv = !where.kv_device.empty();
  slot->kv_type = placement_.kv_type;
  slot->kv_rows = plan::kv_cells(c, index, n_ctx, placement_.max_batch, placement_.swa_full);
  auto add_kv = [&](backend::Device* d, const plan::LayerShard& shard) -> Status {
    if (!local(d)) {  // kept by its own rank
      slot->kv_devices.push_back(d);
      slot->kv_buffers.push_back(nullptr);
      return {};
    }
    if (!d->supports_kv(slot->kv_type))
      return Error{Code::Unsupported, "layer " + std::to_string(index) + ": device '" + d->id() + "' cannot keep a " +
                                          kernels::dtype_name(slot->kv_type) + " KV cache"};
    const uint64_t bytes = plan::shard_kv_bytes(c, shard, slot->kv_rows, n_seq, placement_.kv_type);
    STRATA_ASSIGN_OR_RETURN(auto buf, d->allocate(bytes, backend::BufferUse::KvCache));
    STRATA_RETURN_IF_ERROR(d->fill_zero(buf->data(), bytes));
    slot->kv_devices.push_back(d);
    slot->kv_buffers.push_back(std::move(buf));
    return {};
  };
  if (slot->shared_kv) {
    STRATA_ASSIGN_OR_RETURN(backend::Device * kv_dev, device(where.kv_device));
    // Members read the shared cache directly, so it must live where they all can: on a host
    // device when any member computes on the host, or on the member itself.
    for (backend::Device* m : slot->members) {
      if (m != kv_dev && (m->host_visible() != kv_dev->host_visible() || !m->host_visible()))
        return Error{Code::Unsupported, "layer " + std::to_string(index) + ": device '" + m->id() +
                                            "' cannot read a KV cache kept on '" + kv_dev->id() + "'"};
    }
    STRATA_RETURN_IF_ERROR(add_kv(kv_dev, plan::whole_layer(c)));
  } else {
    for (size_t i = 0; i < slot->members.size(); ++i) STRATA_RETURN_IF_ERROR(add_kv(slot->members[i], slot->shards[i]));
  }
  return slot;
}

// The parts of a block placed below it: the FFN part on its own device, then each routed expert
// range on its device. Devices of another rank cannot hold a part (the micro-batch's partial
// update does not travel between ranks).
Status Pipeline::place_parts(LayerSlot& slot, int64_t index) {
  const plan::LayerPlacement& where = slot.where;
  if (!where.has_parts()) return {};
  const model::ModelConfig& c = model_.config();
  const model::LayerWeights& lw = model_.weights().layers[static_cast<size_t>(index)];
  auto part_device = [&](const std::string& id, const char* part) -> Expected<backend::Device*> {
    STRATA_ASSIGN_OR_RETURN(backend::Device * d, device(id));
    if (d->failed())
      return Error{Code::Device, "layer " + std::to_string(index) + " " + part + ": device '" + id + "' has failed: " +
                                     d->failure()};
    if (!local(d) || std::any_of(slot.members.begin(), slot.members.end(), [](backend::Device* m) { return m->remote_rank() >= 0; }))
      return Error{Code::Unsupported, "layer " + std::to_string(index) + ": parts of a block on another rank's device ('" +
                                          id + "') are not supported; place the whole block there"};
    return d;
  };
  if (!where.ffn_device.empty()) {
    STRATA_ASSIGN_OR_RETURN(slot.ffn_device, part_device(where.ffn_device, "ffn"));
    // With its experts unless they are placed by ranges.
    const unsigned parts = where.experts.empty() ? (kFfnPart | kExpertsPart) : kFfnPart;
    PartBytes charged;
    STRATA_ASSIGN_OR_RETURN(slot.ffn_weights, place_shard(*slot.ffn_device, c, lw, plan::whole_layer(c),
                                                          slot.weight_buffers, parts, &charged));
    slot.charged.emplace_back(slot.ffn_device, charged);
  }
  for (const plan::BlockUnit& u : plan::units_of(where, index, c.n_expert)) {
    if (u.kind != plan::PartKind::Experts) continue;
    LayerSlot::ExpertPart part;
    STRATA_ASSIGN_OR_RETURN(part.device, part_device(u.target.devices[0], "experts"));
    part.begin = u.expert_begin;
    part.end = u.expert_end;
    plan::LayerShard range = plan::whole_layer(c);
    range.expert_begin = part.begin;
    range.expert_end = part.end;
    PartBytes charged;
    STRATA_ASSIGN_OR_RETURN(part.weights,
                            place_shard(*part.device, c, lw, range, slot.weight_buffers, kExpertsPart, &charged));
    slot.charged.emplace_back(part.device, charged);
    slot.expert_parts.push_back(std::move(part));
  }
  return {};
}

Expected<std::unique_ptr<Pipeline::RuntimeSet>> Pipeline::build_runtimes(const plan::Placement& placement,
                                                                          const std::vector<LayerSlot*>& layers) {
  const model::ModelConfig& c = model_.config();
  const model::ModelWeights& w = model_.weights();
  auto set = std::make_unique<RuntimeSet>();
  struct Needs {
    bool layers = false, head = false, embed = false;
    int64_t head_begin = 0, head_end = 0;  // the head's vocabulary rows here (plan::head_shares)
    plan::LayerShard widest;
  };
  std::map<backend::Device*, Needs> needs;
  STRATA_ASSIGN_OR_RETURN(backend::Device * embed_dev, device(placement.embedding.devices[0]));
  STRATA_ASSIGN_OR_RETURN(backend::Device * head_dev, device(placement.head.devices[0]));
  needs[embed_dev].embed = true;
  const std::vector<plan::HeadShare> head_shares = plan::head_shares(placement, c.n_vocab, [&](const std::string& id) {
    auto d = device(id);
    return d.ok() ? (*d)->info().rank : 0;
  });
  for (const plan::HeadShare& share : head_shares) {
    STRATA_ASSIGN_OR_RETURN(backend::Device * d, device(share.device));
    needs[d].head = true;
    needs[d].head_begin = share.row_begin;
    needs[d].head_end = share.row_end;
  }
  // Scratch by the parts each device runs (plan::estimate_memory widens the same way).
  for (const LayerSlot* slot : layers) {
    for (size_t i = 0; i < slot->members.size(); ++i) {
      Needs& n = needs[slot->members[i]];
      n.layers = true;
      n.widest.kv_head_end = std::max(n.widest.kv_head_end, slot->shards[i].n_kv_heads());
      if (!slot->ffn_device) n.widest.ff_end = std::max(n.widest.ff_end, slot->shards[i].n_ff());
    }
    if (slot->ffn_device) {
      Needs& n = needs[slot->ffn_device];
      n.layers = true;
      n.widest.ff_end = std::max(n.widest.ff_end, plan::whole_layer(c).n_ff());
    }
    for (const LayerSlot::ExpertPart& e : slot->expert_parts) {
      Needs& n = needs[e.device];
      n.layers = true;
      n.widest.ff_end = std::max(n.widest.ff_end, plan::whole_layer(c).n_ff());
    }
  }
  // Devices that only hold KV caches still carry their runtime overhead.
  for (const LayerSlot* slot : layers) {
    if (!slot->shared_kv) continue;
    backend::Device* kv_dev = slot->kv_devices[0];
    if (needs.count(kv_dev) || set->kv_only_overhead.count(kv_dev)) continue;
    const uint64_t overhead = kv_dev->info().runtime_overhead_bytes;
    if (overhead == 0) continue;
    STRATA_ASSIGN_OR_RETURN(auto buf, kv_dev->adopt(nullptr, overhead, backend::BufferUse::Overhead));
    set->kv_only_overhead[kv_dev] = std::move(buf);
  }
  for (auto& [dev, need] : needs) {
    auto rt = std::make_unique<DeviceRuntime>();
    rt->device = dev;
    const DeviceInfo info = dev->info();
    if (recorder_) {
      rt->lane = lane_named(dev->id());
      if (rt->lane < 0) rt->lane = recorder_->add_lane(dev->id(), info.simulated);
    }
    if (!local(dev)) {  // its runtime lives on its own rank
      set->runtimes[dev] = std::move(rt);
      continue;
    }
    if (info.runtime_overhead_bytes > 0) {
      STRATA_ASSIGN_OR_RETURN(auto buf, dev->adopt(nullptr, info.runtime_overhead_bytes, backend::BufferUse::Overhead));
      rt->buffers.push_back(std::move(buf));
    }
    if (need.embed) {
      STRATA_ASSIGN_OR_RETURN(rt->token_embd, place_tensor(*dev, w.token_embd, rt->buffers));
    }
    if (need.head) {
      STRATA_ASSIGN_OR_RETURN(rt->output_norm, place_tensor(*dev, w.output_norm, rt->buffers));
      STRATA_ASSIGN_OR_RETURN(rt->output_norm_b, place_tensor(*dev, w.output_norm_b, rt->buffers));
      // Its rows of the output matrix (of the embedding already here when the two are tied).
      const int64_t head_rows = need.head_end - need.head_begin;
      rt->head_row_begin = need.head_begin;
      if (c.tied_output && need.embed) {
        rt->output = rt->token_embd.row_slice(need.head_begin, head_rows);
      } else {
        STRATA_ASSIGN_OR_RETURN(rt->output, place_tensor(*dev, w.output.row_slice(need.head_begin, head_rows), rt->buffers));
      }
    }
    if (need.layers && w.rope_freqs_for(c, placement_.n_ctx).present()) {
      STRATA_ASSIGN_OR_RETURN(model::TensorView rf, place_tensor(*dev, w.rope_freqs_for(c, placement_.n_ctx), rt->buffers));
      rt->rope_freqs = reinterpret_cast<const float*>(rf.data);
    }
    rt->layout = plan::scratch_layout(c, need.widest, need.layers, need.head, placement.max_batch, placement.n_ctx,
                                      placement.n_seq, info.threads);
    const uint64_t float_bytes = static_cast<uint64_t>(rt->layout.floats()) * sizeof(float);
    STRATA_ASSIGN_OR_RETURN(auto scratch, dev->allocate(float_bytes, backend::BufferUse::Scratch));
    float* base = scratch->floats();
    rt->buffers.push_back(std::move(scratch));
    // The quantized-activation buffer of host backends lives inside their Ops, reserved to this
    // size; other backends allocate (and account) their own workspaces through the device.
    if (dev->host_visible()) {
      STRATA_ASSIGN_OR_RETURN(auto mm, dev->adopt(nullptr, static_cast<size_t>(rt->layout.matmul_bytes), backend::BufferUse::Scratch));
      rt->buffers.push_back(std::move(mm));
    }
    const ScratchViews views = carve_scratch(base, rt->layout, info.threads);
    backend::OpsWorkspace ws;
    ws.scores = views.scores;
    ws.scores_per_thread = views.scores_per_thread;
    ws.matmul_bytes = static_cast<size_t>(rt->layout.matmul_bytes);
    ws.max_ctx = placement.n_ctx;
    ws.max_tokens = placement.max_batch;
    STRATA_ASSIGN_OR_RETURN(rt->ops, dev->create_ops(ws));
    rt->block = std::make_unique<BlockForward>(c, *rt->ops, views, rt->rope_freqs);
    rt->worker = std::make_unique<DeviceWorker>();
    set->runtimes[dev] = std::move(rt);
  }

  // Stages: embedding, the runs of blocks (and of parts of blocks placed in parts) on one target,
  // the head; single-device neighbours merge. Whole blocks group as plan::stages_of does.
  auto& stages = set->stages;
  std::string stage_kv;
  for (const plan::Stage& s : plan::stages_of(placement)) {
    for (int64_t l = s.first_layer; l < s.end_layer; ++l) {
      for (const plan::BlockUnit& u : plan::units_of(placement.layers[static_cast<size_t>(l)], l, c.n_expert)) {
        if (stages.empty() || stages.back()->units.empty() || stages.back()->units.back().target != u.target ||
            stage_kv != s.kv_device) {
          auto st = std::make_unique<StageRuntime>();
          for (const std::string& id : u.target.devices) {
            STRATA_ASSIGN_OR_RETURN(backend::Device * d, device(id));
            st->members.push_back(set->runtimes.at(d).get());
          }
          stages.push_back(std::move(st));
          stage_kv = s.kv_device;
        }
        stages.back()->units.push_back(u);
      }
    }
  }
  auto single_on = [](const StageRuntime& st, const backend::Device* d) {
    return st.members.size() == 1 && st.members[0]->device == d;
  };
  if (!stages.empty() && single_on(*stages.front(), embed_dev)) {
    stages.front()->has_embed = true;
  } else {
    auto st = std::make_unique<StageRuntime>();
    st->has_embed = true;
    st->members.push_back(set->runtimes.at(embed_dev).get());
    stages.insert(stages.begin(), std::move(st));
  }
  if (head_shares.size() > 1) {
    // The last block's tensor group computes the head, each member its vocabulary rows.
    stages.back()->has_head = true;
  } else if (single_on(*stages.back(), head_dev) && (!stages.back()->units.empty() || stages.back()->has_embed)) {
    stages.back()->has_head = true;
  } else {
    auto st = std::make_unique<StageRuntime>();
    st->has_head = true;
    st->members.push_back(set->runtimes.at(head_dev).get());
    stages.push_back(std::move(st));
  }
  for (size_t i = 0; i + 1 < stages.size(); ++i) stages[i]->next = stages[i + 1].get();
  // Which members are this rank's, which ranks hold the others, and the groups' communicators
  // (over MPI when a group spans ranks: every member rank makes it, with the same tag).
  const int self = ranks_ ? ranks_->rank() : 0;
  for (size_t si = 0; si < stages.size(); ++si) {
    StageRuntime& st = *stages[si];
    std::vector<backend::Device*> local_devices;
    for (size_t i = 0; i < st.members.size(); ++i) {
      backend::Device* d = st.members[i]->device;
      if (local(d)) {
        st.local.push_back(st.members[i]);
        st.local_index.push_back(i);
        local_devices.push_back(d);
      } else if (std::find(st.ranks.begin(), st.ranks.end(), d->remote_rank()) == st.ranks.end()) {
        st.ranks.push_back(d->remote_rank());
      }
    }
    std::sort(st.ranks.begin(), st.ranks.end());
    if (st.members.size() < 2 || local_devices.empty()) continue;
    if (st.ranks.empty()) {
      STRATA_ASSIGN_OR_RETURN(st.comm, comm::make_communicator(local_devices));
      continue;
    }
    if (!ranks_) return Error{Code::Internal, "a group with devices of other ranks, in one process"};
    std::vector<int> group = st.ranks;
    group.push_back(self);
    std::sort(group.begin(), group.end());
    // The tag: the same on every member rank (they build the same placement), different per stage.
    const int tag = static_cast<int>(std::hash<std::string>{}(plan::to_json(placement).dump()) % 100) * 256 +
                    static_cast<int>(si % 256);
    std::vector<backend::Device*> member_devices;
    for (DeviceRuntime* m : st.members) member_devices.push_back(m->device);
    STRATA_ASSIGN_OR_RETURN(st.comm, ranks_->group_communicator(member_devices, group, tag));
  }
  return set;
}

int32_t Pipeline::lane_named(const std::string& id) const {
  if (!recorder_) return -1;
  for (const auto& lane : recorder_->lanes()) {
    if (lane.name == id) return lane.id;
  }
  return -1;
}

Status Pipeline::copy_kv(const LayerSlot& from, const LayerSlot& to) {
  const int64_t hd = model_.config().head_dim;
  // Byte counts of n cache elements (Q8_0: blocks of 32 elements in 34 bytes; rows and head
  // columns are whole blocks).
  auto bytes = [&](int64_t n) { return static_cast<size_t>(kernels::row_bytes(from.kv_type, n)); };
  if (from.kv_type != to.kv_type)
    return Error{Code::Unsupported, std::string("moving a KV cache from ") + kernels::dtype_name(from.kv_type) + " to " +
                                        kernels::dtype_name(to.kv_type)};
  for (int32_t seq = 0; seq < placement_.n_seq; ++seq) {
    const int64_t live = positions_[static_cast<size_t>(seq)];
    if (live == 0) continue;
    for (size_t f = 0; f < from.members.size(); ++f) {
      const KvView src = kv_view(from, f, seq);
      const plan::LayerShard& fs = from.shards[f];
      backend::Device* src_dev = from.kv_devices[from.shared_kv ? 0 : f];
      if (!local(src_dev)) continue;  // another rank's part: that rank copies it
      for (size_t t = 0; t < to.members.size(); ++t) {
        const plan::LayerShard& ts = to.shards[t];
        backend::Device* dst_dev = to.kv_devices[to.shared_kv ? 0 : t];
        if (!local(dst_dev))
          return Error{Code::Unsupported, "moving a live KV cache from '" + src_dev->id() + "' to '" + dst_dev->id() +
                                              "' on another rank"};
        const KvView dst = kv_view(to, t, seq);
        const int64_t h0 = std::max(fs.kv_head_begin, ts.kv_head_begin), h1 = std::min(fs.kv_head_end, ts.kv_head_end);
        if (h0 >= h1) continue;
        for (int64_t kv = 0; kv < model_.config().kv_planes(); ++kv) {  // MLA: one plane (v is k)
          backend::Copy2D c;
          c.src = static_cast<const uint8_t*>(kv == 0 ? src.k : src.v) + bytes((h0 - fs.kv_head_begin) * hd);
          c.dst = static_cast<uint8_t*>(kv == 0 ? dst.k : dst.v) + bytes((h0 - ts.kv_head_begin) * hd);
          c.src_pitch = bytes(src.stride);
          c.dst_pitch = bytes(dst.stride);
          c.width = bytes((h1 - h0) * hd);
          // A ring travels whole: its rows hold the window before `live` wherever it wrapped to.
          c.height = static_cast<size_t>(from.kv_rows < placement_.n_ctx ? from.kv_rows : live);
          STRATA_RETURN_IF_ERROR(comm::copy(src_dev, dst_dev, c));
        }
      }
    }
  }
  return {};
}

Expected<int64_t> Pipeline::apply(const plan::Placement& next, KvOnApply kv) {
  const model::ModelConfig& c = model_.config();
  if (next.n_ctx != placement_.n_ctx || next.n_seq != placement_.n_seq || next.max_batch != placement_.max_batch ||
      next.swa_full != placement_.swa_full)
    return Error{Code::InvalidArgument, "a new placement may not change n_ctx, n_seq, max_batch or swa_full (reload instead)"};
  if (static_cast<int64_t>(next.layers.size()) != c.n_layers)
    return Error{Code::InvalidArgument, "placement has " + std::to_string(next.layers.size()) + " blocks, the model " +
                                            std::to_string(c.n_layers)};
  for (const plan::Target* t : {&next.embedding, &next.head}) {
    if (t->devices.size() != 1) return Error{Code::InvalidArgument, "the embedding and the head each need one device"};
    STRATA_RETURN_IF_ERROR(device(t->devices[0]));
  }
  const bool driver = ranks_ && ranks_->rank() == 0;
  if (driver && kv == KvOnApply::Copy && std::any_of(positions_.begin(), positions_.end(), [](int64_t p) { return p > 0; })) {
    // A KV cache does not travel between ranks: a block may change rank only with no live tokens.
    auto rank_of = [&](const std::string& id) -> int {
      auto d = device(id);
      return d.ok() ? (*d)->remote_rank() : -2;
    };
    for (size_t l = 0; l < layers_.size(); ++l) {
      const plan::LayerPlacement& a = layers_[l]->where;
      const plan::LayerPlacement& b = next.layers[l];
      if (a == b) continue;
      std::vector<int> ra, rb;
      for (const auto& id : a.target.devices) ra.push_back(rank_of(id));
      for (const auto& id : b.target.devices) rb.push_back(rank_of(id));
      std::sort(ra.begin(), ra.end());
      std::sort(rb.begin(), rb.end());
      if (ra != rb)
        return Error{Code::Unsupported, "block " + std::to_string(l) + " would move to another rank while sequences "
                                        "hold tokens: its KV cache cannot follow (re-place with no live sequences)"};
    }
  }
  stop_stages();
  // The other ranks place their part beside this one (see create).
  if (driver) {
    if (Status s = ranks_->begin_place(next, false, kv == KvOnApply::Discard); !s.ok()) {
      mark_lost_rank_devices(-1, s.error().message);
      start_stages();
      return Error{s.error().code, "re-placement failed, nothing changed: " + s.error().message};
    }
  }
  // Collects the other ranks' answers (once); on a local failure they go back to the old placement.
  bool collected = !driver;
  auto collect = [&](bool local_failed) -> Status {
    if (collected) return {};
    collected = true;
    return ranks_->end_place(&placement_, local_failed);
  };
  // 1. Build every changed block beside the old ones, so a failure changes nothing.
  std::vector<std::unique_ptr<LayerSlot>> fresh(layers_.size());
  int64_t moved = 0;
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (layers_[l]->where == next.layers[l]) continue;
    auto slot = build_layer(static_cast<int64_t>(l), next.layers[l]);
    if (!slot.ok()) {
      (void)collect(true);
      start_stages();
      return Error{slot.error().code, "re-placement failed at block " + std::to_string(l) + ", nothing changed: " +
                                          slot.error().message};
    }
    fresh[l] = std::move(*slot);
    ++moved;
  }
  std::vector<LayerSlot*> next_layers = layer_list();
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (fresh[l]) next_layers[l] = fresh[l].get();
  }
  // 2. The new runtimes. First beside the old ones; when that does not fit, without them (their
  // scratch and copies freed), and when even that fails, the old ones again.
  auto built = build_runtimes(next, next_layers);
  if (!built.ok() && built.error().code == Code::OutOfMemory) {
    runtime_.reset();
    built = build_runtimes(next, next_layers);
  }
  if (!built.ok()) {
    (void)collect(true);
    Error why = std::move(built).error();
    fresh.clear();  // frees the new blocks before the old runtimes come back
    if (!runtime_) {
      auto old = build_runtimes(placement_, layer_list());
      if (!old.ok())
        return Error{Code::Internal, "re-placement failed (" + why.message + ") and the old placement could not be "
                                     "restored: " + old.error().message};
      runtime_ = std::move(*old);
    }
    start_stages();
    return Error{why.code, "re-placement failed, nothing changed: " + why.message};
  }
  // 3. Carry the KV contents of live positions over (or forget every position), then commit.
  if (kv == KvOnApply::Discard) {
    std::fill(positions_.begin(), positions_.end(), 0);
    std::fill(written_.begin(), written_.end(), 0);
  }
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (!fresh[l] || kv == KvOnApply::Discard) continue;
    if (Status s = copy_kv(*layers_[l], *fresh[l]); !s.ok()) {
      (void)collect(true);
      built->reset();
      fresh.clear();
      if (!runtime_) {
        auto old = build_runtimes(placement_, layer_list());
        if (!old.ok()) return Error{Code::Internal, "re-placement failed copying KV (" + s.error().message +
                                                        ") and the old placement could not be restored"};
        runtime_ = std::move(*old);
      }
      start_stages();
      return Error{s.error().code, "re-placement failed copying block " + std::to_string(l) +
                                       "'s KV cache, nothing changed: " + s.error().message};
    }
  }
  if (Status remote = collect(false); !remote.ok()) {
    mark_lost_rank_devices(-1, remote.error().message);
    built->reset();
    fresh.clear();
    if (!runtime_) {
      auto old = build_runtimes(placement_, layer_list());
      if (!old.ok()) return Error{Code::Internal, "re-placement failed on another rank (" + remote.error().message +
                                                      ") and the old placement could not be restored"};
      runtime_ = std::move(*old);
    }
    start_stages();
    return Error{remote.error().code, "re-placement failed, nothing changed: " + remote.error().message};
  }
  runtime_ = std::move(*built);
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (fresh[l]) layers_[l] = std::move(fresh[l]);
  }
  placement_ = next;
  start_stages();
  return moved;
}

std::vector<std::string> Pipeline::failed_devices() const {
  std::vector<std::string> out;
  for (const backend::Device* d : devices_) {
    if (!d->failed()) continue;
    bool used = false;
    for (const plan::LayerPlacement& lp : placement_.layers) {
      for (const std::string& id : lp.target.devices) used = used || id == d->id();
      used = used || lp.kv_device == d->id() || lp.ffn_device == d->id();
      for (const plan::ExpertRange& e : lp.experts) used = used || e.device == d->id();
    }
    for (const plan::Target* t : {&placement_.embedding, &placement_.head}) {
      for (const std::string& id : t->devices) used = used || id == d->id();
    }
    if (used) out.push_back(d->id());
  }
  return out;
}

std::map<std::string, backend::MemoryUse> Pipeline::memory_by_device() const {
  std::map<std::string, backend::MemoryUse> out;
  for (const backend::Device* d : devices_) out[d->id()] = d->memory_use();
  return out;
}

std::map<std::string, PartBytes> Pipeline::part_bytes_by_device() const {
  std::map<std::string, PartBytes> out;
  for (const auto& slot : layers_) {
    for (const auto& [device, bytes] : slot->charged) {
      PartBytes& p = out[device->id()];
      p.attention += bytes.attention;
      p.ffn += bytes.ffn;
      p.experts += bytes.experts;
    }
  }
  return out;
}

void Pipeline::snapshot_memory() const {
  if (!recorder_ || !runtime_) return;
  int64_t live = 0;
  for (int64_t p : positions_) live += p;
  const double used_fraction =
      static_cast<double>(live) / static_cast<double>(placement_.n_ctx * placement_.n_seq);
  for (const auto& [dev, rt] : runtime_->runtimes) {
    const backend::MemoryUse m = dev->memory_use();
    trace::MemorySnapshot s;
    s.lane = rt->lane;
    s.time_ns = recorder_->now_ns();
    s.weights = m.weights;
    s.kv_reserved = m.kv;
    s.kv_used = static_cast<uint64_t>(static_cast<double>(m.kv) * used_fraction);
    s.scratch = m.scratch;
    s.other = m.overhead;
    s.total = dev->info().bytes_total;
    s.free = dev->bytes_free();
    recorder_->record_memory(s);
  }
}

}  // namespace strata::exec
