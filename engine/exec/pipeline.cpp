// engine/exec/pipeline.cpp — placing a model on devices and streaming micro-batches through the
// stages. Threads: the driver (eval/apply), one thread per stage, one worker per device.
#include "engine/exec/pipeline.h"

#include <algorithm>
#include <cstring>
#include <future>

#include "kernels/cpu/ops_f32.h"

namespace strata::exec {

struct Pipeline::LayerSlot {
  plan::LayerPlacement where;
  std::vector<Device*> members;
  std::vector<plan::LayerShard> shards;
  std::vector<ShardWeights> weights;
  BufferList weight_buffers;
  // KV: shared_kv -> one buffer on the KV device with the whole layer, [2][n_seq][n_ctx][kv_dim];
  // else one buffer per member with its shard, [2][n_seq][n_ctx][local kv dim].
  bool shared_kv = false;
  BufferList kv_buffers;
};

struct Pipeline::DeviceRuntime {
  Device* device = nullptr;
  int32_t lane = -1;
  std::unique_ptr<DeviceWorker> worker;
  BufferList buffers;  // embedding / head / rope copies, scratch, overhead
  model::TensorView token_embd, output_norm, output;
  const float* rope_freqs = nullptr;
  plan::ScratchLayout layout;
  std::unique_ptr<LayerCompute> compute;
  // Held by a stage for the whole time it uses this device's scratch for one micro-batch: a
  // device does one thing at a time even when it appears in several stages.
  std::mutex busy;
};

struct Pipeline::StageRuntime {
  bool has_embed = false, has_head = false;
  int64_t first = 0, end = 0;  // blocks [first, end)
  std::vector<DeviceRuntime*> members;
  StageRuntime* next = nullptr;
  std::thread thread;
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<MicroBatch*> queue;
  bool stopping = false;
};

struct Pipeline::MicroBatch {
  int32_t seq = 0;
  const int32_t* tokens = nullptr;
  int64_t n = 0;
  int64_t pos0 = 0;
  std::vector<float> hidden;        // [n][n_embd]
  float* logits = nullptr;          // last chunk of a request that wants logits
  const Device* holder = nullptr;   // device whose memory produced `hidden`
};

Pipeline::Pipeline(const model::Model& model, std::vector<Device*> devices, trace::Recorder* recorder)
    : model_(model), devices_(std::move(devices)), recorder_(recorder) {}

Pipeline::~Pipeline() { stop_stages(); }

Expected<Device*> Pipeline::device(const std::string& id) const {
  for (Device* d : devices_) {
    if (d->id() == id) return d;
  }
  std::string known;
  for (Device* d : devices_) known += (known.empty() ? "" : ", ") + d->id();
  return Error{Code::NotFound, "placement names device '" + id + "', which is not among: " + known};
}

Expected<std::unique_ptr<Pipeline>> Pipeline::create(const model::Model& model, std::vector<Device*> devices,
                                                     const plan::Placement& placement, trace::Recorder* recorder) {
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
  p->placement_ = placement;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    STRATA_ASSIGN_OR_RETURN(auto slot, p->build_layer(l, placement.layers[static_cast<size_t>(l)]));
    p->layers_.push_back(std::move(slot));
  }
  STRATA_RETURN_IF_ERROR(p->build_runtimes(placement));
  p->positions_.assign(static_cast<size_t>(placement.n_seq), 0);
  p->start_stages();
  return p;
}

Expected<std::unique_ptr<Pipeline::LayerSlot>> Pipeline::build_layer(int64_t index, const plan::LayerPlacement& where) {
  const model::ModelConfig& c = model_.config();
  const model::LayerWeights& lw = model_.weights().layers[static_cast<size_t>(index)];
  auto slot = std::make_unique<LayerSlot>();
  slot->where = where;
  for (const std::string& id : where.target.devices) {
    STRATA_ASSIGN_OR_RETURN(Device * d, device(id));
    slot->members.push_back(d);
  }
  if (slot->members.empty()) return Error{Code::InvalidArgument, "layer " + std::to_string(index) + " has no device"};
  if (where.target.is_group()) {
    STRATA_ASSIGN_OR_RETURN(slot->shards, plan::split_layer(c, lw, where.target.ratio, index));
  } else {
    slot->shards = {plan::whole_layer(c)};
  }
  for (size_t i = 0; i < slot->members.size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(ShardWeights w, place_shard(*slot->members[i], c, lw, slot->shards[i], slot->weight_buffers));
    slot->weights.push_back(w);
  }
  const int64_t n_ctx = placement_.n_ctx, n_seq = placement_.n_seq;
  slot->shared_kv = !where.kv_device.empty();
  if (slot->shared_kv) {
    STRATA_ASSIGN_OR_RETURN(Device * kv_dev, device(where.kv_device));
    const uint64_t bytes = plan::shard_kv_bytes(c, plan::whole_layer(c), n_ctx, n_seq);
    STRATA_ASSIGN_OR_RETURN(auto buf, kv_dev->allocate(bytes, BufferUse::KvCache));
    std::memset(buf->data(), 0, bytes);
    slot->kv_buffers.push_back(std::move(buf));
  } else {
    for (size_t i = 0; i < slot->members.size(); ++i) {
      const uint64_t bytes = plan::shard_kv_bytes(c, slot->shards[i], n_ctx, n_seq);
      STRATA_ASSIGN_OR_RETURN(auto buf, slot->members[i]->allocate(bytes, BufferUse::KvCache));
      std::memset(buf->data(), 0, bytes);
      slot->kv_buffers.push_back(std::move(buf));
    }
  }
  return slot;
}

KvView Pipeline::kv_view(const LayerSlot& slot, size_t member, int32_t seq) const {
  const model::ModelConfig& c = model_.config();
  const int64_t n_ctx = placement_.n_ctx, n_seq = placement_.n_seq;
  KvView v;
  v.n_ctx = n_ctx;
  if (slot.shared_kv) {
    float* base = reinterpret_cast<float*>(slot.kv_buffers[0]->data());
    v.stride = c.kv_dim();
    const int64_t col = slot.shards[member].kv_head_begin * c.head_dim;
    v.k = base + (static_cast<int64_t>(seq) * n_ctx) * v.stride + col;
    v.v = base + (n_seq + static_cast<int64_t>(seq)) * n_ctx * v.stride + col;
  } else {
    float* base = reinterpret_cast<float*>(slot.kv_buffers[member]->data());
    v.stride = slot.shards[member].n_kv_heads() * c.head_dim;
    v.k = base + static_cast<int64_t>(seq) * n_ctx * v.stride;
    v.v = base + (n_seq + static_cast<int64_t>(seq)) * n_ctx * v.stride;
  }
  return v;
}

int32_t Pipeline::lane_of(const Device* d) const {
  if (!d) return -1;
  auto it = runtimes_.find(d);
  return it == runtimes_.end() ? -1 : it->second->lane;
}

Status Pipeline::build_runtimes(const plan::Placement& placement) {
  const model::ModelConfig& c = model_.config();
  const model::ModelWeights& w = model_.weights();
  std::map<const Device*, std::unique_ptr<DeviceRuntime>> fresh;
  struct Needs {
    bool layers = false, head = false, embed = false;
    plan::LayerShard widest;
  };
  std::map<Device*, Needs> needs;
  STRATA_ASSIGN_OR_RETURN(Device * embed_dev, device(placement.embedding.devices[0]));
  STRATA_ASSIGN_OR_RETURN(Device * head_dev, device(placement.head.devices[0]));
  needs[embed_dev].embed = true;
  needs[head_dev].head = true;
  for (const auto& slot : layers_) {
    for (size_t i = 0; i < slot->members.size(); ++i) {
      Needs& n = needs[slot->members[i]];
      n.layers = true;
      n.widest.kv_head_end = std::max(n.widest.kv_head_end, slot->shards[i].n_kv_heads());
      n.widest.ff_end = std::max(n.widest.ff_end, slot->shards[i].n_ff());
    }
  }
  // Devices that only hold KV caches still carry their runtime overhead.
  for (const auto& slot : layers_) {
    if (!slot->shared_kv) continue;
    STRATA_ASSIGN_OR_RETURN(Device * kv_dev, device(slot->where.kv_device));
    if (needs.count(kv_dev) || kv_only_overhead_.count(kv_dev)) continue;
    const uint64_t overhead = kv_dev->info().runtime_overhead_bytes;
    if (overhead == 0) continue;
    STRATA_ASSIGN_OR_RETURN(auto buf, kv_dev->adopt(nullptr, overhead, BufferUse::Overhead));
    kv_only_overhead_[kv_dev] = std::move(buf);
  }
  for (auto& [dev, need] : needs) {
    auto rt = std::make_unique<DeviceRuntime>();
    rt->device = dev;
    const DeviceInfo info = dev->info();
    if (recorder_) {
      rt->lane = -1;
      for (const auto& lane : recorder_->lanes()) {
        if (lane.name == dev->id()) rt->lane = lane.id;
      }
      if (rt->lane < 0) rt->lane = recorder_->add_lane(dev->id(), info.simulated);
    }
    if (info.runtime_overhead_bytes > 0) {
      STRATA_ASSIGN_OR_RETURN(auto buf, dev->adopt(nullptr, info.runtime_overhead_bytes, BufferUse::Overhead));
      rt->buffers.push_back(std::move(buf));
    }
    if (need.embed) {
      STRATA_ASSIGN_OR_RETURN(rt->token_embd, place_tensor(*dev, w.token_embd, rt->buffers));
    }
    if (need.head) {
      STRATA_ASSIGN_OR_RETURN(rt->output_norm, place_tensor(*dev, w.output_norm, rt->buffers));
      if (c.tied_output && need.embed) {
        rt->output = rt->token_embd;
      } else {
        STRATA_ASSIGN_OR_RETURN(rt->output, place_tensor(*dev, w.output, rt->buffers));
      }
    }
    if (need.layers && w.rope_freqs.present()) {
      STRATA_ASSIGN_OR_RETURN(model::TensorView rf, place_tensor(*dev, w.rope_freqs, rt->buffers));
      rt->rope_freqs = reinterpret_cast<const float*>(rf.data);
    }
    rt->layout = plan::scratch_layout(c, need.widest, need.layers, need.head, placement.max_batch, placement.n_ctx,
                                      placement.n_seq, info.threads);
    const uint64_t float_bytes = static_cast<uint64_t>(rt->layout.floats()) * sizeof(float);
    STRATA_ASSIGN_OR_RETURN(auto scratch, dev->allocate(float_bytes, BufferUse::Scratch));
    float* base = scratch->floats();
    rt->buffers.push_back(std::move(scratch));
    // The quantized-activation buffer is a std::vector inside LayerCompute, reserved to this size.
    STRATA_ASSIGN_OR_RETURN(auto mm, dev->adopt(nullptr, static_cast<size_t>(rt->layout.matmul_bytes), BufferUse::Scratch));
    rt->buffers.push_back(std::move(mm));
    rt->compute = std::make_unique<LayerCompute>(c, dev->pool(), carve_scratch(base, rt->layout, info.threads),
                                                 rt->rope_freqs, static_cast<size_t>(rt->layout.matmul_bytes));
    rt->worker = std::make_unique<DeviceWorker>();
    fresh[dev] = std::move(rt);
  }
  runtimes_ = std::move(fresh);
  for (auto it = kv_only_overhead_.begin(); it != kv_only_overhead_.end();) {
    it = needs.count(const_cast<Device*>(it->first)) ? kv_only_overhead_.erase(it) : std::next(it);
  }

  // Stages: embedding, the runs of blocks, the head; single-device neighbours merge.
  stages_.clear();
  for (const plan::Stage& s : plan::stages_of(placement)) {
    auto st = std::make_unique<StageRuntime>();
    st->first = s.first_layer;
    st->end = s.end_layer;
    for (const std::string& id : s.target.devices) {
      STRATA_ASSIGN_OR_RETURN(Device * d, device(id));
      st->members.push_back(runtimes_.at(d).get());
    }
    stages_.push_back(std::move(st));
  }
  auto single_on = [](const StageRuntime& st, const Device* d) {
    return st.members.size() == 1 && st.members[0]->device == d;
  };
  if (!stages_.empty() && single_on(*stages_.front(), embed_dev)) {
    stages_.front()->has_embed = true;
  } else {
    auto st = std::make_unique<StageRuntime>();
    st->has_embed = true;
    st->members.push_back(runtimes_.at(embed_dev).get());
    stages_.insert(stages_.begin(), std::move(st));
  }
  if (single_on(*stages_.back(), head_dev) && (stages_.back()->end > 0 || stages_.back()->has_embed)) {
    stages_.back()->has_head = true;
  } else {
    auto st = std::make_unique<StageRuntime>();
    st->has_head = true;
    st->members.push_back(runtimes_.at(head_dev).get());
    stages_.push_back(std::move(st));
  }
  for (size_t i = 0; i + 1 < stages_.size(); ++i) stages_[i]->next = stages_[i + 1].get();
  return {};
}

void Pipeline::start_stages() {
  for (auto& st : stages_) {
    st->stopping = false;
    st->thread = std::thread([this, s = st.get()] { stage_loop(s); });
  }
}

void Pipeline::stop_stages() {
  for (auto& st : stages_) {
    {
      std::lock_guard<std::mutex> lock(st->mutex);
      st->stopping = true;
    }
    st->cv.notify_all();
  }
  for (auto& st : stages_) {
    if (st->thread.joinable()) st->thread.join();
  }
}

void Pipeline::stage_loop(StageRuntime* stage) {
  while (true) {
    MicroBatch* mb = nullptr;
    {
      std::unique_lock<std::mutex> lock(stage->mutex);
      stage->cv.wait(lock, [stage] { return stage->stopping || !stage->queue.empty(); });
      if (stage->queue.empty()) return;
      mb = stage->queue.front();
      stage->queue.pop_front();
    }
    run_stage(*stage, *mb);
    if (stage->next) {
      {
        std::lock_guard<std::mutex> lock(stage->next->mutex);
        stage->next->queue.push_back(mb);
      }
      stage->next->cv.notify_one();
    } else {
      {
        std::lock_guard<std::mutex> lock(done_mutex_);
        ++done_count_;
      }
      done_cv_.notify_all();
    }
  }
}

void Pipeline::run_stage(StageRuntime& stage, MicroBatch& mb) {
  // Lock member devices in address order (no deadlock between overlapping groups).
  std::vector<DeviceRuntime*> order = stage.members;
  std::sort(order.begin(), order.end());
  std::vector<std::unique_lock<std::mutex>> held;
  for (DeviceRuntime* rt : order) held.emplace_back(rt->busy);
  if (stage.members.size() == 1) {
    stage.members[0]->worker->submit([&] { run_single(stage, mb); }).wait();
  } else {
    run_group(stage, mb);
  }
}

namespace {
// Copies a micro-batch's hidden state onto a device, recording a transfer when it comes from
// another device.
void transfer_in(trace::Recorder* rec, int32_t from_lane, int32_t to_lane, int32_t seq, int64_t token, int64_t n,
                 const float* src, float* dst, size_t count) {
  const bool crossing = from_lane >= 0 && from_lane != to_lane;
  trace::Span span;
  if (rec && crossing) {
    span = rec->span(from_lane, trace::EventKind::Transfer, -1, seq, token);
    span.set_peer(to_lane);
    span.set_bytes(count * sizeof(float));
    span.set_n_tokens(static_cast<int32_t>(n));
  }
  std::memcpy(dst, src, count * sizeof(float));
}
}  // namespace

// Runs on the stage's device worker.
void Pipeline::run_single(StageRuntime& stage, MicroBatch& mb) {
  const model::ModelConfig& c = model_.config();
  DeviceRuntime& rt = *stage.members[0];
  LayerCompute& lc = *rt.compute;
  const ScratchViews& s = lc.scratch();
  const size_t count = static_cast<size_t>(mb.n * c.n_embd);
  if (stage.has_embed) {
    trace::Span span;
    if (recorder_) span = recorder_->span(rt.lane, trace::EventKind::Embed, -1, mb.seq, mb.pos0);
    span.set_n_tokens(static_cast<int32_t>(mb.n));
    lc.embed(rt.token_embd, mb.tokens, mb.n, s.hidden);
  } else {
    transfer_in(recorder_, lane_of(mb.holder), rt.lane, mb.seq, mb.pos0, mb.n, mb.hidden.data(), s.hidden, count);
  }
  for (int64_t l = stage.first; l < stage.end; ++l) {
    const LayerSlot& slot = *layers_[static_cast<size_t>(l)];
    trace::Span span;
    if (recorder_) span = recorder_->span(rt.lane, trace::EventKind::Compute, static_cast<int32_t>(l), mb.seq, mb.pos0);
    span.set_n_tokens(static_cast<int32_t>(mb.n));
    lc.attention_partial(slot.weights[0], s.hidden, mb.n, mb.pos0, kv_view(slot, 0, mb.seq), s.proj);
    kernels::add_f32(s.hidden, s.proj, static_cast<int64_t>(count));
    lc.ffn_partial(slot.weights[0], s.hidden, mb.n, s.proj);
    kernels::add_f32(s.hidden, s.proj, static_cast<int64_t>(count));
  }
  if (stage.has_head && mb.logits) {
    trace::Span span;
    if (recorder_) span = recorder_->span(rt.lane, trace::EventKind::Head, -1, mb.seq, mb.pos0 + mb.n - 1);
    lc.head(rt.output_norm, rt.output, s.hidden + (mb.n - 1) * c.n_embd, s.logits + mb.seq * c.n_vocab);
    std::memcpy(mb.logits, s.logits + mb.seq * c.n_vocab, static_cast<size_t>(c.n_vocab) * sizeof(float));
  }
  std::memcpy(mb.hidden.data(), s.hidden, count * sizeof(float));
  mb.holder = rt.device;
}

// Runs on the stage thread; members compute concurrently on their own workers.
void Pipeline::run_group(StageRuntime& stage, MicroBatch& mb) {
  const model::ModelConfig& c = model_.config();
  const size_t count = static_cast<size_t>(mb.n * c.n_embd);
  const size_t k = stage.members.size();
  std::vector<std::future<void>> pending(k);
  auto on_each = [&](auto&& work) {
    for (size_t i = 0; i < k; ++i) pending[i] = stage.members[i]->worker->submit([&, i] { work(i); });
    for (auto& f : pending) f.wait();
  };
  std::vector<float*> partials(k);
  for (size_t i = 0; i < k; ++i) partials[i] = stage.members[i]->compute->scratch().proj;
  auto all_reduce = [&](int64_t layer) {
    const int64_t t0 = recorder_ ? recorder_->now_ns() : 0;
    (void)comm_.all_reduce_sum(partials, count);
    if (recorder_) {
      const int64_t t1 = recorder_->now_ns();
      for (size_t i = 0; i < k; ++i) {
        trace::Event e;
        e.lane = stage.members[i]->lane;
        e.kind = trace::EventKind::AllReduce;
        e.layer = static_cast<int32_t>(layer);
        e.seq = mb.seq;
        e.token = mb.pos0;
        e.start_ns = t0;
        e.duration_ns = t1 - t0;
        e.bytes = comm::Communicator::all_reduce_bytes_per_rank(count, k);
        e.n_tokens = static_cast<int32_t>(mb.n);
        recorder_->record(e);
      }
    }
  };
  const int32_t from_lane = lane_of(mb.holder);
  on_each([&](size_t i) {
    DeviceRuntime& rt = *stage.members[i];
    transfer_in(recorder_, from_lane, rt.lane, mb.seq, mb.pos0, mb.n, mb.hidden.data(), rt.compute->scratch().hidden,
                count);
  });
  for (int64_t l = stage.first; l < stage.end; ++l) {
    const LayerSlot& slot = *layers_[static_cast<size_t>(l)];
    on_each([&](size_t i) {
      DeviceRuntime& rt = *stage.members[i];
      trace::Span span;
      if (recorder_) span = recorder_->span(rt.lane, trace::EventKind::Compute, static_cast<int32_t>(l), mb.seq, mb.pos0);
      span.set_n_tokens(static_cast<int32_t>(mb.n));
      rt.compute->attention_partial(slot.weights[i], rt.compute->scratch().hidden, mb.n, mb.pos0,
                                    kv_view(slot, i, mb.seq), rt.compute->scratch().proj);
    });
    all_reduce(l);
    on_each([&](size_t i) {
      DeviceRuntime& rt = *stage.members[i];
      const ScratchViews& s = rt.compute->scratch();
      trace::Span span;
      if (recorder_) span = recorder_->span(rt.lane, trace::EventKind::Compute, static_cast<int32_t>(l), mb.seq, mb.pos0);
      span.set_n_tokens(static_cast<int32_t>(mb.n));
      kernels::add_f32(s.hidden, s.proj, static_cast<int64_t>(count));
      rt.compute->ffn_partial(slot.weights[i], s.hidden, mb.n, s.proj);
    });
    all_reduce(l);
    on_each([&](size_t i) {
      const ScratchViews& s = stage.members[i]->compute->scratch();
      kernels::add_f32(s.hidden, s.proj, static_cast<int64_t>(count));
    });
  }
  std::memcpy(mb.hidden.data(), stage.members[0]->compute->scratch().hidden, count * sizeof(float));
  mb.holder = stage.members[0]->device;
}

Status Pipeline::eval(std::span<const Request> requests) {
  const model::ModelConfig& c = model_.config();
  std::vector<bool> seen(static_cast<size_t>(placement_.n_seq), false);
  for (const Request& r : requests) {
    if (r.seq < 0 || r.seq >= placement_.n_seq)
      return Error{Code::InvalidArgument, "sequence " + std::to_string(r.seq) + " outside [0, " +
                                              std::to_string(placement_.n_seq) + ")"};
    if (seen[static_cast<size_t>(r.seq)])
      return Error{Code::InvalidArgument, "sequence " + std::to_string(r.seq) + " appears twice in one eval"};
    seen[static_cast<size_t>(r.seq)] = true;
    if (r.tokens.empty()) return Error{Code::InvalidArgument, "eval of zero tokens"};
    const int64_t pos = positions_[static_cast<size_t>(r.seq)];
    if (pos + static_cast<int64_t>(r.tokens.size()) > placement_.n_ctx)
      return Error{Code::OutOfRange, std::to_string(r.tokens.size()) + " tokens at position " + std::to_string(pos) +
                                         " exceed the context length " + std::to_string(placement_.n_ctx)};
    for (int32_t t : r.tokens) {
      if (t < 0 || t >= c.n_vocab)
        return Error{Code::InvalidArgument, "token id " + std::to_string(t) + " outside [0, " +
                                                std::to_string(c.n_vocab) + ")"};
    }
  }
  // Chunks, interleaved across requests so every sequence moves; a sequence's chunks keep order.
  std::vector<std::vector<std::unique_ptr<MicroBatch>>> chunks(requests.size());
  size_t most = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    const int64_t total = static_cast<int64_t>(r.tokens.size());
    for (int64_t start = 0; start < total; start += placement_.max_batch) {
      auto mb = std::make_unique<MicroBatch>();
      mb->seq = r.seq;
      mb->tokens = r.tokens.data() + start;
      mb->n = std::min(placement_.max_batch, total - start);
      mb->pos0 = positions_[static_cast<size_t>(r.seq)] + start;
      mb->hidden.resize(static_cast<size_t>(mb->n * c.n_embd));
      mb->logits = start + mb->n == total ? r.logits : nullptr;
      chunks[i].push_back(std::move(mb));
    }
    most = std::max(most, chunks[i].size());
  }
  int64_t total_batches = 0;
  {
    std::lock_guard<std::mutex> lock(done_mutex_);
    done_count_ = 0;
  }
  StageRuntime& first = *stages_.front();
  {
    std::lock_guard<std::mutex> lock(first.mutex);
    for (size_t j = 0; j < most; ++j) {
      for (auto& list : chunks) {
        if (j < list.size()) {
          first.queue.push_back(list[j].get());
          ++total_batches;
        }
      }
    }
  }
  first.cv.notify_one();
  {
    std::unique_lock<std::mutex> lock(done_mutex_);
    done_cv_.wait(lock, [&] { return done_count_ == total_batches; });
  }
  for (const Request& r : requests) positions_[static_cast<size_t>(r.seq)] += static_cast<int64_t>(r.tokens.size());
  return {};
}

void Pipeline::truncate(int32_t seq, int64_t n) {
  if (seq < 0 || seq >= placement_.n_seq) return;
  int64_t& p = positions_[static_cast<size_t>(seq)];
  p = std::clamp<int64_t>(n, 0, p);
}

Expected<int64_t> Pipeline::apply(const plan::Placement& next) {
  const model::ModelConfig& c = model_.config();
  if (next.n_ctx != placement_.n_ctx || next.n_seq != placement_.n_seq || next.max_batch != placement_.max_batch)
    return Error{Code::InvalidArgument, "a new placement may not change n_ctx, n_seq or max_batch (reload instead)"};
  if (static_cast<int64_t>(next.layers.size()) != c.n_layers)
    return Error{Code::InvalidArgument, "placement has " + std::to_string(next.layers.size()) + " blocks, the model " +
                                            std::to_string(c.n_layers)};
  for (const plan::Target* t : {&next.embedding, &next.head}) {
    if (t->devices.size() != 1) return Error{Code::InvalidArgument, "the embedding and the head each need one device"};
    STRATA_RETURN_IF_ERROR(device(t->devices[0]));
  }
  stop_stages();
  // Build every changed block before touching the old ones, so a failure changes nothing.
  std::vector<std::unique_ptr<LayerSlot>> fresh(layers_.size());
  int64_t moved = 0;
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (layers_[l]->where == next.layers[l]) continue;
    auto slot = build_layer(static_cast<int64_t>(l), next.layers[l]);
    if (!slot.ok()) {
      start_stages();
      return std::move(slot).error();
    }
    fresh[l] = std::move(*slot);
    ++moved;
  }
  // Carry the KV contents of live positions over, head by head.
  const int64_t hd = c.head_dim;
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (!fresh[l]) continue;
    for (int32_t seq = 0; seq < placement_.n_seq; ++seq) {
      const int64_t live = positions_[static_cast<size_t>(seq)];
      for (size_t from = 0; from < layers_[l]->members.size(); ++from) {
        const KvView src = kv_view(*layers_[l], from, seq);
        const plan::LayerShard& fs = layers_[l]->shards[from];
        for (size_t to = 0; to < fresh[l]->members.size(); ++to) {
          const KvView dst = kv_view(*fresh[l], to, seq);
          const plan::LayerShard& ts = fresh[l]->shards[to];
          const int64_t h0 = std::max(fs.kv_head_begin, ts.kv_head_begin), h1 = std::min(fs.kv_head_end, ts.kv_head_end);
          if (h0 >= h1) continue;
          const size_t bytes = static_cast<size_t>((h1 - h0) * hd) * sizeof(float);
          for (int64_t pos = 0; pos < live; ++pos) {
            std::memcpy(dst.k + pos * dst.stride + (h0 - ts.kv_head_begin) * hd,
                        src.k + pos * src.stride + (h0 - fs.kv_head_begin) * hd, bytes);
            std::memcpy(dst.v + pos * dst.stride + (h0 - ts.kv_head_begin) * hd,
                        src.v + pos * src.stride + (h0 - fs.kv_head_begin) * hd, bytes);
          }
        }
      }
    }
    layers_[l] = std::move(fresh[l]);
  }
  const plan::Placement previous = placement_;
  placement_ = next;
  runtimes_.clear();
  kv_only_overhead_.clear();
  if (Status s = build_runtimes(next); !s.ok()) {
    placement_ = previous;
    (void)build_runtimes(previous);
    start_stages();
    return s.error();
  }
  start_stages();
  return moved;
}

std::map<std::string, MemoryUse> Pipeline::memory_by_device() const {
  std::map<std::string, MemoryUse> out;
  for (const Device* d : devices_) out[d->id()] = d->memory_use();
  return out;
}

void Pipeline::snapshot_memory() const {
  if (!recorder_) return;
  int64_t live = 0;
  for (int64_t p : positions_) live += p;
  const double used_fraction =
      static_cast<double>(live) / static_cast<double>(placement_.n_ctx * placement_.n_seq);
  for (const auto& [dev, rt] : runtimes_) {
    const MemoryUse m = dev->memory_use();
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
