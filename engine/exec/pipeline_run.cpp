// engine/exec/pipeline_run.cpp — streaming micro-batches through the stages of a built pipeline.
// Threads: the driver (eval), one thread per stage, one worker per device (the only thread that
// uses that device's Ops). A stage's device work ends with a blocking copy to the host (or an
// explicit synchronize), so a micro-batch handed to the next stage is complete.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>

#include "engine/comm/transfer.h"
#include "engine/exec/pipeline_internal.h"

namespace strata::exec {

namespace {

// Trace spans for one device's work in one stage. Host backends run each op to completion, so
// a clock read around the work is the truth; asynchronous backends (CUDA, and a paced simulated
// device, whose timeline runs behind the host that issues to it) record events into their queue,
// converted to the recorder's clock once the stage has synchronized (flush()).
class SpanClock {
 public:
  SpanClock(trace::Recorder* rec, backend::Ops& ops, bool async) : rec_(rec), ops_(ops), async_(async && rec) {
    if (async_) {
      auto e = ops_.record_event();
      if (e.ok()) {
        base_event_ = std::move(*e);
        // The base event completes once the device has run what is queued before it: later than
        // now on a device the host issues ahead of (a paced simulated device says by how much).
        base_ns_ = rec_->now_ns() + base_event_->ns_from_now().value_or(0);
      } else {
        async_ = false;
      }
    }
  }
  void begin(const trace::Event& proto) {
    if (!rec_) return;
    open_ = proto;
    if (async_) {
      auto e = ops_.record_event();
      start_event_ = e.ok() ? std::move(*e) : nullptr;
    } else {
      open_.start_ns = rec_->now_ns();
    }
  }
  void end() {
    if (!rec_) return;
    if (!async_) {
      open_.duration_ns = rec_->now_ns() - open_.start_ns;
      rec_->record(open_);
      return;
    }
    auto e = ops_.record_event();
    if (start_event_ && e.ok()) pending_.push_back({open_, std::move(start_event_), std::move(*e)});
  }
  // After the device synchronized: records the spans timed by events.
  void flush() {
    for (Pending& p : pending_) {
      auto start = p.start->elapsed_ns_since(*base_event_);
      auto length = p.end->elapsed_ns_since(*p.start);
      if (!start.ok() || !length.ok()) continue;
      p.event.start_ns = base_ns_ + *start;
      p.event.duration_ns = std::max<int64_t>(0, *length);
      rec_->record(p.event);
    }
    pending_.clear();
  }

 private:
  struct Pending {
    trace::Event event;
    std::unique_ptr<backend::Event> start, end;
  };
  trace::Recorder* rec_;
  backend::Ops& ops_;
  bool async_;
  std::unique_ptr<backend::Event> base_event_, start_event_;
  int64_t base_ns_ = 0;
  trace::Event open_;
  std::vector<Pending> pending_;
};

// Whether a device's spans are timed by its events (SpanClock's async): where its memory is not
// the host's, or where its ops return before its queue has run them (Ops::issues_ahead).
bool timed_by_events(const backend::Device& device, const backend::Ops& ops) {
  return !device.host_visible() || ops.issues_ahead();
}

trace::Event proto(int32_t lane, trace::EventKind kind, int32_t layer, int32_t seq, int64_t token, int64_t n) {
  trace::Event e;
  e.lane = lane;
  e.kind = kind;
  e.layer = layer;
  e.seq = seq;
  e.token = token;
  e.n_tokens = static_cast<int32_t>(n);
  return e;
}

// Copies a micro-batch's hidden state (host memory) onto a device, recording a transfer when it
// comes from another device.
Status transfer_in(trace::Recorder* rec, int32_t from_lane, int32_t to_lane, backend::Ops& ops, int32_t seq,
                   int64_t token, int64_t n, const float* src, float* dst, size_t count) {
  const bool crossing = from_lane >= 0 && from_lane != to_lane;
  trace::Span span;
  if (rec && crossing) {
    span = rec->span(from_lane, trace::EventKind::Transfer, -1, seq, token);
    span.set_peer(to_lane);
    span.set_bytes(count * sizeof(float));
    span.set_n_tokens(static_cast<int32_t>(n));
  }
  return ops.from_host(src, dst, count * sizeof(float));
}

}  // namespace

KvView Pipeline::kv_view(const LayerSlot& slot, size_t member, int32_t seq) const {
  const model::ModelConfig& c = model_.config();
  const int64_t n_ctx = placement_.n_ctx, n_seq = placement_.n_seq, rows = slot.kv_rows;
  // Byte offset of n cache elements (whole blocks: strides and head columns are multiples of 32
  // for Q8_0).
  auto bytes = [&](int64_t n) { return static_cast<size_t>(kernels::row_bytes(slot.kv_type, n)); };
  KvView v;
  v.n_ctx = n_ctx;
  v.cells = rows < n_ctx ? rows : 0;
  v.kv_type = slot.kv_type;
  uint8_t* base;
  int64_t col = 0;
  if (slot.shared_kv) {
    base = slot.kv_buffers[0]->data();
    v.stride = c.kv_dim();
    col = slot.shards[member].kv_head_begin * c.head_dim;
  } else {
    base = slot.kv_buffers[member]->data();
    v.stride = slot.shards[member].n_kv_heads() * c.head_dim;
  }
  v.k = base + bytes(static_cast<int64_t>(seq) * rows * v.stride + col);
  // MLA keeps one plane: the values are the first kv_lora_rank elements of the latent rows.
  v.v = c.kv_planes() == 1 ? v.k : base + bytes((n_seq + static_cast<int64_t>(seq)) * rows * v.stride + col);
  return v;
}

int32_t Pipeline::lane_of(const backend::Device* d) const {
  if (!d || !runtime_) return -1;
  auto it = runtime_->runtimes.find(d);
  return it == runtime_->runtimes.end() ? -1 : it->second->lane;
}

Status Pipeline::await_work(DeviceRuntime& rt, std::future<void>& done) {
  const std::chrono::milliseconds limit = device_timeout();
  if (limit.count() <= 0 || !rt.device->can_be_lost()) {
    done.wait();
    return {};
  }
  if (done.wait_for(limit) == std::future_status::ready) return {};
  char why[96];
  std::snprintf(why, sizeof why, "did not answer within %.3g s (hung; device timeout)",
                static_cast<double>(limit.count()) / 1000.0);
  rt.device->mark_failed(why);
  // The work still refers to this stage's state: wait until it gives up (a failed device's
  // blocking calls return), so nothing it touches is freed under it.
  done.wait();
  return Error{Code::Device, "device '" + rt.device->id() + "' " + why};
}

void Pipeline::start_stages() {
  if (!runtime_) return;
  for (auto& st : runtime_->stages) {
    st->stopping = false;
    st->thread = std::thread([this, s = st.get()] { stage_loop(s); });
  }
}

void Pipeline::stop_stages() {
  if (!runtime_) return;
  for (auto& st : runtime_->stages) {
    {
      std::lock_guard<std::mutex> lock(st->mutex);
      st->stopping = true;
    }
    st->cv.notify_all();
  }
  for (auto& st : runtime_->stages) {
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
    if (mb->status.ok()) run_stage(*stage, *mb);
    if (stage->next) {
      {
        std::lock_guard<std::mutex> lock(stage->next->mutex);
        stage->next->queue.push_back(mb);
      }
      stage->next->cv.notify_one();
    } else {
      {
        std::lock_guard<std::mutex> lock(done_mutex_);
        auto it = in_flight_.find(mb->eval_id);
        if (it != in_flight_.end()) ++it->second->done;
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
  Status s;
  if (stage.ranks.empty()) {
    s = run_local(stage, mb);
  } else if (stage.local.empty()) {
    // Every member on other ranks: one call per rank (a group spanning several of them all-reduces
    // among them); the first rank's answer carries the hidden state on.
    std::vector<std::future<Status>> others;
    for (size_t i = 1; i < stage.ranks.size(); ++i)
      others.push_back(std::async(std::launch::async, [&, i] { return run_remote(stage, mb, stage.ranks[i], false); }));
    s = run_remote(stage, mb, stage.ranks[0], true);
    for (auto& f : others) {
      Status o = f.get();
      if (s.ok() && !o.ok()) s = std::move(o);
    }
  } else {
    // A group spanning this rank and others: each rank runs its members, all-reducing over MPI.
    std::vector<std::future<Status>> others;
    for (int r : stage.ranks)
      others.push_back(std::async(std::launch::async, [&, r] { return run_remote(stage, mb, r, false); }));
    s = run_local(stage, mb);
    for (auto& f : others) {
      Status o = f.get();
      if (s.ok() && !o.ok()) s = std::move(o);
    }
  }
  if (!s.ok()) mb.status = std::move(s);
}

Status Pipeline::run_local(StageRuntime& stage, MicroBatch& mb) {
  if (stage.members.size() == 1) {
    Status s;
    std::future<void> done = stage.members[0]->worker->submit([&] { s = run_single(stage, mb); });
    Status waited = await_work(*stage.members[0], done);
    if (!waited.ok()) s = std::move(waited);
    return s;
  }
  return run_group(stage, mb);
}

void Pipeline::mark_lost_rank_devices(int rank, const std::string& why) {
  if (!ranks_) return;
  for (backend::Device* d : devices_) {
    const int r = d->remote_rank();
    if (r >= 0 && ranks_->rank_lost(r) && !d->failed()) d->mark_failed(r == rank ? why : "rank " + std::to_string(r) + " is lost");
  }
}

// The driver's side of a stage on another rank: the micro-batch goes over (tokens, hidden state),
// the hidden state and any logits come back. record: this call carries the result on (the others
// of a group only confirm).
Status Pipeline::run_remote(StageRuntime& stage, MicroBatch& mb, int rank, bool record) {
  if (!ranks_) return Error{Code::Internal, "a stage on another rank, in one process"};
  const model::ModelConfig& c = model_.config();
  StageCall call;
  for (size_t i = 0; i < runtime_->stages.size(); ++i) {
    if (runtime_->stages[i].get() == &stage) call.stage = static_cast<int32_t>(i);
  }
  for (const MicroBatch::Part& p : mb.parts) {
    if (p.logits && p.logit_rows > 1 && stage.has_head)
      return Error{Code::Unsupported, "the logits of every token (a speculative step) from a head on rank " +
                                            std::to_string(rank)};
    call.parts.push_back({p.seq, p.row0, p.n, p.pos0, p.logits != nullptr});
  }
  call.n = mb.n;
  if (stage.has_embed) {
    call.tokens = mb.tokens;
  } else if (mb.hidden_rank >= 0) {
    call.hidden_from = mb.hidden_rank;
    call.hidden_tag = mb.hidden_tag;
  } else {
    call.hidden = mb.hidden;
  }
  call.holder = mb.holder ? mb.holder->id() : std::string();
  // The next stage only on other workers: this rank sends its output straight there.
  const StageRuntime* next = stage.next;
  if (record && stage.local.empty() && next && next->local.empty() && !next->ranks.empty() &&
      std::find(next->ranks.begin(), next->ranks.end(), rank) == next->ranks.end()) {
    call.forward_to.assign(next->ranks.begin(), next->ranks.end());
    call.forward_tag = ranks_->next_transfer_tag();
    call.forward_device = next->members.front()->device->id();
  }
  backend::Device* remote = nullptr;
  for (DeviceRuntime* m : stage.members) {
    if (m->device->remote_rank() == rank && !remote) remote = m->device;
  }
  // The crossing out, on the sending lane (the device that holds the hidden state).
  trace::Span out;
  const int32_t from_lane = lane_of(mb.holder), remote_lane = lane_of(remote);
  if (recorder_ && from_lane >= 0 && !call.hidden.empty()) {
    out = recorder_->span(from_lane, trace::EventKind::Transfer, -1, mb.seq(), mb.pos0());
    out.set_peer(remote_lane);
    out.set_bytes(call.hidden.size() * sizeof(float));
    out.set_n_tokens(static_cast<int32_t>(mb.n));
  }
  Status s = ranks_->run_stage(rank, call);
  out.end();
  if (!s.ok()) {
    // A rank that stopped answering (this one, or the worker it was to get its input from): its
    // devices are lost (the scheduler re-plans around them).
    mark_lost_rank_devices(rank, s.error().message);
    return s;
  }
  if (recorder_) {
    // The other rank's spans, on rank 0's clock already; lanes by device id.
    const int64_t epoch_abs =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count() -
        recorder_->now_ns();
    const int32_t next_lane = stage.next && !stage.next->members.empty() ? stage.next->members[0]->lane : -1;
    for (StageCall::LaneEvent& le : call.events) {
      trace::Event e = le.event;
      e.lane = lane_named(le.lane);
      if (e.lane < 0) continue;
      e.peer_lane = le.peer.empty() ? (e.kind == trace::EventKind::Transfer ? next_lane : -1) : lane_named(le.peer);
      e.start_ns -= epoch_abs;
      recorder_->record(e);
    }
    // The crossing back, on the other rank's lane: the answer's bytes coming off the link (none
    // when the hidden state went straight on to another worker: that rank traced it).
    if (remote_lane >= 0 && call.reply_end_ns > 0 && call.forward_to.empty()) {
      trace::Event e = proto(remote_lane, trace::EventKind::Transfer, -1, mb.seq(), mb.pos0(), mb.n);
      e.peer_lane = next_lane;
      e.bytes = call.reply_bytes;
      e.duration_ns = call.reply_receive_ns;
      e.start_ns = call.reply_end_ns - call.reply_receive_ns - epoch_abs;
      recorder_->record(e);
    }
  }
  if (!record) return {};
  if (!call.forward_to.empty()) {
    mb.hidden.clear();
    mb.hidden_rank = rank;
    mb.hidden_tag = call.forward_tag;
    mb.holder = remote;
    return {};
  }
  mb.hidden_rank = -1;
  if (call.hidden.size() != static_cast<size_t>(mb.n * c.n_embd))
    return Error{Code::Corrupt, "rank " + std::to_string(rank) + " returned " + std::to_string(call.hidden.size()) +
                                    " hidden floats for " + std::to_string(mb.n) + " rows"};
  mb.hidden = std::move(call.hidden);
  size_t k = 0;
  for (MicroBatch::Part& p : mb.parts) {
    if (!p.logits || !stage.has_head) continue;
    if (k >= call.logits.size() || call.logits[k].size() != static_cast<size_t>(c.n_vocab))
      return Error{Code::Corrupt, "rank " + std::to_string(rank) + " returned too few logits"};
    std::copy(call.logits[k].begin(), call.logits[k].end(), p.logits);
    ++k;
  }
  mb.holder = remote;
  return {};
}

Status Pipeline::serve_stage(StageCall& call) {
  const model::ModelConfig& c = model_.config();
  if (!runtime_ || call.stage < 0 || static_cast<size_t>(call.stage) >= runtime_->stages.size())
    return Error{Code::InvalidArgument, "no stage " + std::to_string(call.stage) + " in this rank's placement"};
  StageRuntime& stage = *runtime_->stages[static_cast<size_t>(call.stage)];
  if (stage.local.empty())
    return Error{Code::InvalidArgument, "stage " + std::to_string(call.stage) + " has no device of this rank"};
  MicroBatch mb;
  mb.n = call.n;
  mb.tokens = std::move(call.tokens);
  if (call.n <= 0 || (stage.has_embed ? mb.tokens.size() : call.hidden.size() / static_cast<size_t>(c.n_embd)) !=
                         static_cast<size_t>(call.n))
    return Error{Code::InvalidArgument, "stage call of " + std::to_string(call.n) + " rows with mismatched inputs"};
  for (int32_t t : mb.tokens) {
    if (t < 0 || t >= c.n_vocab) return Error{Code::InvalidArgument, "token id " + std::to_string(t) + " out of range"};
  }
  mb.hidden = std::move(call.hidden);
  mb.hidden.resize(static_cast<size_t>(mb.n * c.n_embd));
  call.logits.clear();
  for (const StageCall::Part& p : call.parts) {
    if (p.seq < 0 || p.seq >= placement_.n_seq || p.pos0 < 0 || p.n <= 0 || p.row0 < 0 || p.row0 + p.n > mb.n ||
        p.pos0 + p.n > placement_.n_ctx)
      return Error{Code::InvalidArgument, "stage call with a part outside the placement's sequences or context"};
    if (p.want_logits && stage.has_head) call.logits.emplace_back(static_cast<size_t>(c.n_vocab));
  }
  size_t k = 0;
  for (const StageCall::Part& p : call.parts) {
    MicroBatch::Part part;
    part.seq = p.seq;
    part.row0 = p.row0;
    part.n = p.n;
    part.pos0 = p.pos0;
    part.logits = p.want_logits && stage.has_head ? call.logits[k++].data() : nullptr;
    mb.parts.push_back(part);
  }
  if (mb.parts.empty()) return Error{Code::InvalidArgument, "stage call with no sequence"};
  mb.holder = nullptr;
  if (!call.holder.empty()) {
    auto d = device(call.holder);
    if (d.ok()) mb.holder = *d;
  }
  if (recorder_ && !stage.has_embed) {
    // The crossing in, on this rank's lane: the hidden state coming off the link.
    trace::Event e = proto(stage.local[0]->lane, trace::EventKind::Transfer, -1, mb.seq(), mb.pos0(), mb.n);
    e.peer_lane = lane_named(call.holder);
    e.bytes = static_cast<uint64_t>(mb.n * c.n_embd) * sizeof(float);
    e.duration_ns = call.receive_ns;
    e.start_ns = recorder_->now_ns() - call.receive_ns;
    recorder_->record(e);
  }
  std::vector<DeviceRuntime*> order = stage.local;
  std::sort(order.begin(), order.end());
  std::vector<std::unique_lock<std::mutex>> held;
  for (DeviceRuntime* rt : order) held.emplace_back(rt->busy);
  STRATA_RETURN_IF_ERROR(run_local(stage, mb));
  for (const MicroBatch::Part& p : mb.parts) {
    int64_t& pos = positions_[static_cast<size_t>(p.seq)];
    pos = p.pos0 + p.n;
    written_[static_cast<size_t>(p.seq)] = std::max(written_[static_cast<size_t>(p.seq)], pos);
  }
  call.hidden = std::move(mb.hidden);
  call.out_holder = mb.holder ? mb.holder->id() : std::string();
  return {};
}

void Pipeline::set_position(int32_t seq, int64_t n) {
  if (seq < 0 || seq >= placement_.n_seq) return;
  positions_[static_cast<size_t>(seq)] = std::clamp<int64_t>(n, 0, placement_.n_ctx);
  // The driver checked what its rings hold (kept_prefix) before telling this rank.
  written_[static_cast<size_t>(seq)] = positions_[static_cast<size_t>(seq)];
}

std::vector<SeqRows> Pipeline::seq_rows(const LayerSlot& slot, size_t member, const MicroBatch& mb) const {
  std::vector<SeqRows> out;
  out.reserve(mb.parts.size());
  for (const MicroBatch::Part& p : mb.parts) out.push_back({p.row0, p.n, p.pos0, kv_view(slot, member, p.seq)});
  return out;
}

bool Pipeline::all_logits_supported() const {
  if (!runtime_) return false;
  for (const auto& stage : runtime_->stages) {
    if (stage->has_head) return stage->ranks.empty() || !stage->local.empty();
  }
  return false;
}

// Runs on the worker of the device holding the head; mb's rows are in its scratch hidden.
Status Pipeline::run_head(DeviceRuntime& rt, MicroBatch& mb, trace::Recorder* rec) {
  const model::ModelConfig& c = model_.config();
  std::vector<int64_t> rows;
  std::vector<float*> dst;
  for (const MicroBatch::Part& p : mb.parts) {
    if (!p.logits) continue;
    for (int64_t j = 0; j < p.logit_rows; ++j) {
      rows.push_back(p.row0 + p.n - p.logit_rows + j);
      dst.push_back(p.logits + j * c.n_vocab);
    }
  }
  if (rows.empty()) return {};
  backend::Ops& ops = *rt.ops;
  const ScratchViews& s = rt.block->scratch();
  SpanClock clock(rec, ops, timed_by_events(*rt.device, ops));
  // The logits scratch holds plan::head_rows rows; a speculative step may ask for more (every
  // drafted token of every sequence), so the head runs over pieces of at most that many rows. Each
  // row's logits do not depend on the rows beside it (batch-invariant matmul).
  const size_t piece = static_cast<size_t>(std::max<int64_t>(1, plan::head_rows(placement_.n_seq, placement_.max_batch)));
  for (size_t at = 0; at < rows.size(); at += piece) {
    const size_t n = std::min(piece, rows.size() - at);
    clock.begin(proto(rt.lane, trace::EventKind::Head, -1, mb.seq(), mb.pos0() + mb.n - 1, static_cast<int64_t>(n)));
    STRATA_RETURN_IF_ERROR(rt.block->head_rows(rt.output_norm, rt.output_norm_b, rt.output, s.hidden,
                                               std::span<const int64_t>(rows.data() + at, n), s.logits));
    clock.end();
    // This device's vocabulary rows (all of them, or its share of a tensor group's head): the
    // logits of row i are [n][output.rows] in scratch, columns head_row_begin.. of the host's.
    const int64_t width = rt.output.rows;
    for (size_t i = 0; i < n; ++i)
      STRATA_RETURN_IF_ERROR(ops.to_host(s.logits + static_cast<int64_t>(i) * width, dst[at + i] + rt.head_row_begin,
                                         static_cast<size_t>(width) * sizeof(float)));
  }
  clock.flush();
  return {};
}

// One unit of a stage on a single device (rt's worker): a whole block, or one part of a block
// placed in parts (attention; the FFN part; a range of routed experts). The residual stream is
// scratch().hidden; a block's unfinished update stays in scratch().proj (its MoE routing and
// normalised input in mb.routing and scratch().norm) until its last unit adds it.
Status Pipeline::run_unit(DeviceRuntime& rt, const LayerSlot& slot, const plan::BlockUnit& u, MicroBatch& mb) {
  BlockForward& block = *rt.block;
  const ScratchViews& s = block.scratch();
  const int64_t l = u.layer;
  if (u.whole_block || u.kind == plan::PartKind::Attention) {
    const ShardWeights& w = slot.weights[0];
    STRATA_RETURN_IF_ERROR(block.attention_partial(w, l, s.hidden, mb.n, seq_rows(slot, 0, mb), s.proj));
    STRATA_RETURN_IF_ERROR(block.residual_add(w.post_attn_norm, s.hidden, s.proj, mb.n));
    // A parallel block's (cohere2's) attention step ran its FFN too.
    if (!u.whole_block || block.config().parallel_block) return {};
    STRATA_RETURN_IF_ERROR(block.ffn_partial(w, s.hidden, mb.n, s.proj));
    return block.residual_add(w.post_ffn_norm, s.hidden, s.proj, mb.n);
  }
  const ShardWeights& ffn = slot.ffn_device ? slot.ffn_weights : slot.weights[0];
  if (u.kind == plan::PartKind::Ffn) {
    if (u.last_of_block) {
      STRATA_RETURN_IF_ERROR(block.ffn_partial(ffn, s.hidden, mb.n, s.proj));
      return block.residual_add(ffn.post_ffn_norm, s.hidden, s.proj, mb.n);
    }
    // The router and shared expert here; the routed experts run in the units that follow. Their
    // input (the normalised rows) goes with the routing when one of them is on another device.
    mb.routing.want_x_norm = std::any_of(slot.expert_parts.begin(), slot.expert_parts.end(),
                                         [&](const LayerSlot::ExpertPart& e) { return e.device != rt.device; });
    return block.moe_route(ffn, s.hidden, mb.n, mb.routing, s.proj);
  }
  const LayerSlot::ExpertPart* part = nullptr;
  for (const LayerSlot::ExpertPart& e : slot.expert_parts) {
    if (e.begin == u.expert_begin && e.end == u.expert_end) part = &e;
  }
  if (!part) return Error{Code::Internal, "layer " + std::to_string(l) + ": no experts " + std::to_string(u.expert_begin) +
                                             "-" + std::to_string(u.expert_end - 1) + " placed"};
  STRATA_RETURN_IF_ERROR(block.moe_experts(part->weights, s.norm, mb.routing, mb.n, s.proj));
  if (!u.last_of_block) return {};
  // No MoE architecture has a post-FFN norm (ModelConfig::has_post_norms is gemma3's), so the
  // experts' device needs none: the weights placed with them have it absent.
  return block.residual_add(part->weights.post_ffn_norm, s.hidden, s.proj, mb.n);
}

// Runs on the stage's device worker.
Status Pipeline::run_single(StageRuntime& stage, MicroBatch& mb) {
  const model::ModelConfig& c = model_.config();
  DeviceRuntime& rt = *stage.members[0];
  BlockForward& block = *rt.block;
  backend::Ops& ops = *rt.ops;
  const ScratchViews& s = block.scratch();
  const size_t count = static_cast<size_t>(mb.n * c.n_embd);
  SpanClock clock(recorder_, ops, timed_by_events(*rt.device, ops));
  if (stage.has_embed) {
    clock.begin(proto(rt.lane, trace::EventKind::Embed, -1, mb.seq(), mb.pos0(), mb.n));
    STRATA_RETURN_IF_ERROR(block.embed(rt.token_embd, mb.tokens.data(), mb.n, s.hidden));
    clock.end();
  } else {
    STRATA_RETURN_IF_ERROR(transfer_in(recorder_, lane_of(mb.holder), rt.lane, ops, mb.seq(), mb.pos0(), mb.n,
                                       mb.hidden.data(), s.hidden, count));
  }
  // A block in parts whose update is under way arrives with its partial sum (and routing).
  const size_t pending_count = static_cast<size_t>(mb.n * c.n_embd);
  if (!stage.units.empty() && stage.units.front().kind == plan::PartKind::Experts) {
    if (mb.pending_update.size() != pending_count)
      return Error{Code::Internal, "layer " + std::to_string(stage.units.front().layer) +
                                       ": experts without the partial update of their block"};
    STRATA_RETURN_IF_ERROR(ops.from_host(mb.pending_update.data(), s.proj, pending_count * sizeof(float)));
    STRATA_RETURN_IF_ERROR(ops.from_host(mb.routing.x_norm.data(), s.norm, pending_count * sizeof(float)));
  }
  for (const plan::BlockUnit& u : stage.units) {
    const int64_t l = u.layer;
    const LayerSlot& slot = *layers_[static_cast<size_t>(l)];
    clock.begin(proto(rt.lane, trace::EventKind::Compute, static_cast<int32_t>(l), mb.seq(), mb.pos0(), mb.n));
    STRATA_RETURN_IF_ERROR(run_unit(rt, slot, u, mb));
    clock.end();
  }
  if (!stage.units.empty() && !stage.units.back().last_of_block) {
    // The block's update goes on on another device: carry the partial sum along.
    mb.pending_update.resize(pending_count);
    STRATA_RETURN_IF_ERROR(ops.to_host(s.proj, mb.pending_update.data(), pending_count * sizeof(float)));
  } else {
    mb.pending_update.clear();
  }
  clock.flush();
  if (stage.has_head) STRATA_RETURN_IF_ERROR(run_head(rt, mb, recorder_));
  // Blocking: the stage's work is complete when this returns.
  STRATA_RETURN_IF_ERROR(ops.to_host(s.hidden, mb.hidden.data(), count * sizeof(float)));
  mb.holder = rt.device;
  return {};
}

// Runs on the stage thread; members compute concurrently on their own workers. Where the
// communicator orders its all-reduce on the devices' queues (NCCL: events), the members' work is
// only queued between all-reduces, with no host wait per layer; otherwise each member ends its
// part with a synchronize so the all-reduce sees finished partial sums. The stage ends with every
// member synchronized (its errors surface in this step).
Status Pipeline::run_group(StageRuntime& stage, MicroBatch& mb) {
  const model::ModelConfig& c = model_.config();
  const size_t count = static_cast<size_t>(mb.n * c.n_embd);
  // This rank's members (all of them in one process); member i of the slot is local[j] with
  // local_index[j] == i.
  const size_t k = stage.local.size();
  const size_t k_all = stage.members.size();
  std::vector<std::future<void>> pending(k);
  std::vector<Status> results(k);
  const bool queued = stage.comm->queues_on_devices();
  std::vector<backend::Ops*> member_ops(k);
  for (size_t i = 0; i < k; ++i) member_ops[i] = stage.local[i]->ops.get();
  // work(i) on member i's worker; with `sync` the worker then waits for member i's device.
  auto on_each_then = [&](bool sync, auto&& work) -> Status {
    for (size_t i = 0; i < k; ++i)
      pending[i] = stage.local[i]->worker->submit([&, i] {
        DeviceRuntime& rt = *stage.local[i];
        Status s = work(i);
        if (s.ok() && sync) s = rt.ops->synchronize();
        results[i] = std::move(s);
      });
    for (size_t i = 0; i < k; ++i) {
      Status waited = await_work(*stage.local[i], pending[i]);
      if (!waited.ok()) results[i] = std::move(waited);
    }
    for (Status& s : results) {
      if (!s.ok()) return std::move(s);
    }
    return {};
  };
  auto on_each = [&](auto&& work) -> Status { return on_each_then(!queued, work); };
  std::vector<float*> partials(k);
  for (size_t i = 0; i < k; ++i) partials[i] = stage.local[i]->block->scratch().proj;
  auto all_reduce = [&](int64_t layer) -> Status {
    const int64_t t0 = recorder_ ? recorder_->now_ns() : 0;
    if (queued) {
      // The workers are idle here (on_each waited for them): the stage thread may queue on their
      // streams. With a trace the span is the sum itself, so the members wait for it then.
      STRATA_RETURN_IF_ERROR(stage.comm->all_reduce_sum_queued(member_ops, partials, count));
      if (recorder_)
        STRATA_RETURN_IF_ERROR(on_each_then(true, [](size_t) { return Status(); }));
    } else {
      STRATA_RETURN_IF_ERROR(stage.comm->all_reduce_sum(partials, count));
    }
    if (recorder_) {
      const int64_t t1 = recorder_->now_ns();
      for (size_t i = 0; i < k; ++i) {
        trace::Event e = proto(stage.local[i]->lane, trace::EventKind::AllReduce, static_cast<int32_t>(layer),
                               mb.seq(), mb.pos0(), mb.n);
        e.start_ns = t0;
        e.duration_ns = t1 - t0;
        e.bytes = backend::Communicator::all_reduce_bytes_per_rank(count, k_all);
        recorder_->record(e);
      }
    }
    return {};
  };
  const int32_t from_lane = lane_of(mb.holder);
  STRATA_RETURN_IF_ERROR(on_each([&](size_t i) {
    DeviceRuntime& rt = *stage.local[i];
    return transfer_in(recorder_, from_lane, rt.lane, *rt.ops, mb.seq(), mb.pos0(), mb.n, mb.hidden.data(),
                       rt.block->scratch().hidden, count);
  }));
  // The summed FFN update of the previous block, not yet added to the residual stream: it is
  // added at the start of the next unit's work on each member (or before the hidden state leaves
  // the stage), which saves one round trip to the workers per block. Null when none is pending.
  const LayerSlot* pending_slot = nullptr;
  auto add_pending = [&](size_t i) -> Status {
    if (!pending_slot) return Status();
    const ScratchViews& s = stage.local[i]->block->scratch();
    return stage.local[i]->block->residual_add(pending_slot->weights[stage.local_index[i]].post_ffn_norm, s.hidden,
                                               s.proj, mb.n);
  };
  for (const plan::BlockUnit& u : stage.units) {
    // A group runs whole blocks, or the attention or FFN part of blocks placed in parts.
    const int64_t l = u.layer;
    const LayerSlot& slot = *layers_[static_cast<size_t>(l)];
    if (u.kind == plan::PartKind::Experts)
      return Error{Code::Internal, "layer " + std::to_string(l) + ": routed experts on a tensor-parallel group"};
    const bool attention = u.whole_block || u.kind == plan::PartKind::Attention;
    // A parallel block's (cohere2's) attention step runs its FFN: one partial sum, one all-reduce.
    const bool ffn = (u.whole_block || u.kind == plan::PartKind::Ffn) && !model_.config().parallel_block;
    if (attention) {
      STRATA_RETURN_IF_ERROR(on_each([&](size_t i) -> Status {
        DeviceRuntime& rt = *stage.local[i];
        const size_t m = stage.local_index[i];
        SpanClock clock(recorder_, *rt.ops, timed_by_events(*rt.device, *rt.ops));
        clock.begin(proto(rt.lane, trace::EventKind::Compute, static_cast<int32_t>(l), mb.seq(), mb.pos0(), mb.n));
        STRATA_RETURN_IF_ERROR(add_pending(i));
        STRATA_RETURN_IF_ERROR(rt.block->attention_partial(slot.weights[m], l, rt.block->scratch().hidden, mb.n,
                                                           seq_rows(slot, m, mb), rt.block->scratch().proj));
        // The partial sum is complete before the host's all-reduce reads it (a device the host
        // issues ahead of, as a paced simulated one, may still be running it); the span, timed by
        // that device's events (timed_by_events), ends where its work does either way.
        if (!queued) STRATA_RETURN_IF_ERROR(rt.ops->synchronize());
        clock.end();
        clock.flush();  // with a trace: waits for the span's events
        return {};
      }));
      pending_slot = nullptr;  // added by the attention's work above
      STRATA_RETURN_IF_ERROR(all_reduce(l));
      if (!ffn) {
        STRATA_RETURN_IF_ERROR(on_each([&](size_t i) {
          const ScratchViews& s = stage.local[i]->block->scratch();
          return stage.local[i]->block->residual_add(slot.weights[stage.local_index[i]].post_attn_norm, s.hidden,
                                                     s.proj, mb.n);
        }));
        continue;
      }
    }
    STRATA_RETURN_IF_ERROR(on_each([&](size_t i) -> Status {
      DeviceRuntime& rt = *stage.local[i];
      const size_t m = stage.local_index[i];
      const ScratchViews& s = rt.block->scratch();
      SpanClock clock(recorder_, *rt.ops, timed_by_events(*rt.device, *rt.ops));
      clock.begin(proto(rt.lane, trace::EventKind::Compute, static_cast<int32_t>(l), mb.seq(), mb.pos0(), mb.n));
      // The attention's summed update lands with the FFN's work (one round trip to the workers);
      // so does a previous block's FFN update when this unit is an FFN part alone.
      if (!attention) STRATA_RETURN_IF_ERROR(add_pending(i));
      if (attention) STRATA_RETURN_IF_ERROR(rt.block->residual_add(slot.weights[m].post_attn_norm, s.hidden, s.proj, mb.n));
      STRATA_RETURN_IF_ERROR(rt.block->ffn_partial(slot.weights[m], s.hidden, mb.n, s.proj));
      if (!queued) STRATA_RETURN_IF_ERROR(rt.ops->synchronize());  // inside the span, as above
      clock.end();
      clock.flush();  // with a trace: waits for the span's events
      return {};
    }));
    pending_slot = nullptr;  // added by the FFN's work above when it was pending
    STRATA_RETURN_IF_ERROR(all_reduce(l));
    pending_slot = &slot;
  }
  // The last FFN update, then member 0's hidden state to the host (blocking); every other member
  // waits for its device too.
  // With the head shared by the group (plan::head_shares), each member computes its vocabulary
  // rows of the logits from its own copy of the final hidden state, into its columns of the host's.
  DeviceRuntime& first = *stage.local[0];
  STRATA_RETURN_IF_ERROR(on_each_then(true, [&](size_t i) -> Status {
    STRATA_RETURN_IF_ERROR(add_pending(i));
    if (stage.has_head) STRATA_RETURN_IF_ERROR(run_head(*stage.local[i], mb, recorder_));
    if (i != 0) return Status();
    return first.ops->to_host(first.block->scratch().hidden, mb.hidden.data(), count * sizeof(float));
  }));
  mb.holder = first.device;
  return {};
}

Status Pipeline::eval(std::span<const Request> requests) {
  STRATA_ASSIGN_OR_RETURN(uint64_t id, submit(requests));
  return wait(id);
}

int64_t Pipeline::evals_in_flight() const {
  std::lock_guard<std::mutex> lock(done_mutex_);
  return static_cast<int64_t>(in_flight_.size());
}

int64_t Pipeline::stage_count() const { return runtime_ ? static_cast<int64_t>(runtime_->stages.size()) : 0; }

int64_t Pipeline::concurrent_stages() const {
  if (!runtime_) return 0;
  std::vector<std::vector<std::string>> devices;
  for (const auto& st : runtime_->stages) {
    devices.emplace_back();
    for (const DeviceRuntime* m : st->members) devices.back().push_back(m->device->id());
  }
  return plan::concurrent_stage_count(devices);
}

Expected<uint64_t> Pipeline::submit(std::span<const Request> requests, int64_t max_micro_batches) {
  if (max_micro_batches < 0)
    return Error{Code::InvalidArgument, "max_micro_batches " + std::to_string(max_micro_batches) + " is negative"};
  if (seq_in_flight_.size() != static_cast<size_t>(placement_.n_seq))
    seq_in_flight_.assign(static_cast<size_t>(placement_.n_seq), false);
  const model::ModelConfig& c = model_.config();
  std::vector<bool> seen(static_cast<size_t>(placement_.n_seq), false);
  for (const Request& r : requests) {
    if (r.seq < 0 || r.seq >= placement_.n_seq)
      return Error{Code::InvalidArgument, "sequence " + std::to_string(r.seq) + " outside [0, " +
                                              std::to_string(placement_.n_seq) + ")"};
    if (seen[static_cast<size_t>(r.seq)])
      return Error{Code::InvalidArgument, "sequence " + std::to_string(r.seq) + " appears twice in one eval"};
    seen[static_cast<size_t>(r.seq)] = true;
    if (seq_in_flight_[static_cast<size_t>(r.seq)])
      return Error{Code::InvalidArgument, "sequence " + std::to_string(r.seq) + " is in an eval still in flight"};
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
  if (!runtime_ || runtime_->stages.empty()) return Error{Code::Internal, "the pipeline has no stages"};
  // Chunks of at most max_batch tokens per request. Round j holds chunk j of every request
  // (a sequence's chunks keep their order: rounds enter the first stage one after the other).
  // The chunks of a round are stacked into as few micro-batches as the scratch allows (<=
  // max_batch rows), so each stage reads its weights once for all of them; with several stages,
  // a round is spread over up to one micro-batch per stage that can overlap, so they still do.
  struct Chunk {
    size_t request;
    int64_t start, n;
  };
  std::vector<std::vector<Chunk>> rounds;
  for (size_t i = 0; i < requests.size(); ++i) {
    const int64_t total = static_cast<int64_t>(requests[i].tokens.size());
    size_t j = 0;
    for (int64_t start = 0; start < total; start += placement_.max_batch, ++j) {
      if (rounds.size() <= j) rounds.emplace_back();
      rounds[j].push_back({i, start, std::min(placement_.max_batch, total - start)});
    }
  }
  const int64_t spread = max_micro_batches > 0 ? max_micro_batches : concurrent_stages();
  const uint64_t id = next_eval_id_++;
  auto flight = std::make_unique<InFlight>();
  std::vector<std::unique_ptr<MicroBatch>>& batches = flight->batches;
  for (const std::vector<Chunk>& round : rounds) {
    int64_t round_rows = 0;
    for (const Chunk& ch : round) round_rows += ch.n;
    const int64_t cap = std::min(placement_.max_batch, std::max<int64_t>(1, (round_rows + spread - 1) / spread));
    MicroBatch* mb = nullptr;
    for (const Chunk& ch : round) {
      if (!mb || mb->n + ch.n > cap) {
        batches.push_back(std::make_unique<MicroBatch>());
        mb = batches.back().get();
        mb->eval_id = id;
      }
      const Request& r = requests[ch.request];
      MicroBatch::Part part;
      part.seq = r.seq;
      part.row0 = mb->n;
      part.n = ch.n;
      part.pos0 = positions_[static_cast<size_t>(r.seq)] + ch.start;
      if (r.all_logits && r.logits) {
        part.logits = r.logits + ch.start * c.n_vocab;
        part.logit_rows = ch.n;
      } else {
        part.logits = ch.start + ch.n == static_cast<int64_t>(r.tokens.size()) ? r.logits : nullptr;
      }
      mb->parts.push_back(part);
      mb->tokens.insert(mb->tokens.end(), r.tokens.begin() + ch.start, r.tokens.begin() + ch.start + ch.n);
      mb->n += ch.n;
    }
  }
  for (auto& mb : batches) mb->hidden.resize(static_cast<size_t>(mb->n * c.n_embd));
  for (const Request& r : requests) {
    flight->advance.emplace_back(r.seq, static_cast<int64_t>(r.tokens.size()));
    if (r.hidden) flight->hidden_out.push_back({r.seq, r.hidden, static_cast<int64_t>(r.tokens.size())});
    seq_in_flight_[static_cast<size_t>(r.seq)] = true;
  }
  std::vector<MicroBatch*> order;
  for (auto& mb : batches) order.push_back(mb.get());
  {
    std::lock_guard<std::mutex> lock(done_mutex_);
    in_flight_.emplace(id, std::move(flight));
  }
  StageRuntime& first = *runtime_->stages.front();
  {
    std::lock_guard<std::mutex> lock(first.mutex);
    for (MicroBatch* mb : order) first.queue.push_back(mb);
  }
  first.cv.notify_one();
  return id;
}

Status Pipeline::wait(uint64_t eval_id) {
  std::unique_ptr<InFlight> flight;
  {
    std::unique_lock<std::mutex> lock(done_mutex_);
    auto it = in_flight_.find(eval_id);
    if (it == in_flight_.end())
      return Error{Code::InvalidArgument, "eval " + std::to_string(eval_id) + " is not in flight"};
    InFlight* f = it->second.get();
    done_cv_.wait(lock, [&] { return f->done == static_cast<int64_t>(f->batches.size()); });
    flight = std::move(it->second);
    in_flight_.erase(it);
  }
  for (const auto& [seq, n] : flight->advance) seq_in_flight_[static_cast<size_t>(seq)] = false;
  // A failed micro-batch fails the whole eval: no position moves (the keys and values already
  // written past a position are overwritten by the next eval of that sequence).
  for (auto& mb : flight->batches) {
    if (!mb->status.ok()) return mb->status;
  }
  // Final hidden states: each micro-batch's host copy after the last stage, part by part (the
  // sequences of one eval are distinct, and a part's offset in its request is pos0 - position).
  if (!flight->hidden_out.empty()) {
    const size_t row = static_cast<size_t>(model_.config().n_embd);
    std::vector<int64_t> copied(flight->hidden_out.size(), 0);
    for (const auto& mb : flight->batches) {
      for (const MicroBatch::Part& p : mb->parts) {
        for (size_t i = 0; i < flight->hidden_out.size(); ++i) {
          const InFlight::HiddenOut& h = flight->hidden_out[i];
          if (h.seq != p.seq) continue;
          if (mb->hidden_rank >= 0)
            return Error{Code::Unsupported, "hidden states of a pipeline whose last stage is on another rank"};
          const int64_t start = p.pos0 - positions_[static_cast<size_t>(p.seq)];
          std::copy_n(mb->hidden.data() + static_cast<size_t>(p.row0) * row, static_cast<size_t>(p.n) * row,
                      h.dst + static_cast<size_t>(start) * row);
          copied[i] += p.n;
        }
      }
    }
    for (size_t i = 0; i < flight->hidden_out.size(); ++i) {
      if (copied[i] != flight->hidden_out[i].n_tokens)
        return Error{Code::Internal, "eval: hidden states of " + std::to_string(copied[i]) + " of " +
                                         std::to_string(flight->hidden_out[i].n_tokens) + " tokens came back"};
    }
  }
  for (const auto& [seq, n] : flight->advance) {
    const int64_t pos = positions_[static_cast<size_t>(seq)] += n;
    written_[static_cast<size_t>(seq)] = std::max(written_[static_cast<size_t>(seq)], pos);
  }
  return {};
}

int64_t Pipeline::kept_prefix(int32_t seq, int64_t n) const {
  if (seq < 0 || seq >= placement_.n_seq) return 0;
  n = std::clamp<int64_t>(n, 0, positions_[static_cast<size_t>(seq)]);
  // Rows of a ring hold the positions last written to them: the window before n is intact while
  // the sequence has been no further than n + kv_rewind_.
  return written_[static_cast<size_t>(seq)] - n <= kv_rewind_ ? n : 0;
}

int64_t Pipeline::truncate(int32_t seq, int64_t n) {
  if (seq < 0 || seq >= placement_.n_seq) return 0;
  const int64_t kept = kept_prefix(seq, n);
  positions_[static_cast<size_t>(seq)] = kept;
  if (kept == 0) written_[static_cast<size_t>(seq)] = 0;
  return kept;
}

Status Pipeline::copy_sequence(int32_t src, int32_t dst, int64_t n) {
  const int32_t n_seq = static_cast<int32_t>(placement_.n_seq);
  if (src < 0 || src >= n_seq || dst < 0 || dst >= n_seq || src == dst)
    return Error{Code::InvalidArgument, "copying sequence " + std::to_string(src) + " to " + std::to_string(dst) +
                                            ": need two distinct sequences in [0, " + std::to_string(n_seq) + ")"};
  const int64_t have = positions_[static_cast<size_t>(src)];
  if (n < 0 || n > have)
    return Error{Code::InvalidArgument, "copying " + std::to_string(n) + " positions of sequence " + std::to_string(src) +
                                            ", which holds " + std::to_string(have)};
  if (kept_prefix(src, n) < n)
    return Error{Code::InvalidArgument, "copying " + std::to_string(n) + " positions of sequence " + std::to_string(src) +
                                            ": its sliding-window KV rings hold positions past " +
                                            std::to_string(written_[static_cast<size_t>(src)] - kv_rewind_) + " only"};
  // dst forgets its old contents first: a failure half-way leaves it empty, never mixed.
  positions_[static_cast<size_t>(dst)] = 0;
  written_[static_cast<size_t>(dst)] = 0;
  if (n == 0) return {};
  for (const auto& slot : layers_) {
    auto bytes = [&](int64_t elems) { return static_cast<size_t>(kernels::row_bytes(slot->kv_type, elems)); };
    // Each KV buffer holds whole rows of its own: the layer's (shared) or one member's shard.
    const size_t buffers = slot->shared_kv ? 1 : slot->members.size();
    for (size_t b = 0; b < buffers; ++b) {
      if (!local(slot->kv_devices[b])) continue;  // another rank's part (copied there)
      KvView from = kv_view(*slot, b, src), to = kv_view(*slot, b, dst);
      int64_t width = from.stride;
      if (slot->shared_kv) {
        // kv_view points at member b's head columns; the whole row starts at column 0.
        const int64_t col = slot->shards[b].kv_head_begin * model_.config().head_dim;
        from.k = static_cast<uint8_t*>(from.k) - bytes(col);
        from.v = static_cast<uint8_t*>(from.v) - bytes(col);
        to.k = static_cast<uint8_t*>(to.k) - bytes(col);
        to.v = static_cast<uint8_t*>(to.v) - bytes(col);
      }
      for (int64_t kv = 0; kv < model_.config().kv_planes(); ++kv) {  // MLA: one plane (v is k)
        backend::Copy2D c;
        c.src = kv == 0 ? from.k : from.v;
        c.dst = kv == 0 ? to.k : to.v;
        c.src_pitch = c.dst_pitch = bytes(from.stride);
        c.width = bytes(width);
        // A ring is copied whole: its rows hold the window before n wherever it wrapped to
        // (the rows of later positions are rewritten before anything reads them).
        c.height = static_cast<size_t>(slot->kv_rows < placement_.n_ctx ? slot->kv_rows : n);
        backend::Device* dev = slot->kv_devices[b];
        auto route = comm::copy(dev, dev, c);
        if (!route.ok())
          return Error{route.error().code, "copying the KV cache of sequence " + std::to_string(src) + " to " +
                                               std::to_string(dst) + " on " + dev->id() + ": " + route.error().message};
      }
    }
  }
  if (ranks_ && ranks_->rank() == 0) STRATA_RETURN_IF_ERROR(ranks_->copy_sequence(src, dst, n));
  positions_[static_cast<size_t>(dst)] = n;
  // The copied rings also hold src's positions up to written_[src].
  written_[static_cast<size_t>(dst)] = std::max(n, written_[static_cast<size_t>(src)]);
  return {};
}

}  // namespace strata::exec
