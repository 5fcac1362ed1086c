// engine/dist/cluster.cpp — the driver's calls to the other ranks and the workers' answers (see
// cluster.h). Messages: engine/dist/wire.h. Requests go to a worker on one tag, in order; each
// carries the tag its answer comes back on, so several stage threads of the driver can wait on
// the same worker at once.
#include "engine/dist/cluster.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/backend/registry/registry.h"
#include "engine/comm/group_transport.h"
#include "engine/dist/rank_communicator.h"
#include "engine/dist/wire.h"
#include "engine/core/device_info_json.h"
#include "engine/exec/pipeline.h"
#include "engine/dist/remote_device.h"
#include "engine/trace/recorder.h"

namespace strata::dist {

namespace {

constexpr int kRequestTag = 16;  // driver -> worker, every request
constexpr int kMeasureTag = 17;  // ping-pong
constexpr int kHelloTag = 18;    // worker -> driver at start
constexpr int kNcclIdTag = 19;   // the lowest rank of an all-GPU group -> the others: the NCCL unique id
constexpr int kFirstReplyTag = 1000;

enum class Kind : uint32_t { Measure = 1, Table = 2, Place = 3, Stage = 4, CopySequence = 5, Stop = 6 };

struct WirePart {
  int32_t seq;
  int32_t want_logits;
  int64_t row0, n, pos0;
};

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A device of another rank, as its handshake described it (engine/core/device_info_json.h).
Expected<DeviceInfo> info_from_rank(const nlohmann::json& j) {
  Expected<DeviceInfo> i = device_info_from_json(j);
  if (!i.ok()) return Error{i.error().code, "from another rank: " + i.error().message};
  return i;
}

void put_status(WireWriter& w, const Status& s) {
  w.put<int32_t>(s.ok() ? 0 : static_cast<int32_t>(s.error().code));
  w.put_string(s.ok() ? std::string() : s.error().message);
}

Status get_status(WireReader& r, int rank) {
  STRATA_ASSIGN_OR_RETURN(int32_t code, r.get<int32_t>());
  STRATA_ASSIGN_OR_RETURN(std::string message, r.get_string());
  if (code == 0) return {};
  if (code < 0 || code > static_cast<int32_t>(Code::Internal)) code = static_cast<int32_t>(Code::Internal);
  return Error{static_cast<Code>(code), "rank " + std::to_string(rank) + ": " + message};
}

// The recorder's lane named `id` (a device id), -1 when none.
int32_t lane_id(const trace::Recorder& recorder, const std::string& id) {
  if (id.empty()) return -1;
  for (const trace::LaneInfo& l : recorder.lanes()) {
    if (l.name == id) return l.id;
  }
  return -1;
}

// Stop, with the ranks the driver knows are lost: a worker that has not noticed yet (its heartbeat
// check takes seconds) must not wait for them when it ends MPI.
std::vector<uint8_t> stop_message(const RankLink& link) {
  WireWriter w;
  w.put(Kind::Stop);
  std::vector<int32_t> lost;
  for (int r = 1; r < link.size(); ++r) {
    if (link.lost(r)) lost.push_back(r);
  }
  w.put_vector(lost);
  return w.bytes();
}

std::string status_text(const Status& s) { return s.ok() ? std::string("no error") : s.error().message; }

// A worker taking a stop message: marks the ranks the driver lists as lost.
void take_stop(RankLink& link, WireReader& r) {
  auto lost = r.get_vector<int32_t>();
  if (!lost.ok()) return;
  for (int32_t rank : *lost) link.mark_lost(rank, "rank 0 found it lost");
}

}  // namespace

Expected<std::string> rank_devices_spec(const std::string& spec, int rank, int size) {
  if (spec.empty()) return backend::default_devices_spec();
  std::string out;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = spec.find(',', start);
    const std::string entry = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? spec.size() + 1 : comma + 1;
    size_t digits = 1;
    while (digits < entry.size() && std::isdigit(static_cast<unsigned char>(entry[digits]))) ++digits;
    if (entry.size() < 4 || entry[0] != 'r' || digits == 1 || digits >= entry.size() || entry[digits] != ':')
      return Error{Code::InvalidArgument, "device '" + entry + "': with several ranks every device names its rank, "
                                          "e.g. r0:cpu,r1:cpu or r1:cuda:0"};
    const int r = std::stoi(entry.substr(1, digits - 1));
    if (r >= size)
      return Error{Code::InvalidArgument, "device '" + entry + "': rank " + std::to_string(r) + " of a job of " +
                                              std::to_string(size) + " processes"};
    if (r != rank) continue;
    if (!out.empty()) out += ',';
    out.append(entry, digits + 1, std::string::npos);
  }
  return out;
}

Cluster::~Cluster() = default;

Expected<std::unique_ptr<Cluster>> Cluster::connect(RankLink& link, std::vector<DeviceInfo> local) {
  std::unique_ptr<Cluster> c(new Cluster(link));
  const int self = link.rank(), size = link.size();
  for (DeviceInfo& i : local) {
    i.rank = self;
    i.host = link.host_name();
  }
  if (self != 0) {
    nlohmann::json hello = {{"host", link.host_name()}, {"devices", nlohmann::json::array()}};
    for (const DeviceInfo& i : local) hello["devices"].push_back(device_info_json(i));
    const std::string text = hello.dump();
    STRATA_RETURN_IF_ERROR(link.send(0, kHelloTag, {reinterpret_cast<const uint8_t*>(text.data()), text.size()}));
    // The driver measures the link, then sends the table of every rank (or stops us at once).
    while (true) {
      STRATA_ASSIGN_OR_RETURN(RankMessage m, link.receive(0, kRequestTag));
      WireReader r(m.bytes);
      STRATA_ASSIGN_OR_RETURN(Kind kind, r.get<Kind>());
      if (kind == Kind::Stop) {
        take_stop(link, r);
        return Error{Code::Cancelled, "the driver (rank 0) finished before placing anything"};
      }
      if (kind == Kind::Measure) {
        STRATA_ASSIGN_OR_RETURN(LinkMeasure lm, measure_link(link, 0, kMeasureTag));
        (void)lm;
        continue;
      }
      if (kind != Kind::Table) return Error{Code::Corrupt, "rank 0 sent a request before the table of ranks"};
      STRATA_ASSIGN_OR_RETURN(std::string text, r.get_string());
      nlohmann::json table = nlohmann::json::parse(text, nullptr, false);
      if (!table.is_array()) return Error{Code::Corrupt, "rank 0 sent a table that is not JSON"};
      for (const auto& e : table) {
        RankSummary s;
        s.rank = e.value("rank", 0);
        s.host = e.value("host", "");
        s.link.latency_us = e.value("latency_us", 0.0);
        s.link.bandwidth_gbps = e.value("bandwidth_gbps", 0.0);
        s.link.clock_offset_ns = e.value("clock_offset_ns", int64_t{0});
        for (const auto& d : e.value("devices", nlohmann::json::array())) {
          STRATA_ASSIGN_OR_RETURN(DeviceInfo i, info_from_rank(d));
          s.devices.push_back(std::move(i));
        }
        c->ranks_.push_back(std::move(s));
      }
      if (static_cast<int>(c->ranks_.size()) != size) return Error{Code::Corrupt, "rank 0 sent a table of the wrong size"};
      return c;
    }
  }
  c->ranks_.resize(static_cast<size_t>(size));
  c->ranks_[0] = {0, link.host_name(), {}, std::move(local)};
  for (int r = 1; r < size; ++r) {
    STRATA_ASSIGN_OR_RETURN(RankMessage m, link.receive(r, kHelloTag, 60000));
    nlohmann::json hello = nlohmann::json::parse(m.bytes.begin(), m.bytes.end(), nullptr, false);
    if (!hello.is_object()) return Error{Code::Corrupt, "rank " + std::to_string(r) + " sent a greeting that is not JSON"};
    RankSummary& s = c->ranks_[static_cast<size_t>(r)];
    s.rank = r;
    s.host = hello.value("host", "");
    for (const auto& d : hello.value("devices", nlohmann::json::array())) {
      STRATA_ASSIGN_OR_RETURN(DeviceInfo i, info_from_rank(d));
      s.devices.push_back(std::move(i));
    }
  }
  for (int r = 1; r < size; ++r) {
    WireWriter w;
    w.put(Kind::Measure);
    STRATA_RETURN_IF_ERROR(link.send(r, kRequestTag, w.bytes()));
    STRATA_ASSIGN_OR_RETURN(c->ranks_[static_cast<size_t>(r)].link, measure_link(link, r, kMeasureTag));
  }
  nlohmann::json table = nlohmann::json::array();
  for (const RankSummary& s : c->ranks_) {
    nlohmann::json e = {{"rank", s.rank},
                        {"host", s.host},
                        {"latency_us", s.link.latency_us},
                        {"bandwidth_gbps", s.link.bandwidth_gbps},
                        // the worker's view: rank 0's clock minus its own
                        {"clock_offset_ns", -s.link.clock_offset_ns},
                        {"devices", nlohmann::json::array()}};
    for (const DeviceInfo& i : s.devices) e["devices"].push_back(device_info_json(i));
    table.push_back(std::move(e));
  }
  const std::string text = table.dump();
  for (int r = 1; r < size; ++r) {
    WireWriter w;
    w.put(Kind::Table);
    w.put_string(text);
    STRATA_RETURN_IF_ERROR(link.send(r, kRequestTag, w.bytes()));
  }
  return c;
}

std::vector<DeviceInfo> Cluster::all_devices() const {
  std::vector<DeviceInfo> out;
  const int self = link_.rank();
  for (const RankSummary& s : ranks_) {
    // The link between this rank and that one: measured between rank 0 and each worker.
    const LinkMeasure& lm = ranks_[static_cast<size_t>(s.rank == self ? 0 : (s.rank == 0 ? self : s.rank))].link;
    for (DeviceInfo i : s.devices) {
      if (s.rank != self && lm.bandwidth_gbps > 0) {
        if (i.link_gbps <= 0 || i.link_gbps > lm.bandwidth_gbps) i.link_gbps = lm.bandwidth_gbps;
        i.link_latency_us = std::max(i.link_latency_us, lm.latency_us);
      }
      if (link_.lost(s.rank)) {
        i.failed = true;
        i.failure = link_.loss_reason(s.rank);
      }
      out.push_back(std::move(i));
    }
  }
  return out;
}

std::vector<std::unique_ptr<backend::Device>> Cluster::remote_devices() const {
  std::vector<std::unique_ptr<backend::Device>> out;
  for (const DeviceInfo& i : all_devices()) {
    if (i.rank != link_.rank()) out.push_back(std::make_unique<RemoteDevice>(i, memory_));
  }
  return out;
}

int Cluster::next_reply_tag() { return kFirstReplyTag + (reply_counter_.fetch_add(1) % 30000); }

Status Cluster::request(int rank, const std::vector<uint8_t>& message) { return link_.send(rank, kRequestTag, message); }

Expected<RankMessage> Cluster::reply(int rank, int tag) { return link_.receive(rank, tag); }

void Cluster::stop_workers() {
  if (stopped_ || link_.rank() != 0) return;
  stopped_ = true;
  for (int r = 1; r < link_.size(); ++r) {
    if (!link_.lost(r)) (void)link_.send(r, kRequestTag, stop_message(link_));
  }
}

void stop_rank_workers(RankLink& link) {
  if (link.rank() != 0) return;
  for (int r = 1; r < link.size(); ++r) {
    if (!link.lost(r)) (void)link.send(r, kRequestTag, stop_message(link));
  }
}

Status Cluster::begin_place(const plan::Placement& placement, bool fresh, bool discard_kv) {
  pending_place_.clear();
  WireWriter body;
  body.put<int32_t>(fresh ? 1 : 0);
  body.put<int32_t>(discard_kv ? 1 : 0);
  body.put<int32_t>(tracing_ ? 1 : 0);
  body.put_string(plan::to_json(placement).dump());
  pending_place_message_ = body.bytes();
  for (int r = 1; r < link_.size(); ++r) {
    if (link_.lost(r)) continue;
    const int tag = next_reply_tag();
    WireWriter w;
    w.put(Kind::Place);
    w.put<int32_t>(tag);
    w.put_raw(pending_place_message_);
    STRATA_RETURN_IF_ERROR(request(r, w.bytes()));
    pending_place_.push_back({r, tag});
  }
  return {};
}

Status Cluster::end_place(const plan::Placement* revert_to, bool local_failed) {
  Status first;
  std::vector<int> placed;
  for (auto [r, tag] : pending_place_) {
    auto m = reply(r, tag);
    Status s = m.ok() ? Status() : Status(m.error());
    if (m.ok()) {
      WireReader rd(m->bytes);
      s = get_status(rd, r);
      if (Status mem = take_memory_report(rd, r); s.ok() && !mem.ok()) s = std::move(mem);
    }
    if (s.ok()) placed.push_back(r);
    else if (first.ok()) first = std::move(s);
  }
  pending_place_.clear();
  if ((first.ok() && !local_failed) || !revert_to) return first;
  // Put the ranks that did place back on the old placement (their cache carried where it stays).
  WireWriter body;
  body.put<int32_t>(0);
  body.put<int32_t>(0);
  body.put<int32_t>(tracing_ ? 1 : 0);
  body.put_string(plan::to_json(*revert_to).dump());
  for (int r : placed) {
    const int tag = next_reply_tag();
    WireWriter w;
    w.put(Kind::Place);
    w.put<int32_t>(tag);
    w.put_raw(body.bytes());
    if (!request(r, w.bytes()).ok()) continue;
    auto m = reply(r, tag);
    if (!m.ok()) continue;
    WireReader rd(m->bytes);
    if (get_status(rd, r).ok()) (void)take_memory_report(rd, r);
  }
  return first;
}

Status Cluster::take_memory_report(WireReader& r, int rank) {
  STRATA_ASSIGN_OR_RETURN(uint64_t n, r.get<uint64_t>());
  for (uint64_t i = 0; i < n; ++i) {
    STRATA_ASSIGN_OR_RETURN(std::string id, r.get_string());
    RemoteMemory::Figures f;
    STRATA_ASSIGN_OR_RETURN(f.use, r.get<backend::MemoryUse>());
    STRATA_ASSIGN_OR_RETURN(f.bytes_free, r.get<uint64_t>());
    STRATA_ASSIGN_OR_RETURN(f.bytes_total, r.get<uint64_t>());
    // Only that rank's own devices (ids "rN:...").
    if (id.rfind("r" + std::to_string(rank) + ":", 0) == 0) memory_->set(id, f);
  }
  return {};
}

Status Cluster::run_stage(int rank, exec::StageCall& call) {
  const int tag = next_reply_tag();
  WireWriter w;
  w.put(Kind::Stage);
  w.put<int32_t>(tag);
  w.put<int32_t>(call.stage);
  w.put<int64_t>(call.n);
  w.put_string(call.holder);
  std::vector<WirePart> parts;
  for (const exec::StageCall::Part& p : call.parts) parts.push_back({p.seq, p.want_logits ? 1 : 0, p.row0, p.n, p.pos0});
  w.put_vector(parts);
  w.put_vector(call.tokens);
  w.put_vector(call.hidden);
  w.put<int32_t>(call.hidden_from);
  w.put<int32_t>(call.hidden_tag);
  w.put_vector(call.forward_to);
  w.put<int32_t>(call.forward_tag);
  w.put_string(call.forward_device);
  STRATA_RETURN_IF_ERROR(request(rank, w.bytes()));
  STRATA_ASSIGN_OR_RETURN(RankMessage m, reply(rank, tag));
  WireReader r(m.bytes);
  Status status = get_status(r, rank);
  STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> lost, r.get_vector<int32_t>());
  for (int32_t other : lost) {
    if (other > 0 && other < link_.size() && other != rank && !link_.lost(other))
      link_.mark_lost(other, "rank " + std::to_string(rank) + " lost contact with it: " + status_text(status));
  }
  STRATA_RETURN_IF_ERROR(status);
  STRATA_ASSIGN_OR_RETURN(call.hidden, r.get_vector<float>());
  STRATA_ASSIGN_OR_RETURN(uint64_t n_logits, r.get<uint64_t>());
  call.logits.clear();
  for (uint64_t i = 0; i < n_logits; ++i) {
    STRATA_ASSIGN_OR_RETURN(std::vector<float> l, r.get_vector<float>());
    call.logits.push_back(std::move(l));
  }
  STRATA_ASSIGN_OR_RETURN(uint64_t n_events, r.get<uint64_t>());
  call.events.clear();
  for (uint64_t i = 0; i < n_events; ++i) {
    exec::StageCall::LaneEvent e;
    STRATA_ASSIGN_OR_RETURN(e.lane, r.get_string());
    STRATA_ASSIGN_OR_RETURN(e.peer, r.get_string());
    STRATA_ASSIGN_OR_RETURN(e.event, r.get<trace::Event>());
    call.events.push_back(std::move(e));
  }
  call.reply_bytes = m.bytes.size();
  call.reply_receive_ns = m.receive_ns;
  call.reply_end_ns = steady_ns();
  return {};
}

Status Cluster::copy_sequence(int32_t src, int32_t dst, int64_t n) {
  for (int r = 1; r < link_.size(); ++r) {
    if (link_.lost(r)) continue;
    const int tag = next_reply_tag();
    WireWriter w;
    w.put(Kind::CopySequence);
    w.put<int32_t>(tag);
    w.put<int32_t>(src);
    w.put<int32_t>(dst);
    w.put<int64_t>(n);
    STRATA_RETURN_IF_ERROR(request(r, w.bytes()));
    STRATA_ASSIGN_OR_RETURN(RankMessage m, reply(r, tag));
    WireReader rd(m.bytes);
    STRATA_RETURN_IF_ERROR(get_status(rd, r));
  }
  return {};
}

Expected<std::unique_ptr<backend::Communicator>> Cluster::group_communicator(const std::vector<backend::Device*>& members,
                                                                          const std::vector<int>& ranks, int tag) {
  const int self = link_.rank();
  std::vector<backend::Device*> local;
  std::vector<int> local_index;  // per local member: its index among all members
  std::vector<comm::GroupMember> group;
  for (size_t i = 0; i < members.size(); ++i) {
    const int r = members[i]->remote_rank() < 0 ? self : members[i]->remote_rank();
    group.push_back({r, members[i]->caps().collective});
    if (r == self) {
      local.push_back(members[i]);
      local_index.push_back(static_cast<int>(i));
    }
  }
  if (local.empty() || ranks.empty()) return Error{Code::Internal, "a rank group with no member on this rank"};
  // The backend that runs the members' collective here: the backend of a local member (every rank
  // decides the same from the same placement, so a rank without it makes every rank take MPI).
  backend::Backend* collective = backend::backend_of(*local.front());
  const comm::GroupChoice choice = comm::choose_group_transport(group, [&](const std::string& name) {
    return collective != nullptr && collective->present() && local.front()->caps().collective == name;
  });
  if (choice.transport != comm::GroupTransport::CollectiveAcrossRanks) {
    STRATA_ASSIGN_OR_RETURN(int group, link_.make_group(ranks, tag));
    return std::unique_ptr<backend::Communicator>(std::make_unique<RankCommunicator>(link_, group, local));
  }
  // Every member with the same collective (CUDA GPUs: NCCL): one communicator over all of them. Its
  // unique id is made on the group's lowest rank and sent to the others (messages between two ranks
  // keep their order, so the groups of one placement, made in stage order everywhere, match up on
  // one tag).
  backend::RankCollectivePart part;
  part.n_members = static_cast<int>(members.size());
  part.member_index = std::move(local_index);
  const int lowest = ranks.front();
  if (self == lowest) {
    STRATA_ASSIGN_OR_RETURN(part.unique_id, collective->collective_unique_id());
    for (int r : ranks) {
      if (r != self) STRATA_RETURN_IF_ERROR(link_.send(r, kNcclIdTag, part.unique_id));
    }
  } else {
    STRATA_ASSIGN_OR_RETURN(RankMessage m, link_.receive(lowest, kNcclIdTag, 60000));
    part.unique_id = std::move(m.bytes);
  }
  RankLink* link = &link_;
  part.lost_peer = [link, ranks]() -> std::string {
    for (int r : ranks) {
      if (link->lost(r)) return "rank " + std::to_string(r) + " is lost: " + link->loss_reason(r);
    }
    return std::string();
  };
  return collective->make_rank_communicator(local, std::move(part));
}

Status Cluster::serve(const std::function<Expected<const model::Model*>()>& load_model,
                      const std::vector<backend::Device*>& devices, int64_t crash_after_calls) {
  int64_t stage_calls = 0;
  std::unique_ptr<trace::Recorder> recorder;
  std::unique_ptr<exec::Pipeline> pipeline;
  uint64_t cursor = 0;
  const int64_t to_rank0_ns = ranks_.empty() ? 0 : ranks_[static_cast<size_t>(link_.rank())].link.clock_offset_ns;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(RankMessage m, link_.receive(0, kRequestTag));
    WireReader r(m.bytes);
    STRATA_ASSIGN_OR_RETURN(Kind kind, r.get<Kind>());
    if (kind == Kind::Stop) {
      take_stop(link_, r);
      return {};
    }
    if (kind == Kind::Measure) {
      STRATA_RETURN_IF_ERROR(measure_link(link_, 0, kMeasureTag));
      continue;
    }
    if (kind == Kind::Table) continue;
    STRATA_ASSIGN_OR_RETURN(int32_t tag, r.get<int32_t>());
    WireWriter out;
    if (kind == Kind::Place) {
      Status s = [&]() -> Status {
        STRATA_ASSIGN_OR_RETURN(int32_t fresh, r.get<int32_t>());
        STRATA_ASSIGN_OR_RETURN(int32_t discard, r.get<int32_t>());
        STRATA_ASSIGN_OR_RETURN(int32_t tracing, r.get<int32_t>());
        STRATA_ASSIGN_OR_RETURN(std::string text, r.get_string());
        STRATA_ASSIGN_OR_RETURN(const model::Model* model, load_model());
        nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
        if (j.is_discarded()) return Error{Code::Corrupt, "placement from rank 0 is not JSON"};
        STRATA_ASSIGN_OR_RETURN(plan::Placement placement, plan::placement_from_json(j, model->config().n_layers));
        if (fresh) pipeline.reset();
        if (!pipeline) {
          if (tracing && !recorder) {
            recorder = std::make_unique<trace::Recorder>();
            for (backend::Device* d : devices) recorder->add_lane(d->id(), d->info().simulated);
          }
          STRATA_ASSIGN_OR_RETURN(pipeline, exec::Pipeline::create(*model, devices, placement, recorder.get(), this));
          return {};
        }
        STRATA_RETURN_IF_ERROR(pipeline->apply(placement, discard ? exec::Pipeline::KvOnApply::Discard : exec::Pipeline::KvOnApply::Copy));
        return {};
      }();
      put_status(out, s);
      // This rank's devices' memory as it is now (placed, or back on the old placement after a
      // failure): the driver's /devices and /status show it.
      std::vector<const backend::Device*> own;
      for (const backend::Device* d : devices) {
        if (d->remote_rank() < 0) own.push_back(d);
      }
      out.put<uint64_t>(own.size());
      for (const backend::Device* d : own) {
        const DeviceInfo i = d->info();
        out.put_string(d->id());
        out.put(d->memory_use());
        out.put<uint64_t>(i.bytes_free);
        out.put<uint64_t>(i.bytes_total);
      }
    } else if (kind == Kind::CopySequence) {
      Status s = [&]() -> Status {
        STRATA_ASSIGN_OR_RETURN(int32_t src, r.get<int32_t>());
        STRATA_ASSIGN_OR_RETURN(int32_t dst, r.get<int32_t>());
        STRATA_ASSIGN_OR_RETURN(int64_t n, r.get<int64_t>());
        if (!pipeline) return Error{Code::InvalidArgument, "copy of a sequence before any placement"};
        pipeline->set_position(src, n);
        return pipeline->copy_sequence(src, dst, n);
      }();
      put_status(out, s);
    } else if (kind == Kind::Stage) {
      if (crash_after_calls >= 0 && stage_calls++ >= crash_after_calls)
        return Error{Code::Cancelled, "fault injection: rank " + std::to_string(link_.rank()) + " stops after " +
                                          std::to_string(crash_after_calls) + " stage calls"};
      exec::StageCall call;
      Status s = [&]() -> Status {
        STRATA_ASSIGN_OR_RETURN(call.stage, r.get<int32_t>());
        STRATA_ASSIGN_OR_RETURN(call.n, r.get<int64_t>());
        STRATA_ASSIGN_OR_RETURN(call.holder, r.get_string());
        STRATA_ASSIGN_OR_RETURN(std::vector<WirePart> parts, r.get_vector<WirePart>());
        for (const WirePart& p : parts) call.parts.push_back({p.seq, p.row0, p.n, p.pos0, p.want_logits != 0});
        STRATA_ASSIGN_OR_RETURN(call.tokens, r.get_vector<int32_t>());
        STRATA_ASSIGN_OR_RETURN(call.hidden, r.get_vector<float>());
        STRATA_ASSIGN_OR_RETURN(call.hidden_from, r.get<int32_t>());
        STRATA_ASSIGN_OR_RETURN(call.hidden_tag, r.get<int32_t>());
        STRATA_ASSIGN_OR_RETURN(call.forward_to, r.get_vector<int32_t>());
        STRATA_ASSIGN_OR_RETURN(call.forward_tag, r.get<int32_t>());
        STRATA_ASSIGN_OR_RETURN(call.forward_device, r.get_string());
        call.receive_ns = m.receive_ns;
        if (call.hidden_from >= 0) {
          // The input comes straight from the worker that computed it (sent before that worker
          // answered rank 0, so it is on its way); a lost sender fails the wait.
          if (call.hidden_from == link_.rank() || call.hidden_from >= link_.size())
            return Error{Code::InvalidArgument, "hidden state from rank " + std::to_string(call.hidden_from)};
          STRATA_ASSIGN_OR_RETURN(RankMessage in, link_.receive(call.hidden_from, call.hidden_tag));
          if (in.bytes.size() % sizeof(float) != 0)
            return Error{Code::Corrupt, "rank " + std::to_string(call.hidden_from) + " sent a hidden state of " +
                                            std::to_string(in.bytes.size()) + " bytes"};
          call.hidden.resize(in.bytes.size() / sizeof(float));
          if (!in.bytes.empty()) std::memcpy(call.hidden.data(), in.bytes.data(), in.bytes.size());
          call.receive_ns = in.receive_ns;
        }
        if (!pipeline) return Error{Code::InvalidArgument, "a stage call before any placement"};
        STRATA_RETURN_IF_ERROR(pipeline->serve_stage(call));
        if (call.forward_to.empty()) return {};
        // The output goes straight on to the next stage's rank(s), not back through rank 0.
        std::vector<uint8_t> bytes(call.hidden.size() * sizeof(float));
        if (!bytes.empty()) std::memcpy(bytes.data(), call.hidden.data(), bytes.size());
        for (int32_t to : call.forward_to) {
          if (to == link_.rank() || to <= 0 || to >= link_.size())
            return Error{Code::InvalidArgument, "hidden state forwarded to rank " + std::to_string(to)};
          const int64_t t0 = recorder ? recorder->now_ns() : 0;
          STRATA_RETURN_IF_ERROR(link_.send_async(to, call.forward_tag, bytes));
          if (recorder) {
            // The crossing out, on this rank's lane; the receiver records the crossing in on its own.
            trace::Event e;
            e.lane = lane_id(*recorder, call.out_holder);
            e.kind = trace::EventKind::Transfer;
            e.seq = call.parts.empty() ? -1 : call.parts.front().seq;
            e.token = call.parts.empty() ? -1 : call.parts.front().pos0;
            e.n_tokens = static_cast<int32_t>(call.n);
            e.start_ns = t0;
            e.duration_ns = recorder->now_ns() - t0;
            e.bytes = bytes.size();
            e.peer_lane = lane_id(*recorder, call.forward_device);
            if (e.lane >= 0) recorder->record(e);
          }
        }
        call.hidden.clear();
        return {};
      }();
      put_status(out, s);
      // The workers this one found lost (one it was to receive from, say): rank 0 may not have
      // noticed yet, and must re-plan around them rather than around this rank.
      std::vector<int32_t> lost;
      for (int other = 1; other < link_.size(); ++other) {
        if (other != link_.rank() && link_.lost(other)) lost.push_back(other);
      }
      out.put_vector(lost);
      out.put_vector(s.ok() ? call.hidden : std::vector<float>());
      out.put<uint64_t>(s.ok() ? call.logits.size() : 0);
      if (s.ok()) {
        for (const auto& l : call.logits) out.put_vector(l);
      }
      // This call's spans, moved to rank 0's clock.
      std::vector<std::pair<std::pair<std::string, std::string>, trace::Event>> events;
      if (recorder) {
        const int64_t epoch_abs = steady_ns() - recorder->now_ns();
        const auto& lanes = recorder->lanes();
        auto name = [&](int32_t lane) {
          return lane >= 0 && static_cast<size_t>(lane) < lanes.size() ? lanes[static_cast<size_t>(lane)].name : std::string();
        };
        trace::EventBatch batch = recorder->events_after(cursor);
        cursor = batch.next_sequence;
        for (trace::Event e : batch.events) {
          const std::string lane = name(e.lane), peer = name(e.peer_lane);
          e.start_ns = e.start_ns + epoch_abs + to_rank0_ns;
          events.push_back({{lane, peer}, e});
        }
      }
      out.put<uint64_t>(events.size());
      for (const auto& [names, e] : events) {
        out.put_string(names.first);
        out.put_string(names.second);
        out.put(e);
      }
    } else {
      return Error{Code::Corrupt, "rank 0 sent a request of unknown kind " + std::to_string(static_cast<uint32_t>(kind))};
    }
    STRATA_RETURN_IF_ERROR(link_.send(0, tag, out.bytes()));
  }
}

}  // namespace strata::dist
