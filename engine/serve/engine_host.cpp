// engine/serve/engine_host.cpp — devices, recorder, model load/unload and the control JSON.
// Depends on the engine core only (no HTTP library).
#include "engine/serve/engine_host.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>

#include "engine/core/version.h"
#include "engine/plan/memory_estimate.h"
#include "engine/plan/placement_validate.h"
#include "engine/plan/tensor_split.h"
#include "engine/serve/device_json.h"
#include "engine/serve/replan_json.h"
#include "engine/backend/sim/sim_device.h"

namespace strata::serve {

Status check_model_file(const std::string& path, const HostOptions& options) {
  // InvalidArgument: the request's path itself is refused (nothing on disk looked at). Other
  // codes: what the file turned out to be; the routes tell clients no more than "cannot open".
  auto bad = [](std::string message) { return Error{Code::InvalidArgument, std::move(message)}; };
  auto file = [](Code code, std::string message) { return Error{code, std::move(message)}; };
  if (path.find('\0') != std::string::npos) return bad("'path' contains a NUL character");
  if (path.empty()) return bad("'path' is empty");
  namespace fs = std::filesystem;
  if (!options.model_dirs.empty() && !options.allow_any_path) {
    std::error_code ec;
    const fs::path target = fs::weakly_canonical(fs::absolute(path, ec), ec);
    bool inside = false;
    for (const fs::path& dir : options.model_dirs) {
      std::error_code ec2;
      const fs::path root = fs::weakly_canonical(fs::absolute(dir, ec2), ec2);
      const std::string r = root.string(), t = target.string();
      if (!ec && !ec2 && t.size() > r.size() && t.compare(0, r.size(), r) == 0 &&
          (r.back() == '/' || t[r.size()] == '/'))
        inside = true;
    }
    if (!inside) return bad("'path' is outside the model folders this server loads from (--model-dir; --allow-any-path lifts this)");
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return file(Code::NotFound, "no such file: '" + path + "'");
  if (!S_ISREG(st.st_mode)) return file(Code::Corrupt, "not a GGUF file: '" + path + "' is not a regular file");
  if (st.st_size < 32) return file(Code::Corrupt, "not a GGUF file: '" + path + "' is shorter than a GGUF header");
  // O_NONBLOCK: should the path have been swapped for a FIFO since stat, open does not block.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return file(Code::Io, "cannot open '" + path + "': " + std::strerror(errno));
  char magic[4] = {};
  struct stat st2 {};
  const bool regular = ::fstat(fd, &st2) == 0 && S_ISREG(st2.st_mode);
  const bool read_ok = regular && ::read(fd, magic, 4) == 4;
  ::close(fd);
  if (!read_ok || std::memcmp(magic, "GGUF", 4) != 0) return file(Code::Corrupt, "not a GGUF file: '" + path + "' (no GGUF magic)");
  return {};
}

uint64_t process_rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return static_cast<uint64_t>(resident) * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

struct EngineHost::LoadJob {
  std::filesystem::path path;
  nlohmann::json placement;
  int64_t n_ctx = 0, n_seq = 0;
  Status result;
  std::string param;
  bool done = false;
};

LoadedModel::~LoadedModel() {
  if (scheduler) scheduler->shutdown();
}

EngineHost::EngineHost(std::vector<std::unique_ptr<backend::Device>> devices, HostOptions options)
    : devices_(std::move(devices)), options_(std::move(options)), started_(std::chrono::steady_clock::now()) {
  for (const auto& d : devices_) {
    infos_.push_back(d->info());
    recorder_.add_lane(d->id(), d->info().simulated);
  }
  host_lane_ = recorder_.add_lane("host", false);
  // Speculative work (draft spans, accepted and rejected guesses) gets a lane when the server is
  // set up to speculate (a draft model, or speculation by default).
  if (!options_.draft_model.empty() || options_.speculative.mode != exec::DraftMode::Off)
    draft_lane_ = recorder_.add_lane("draft", false);
  loader_ = std::thread([this] { loader_loop(); });
}

EngineHost::~EngineHost() {
  begin_shutdown();
  {
    std::lock_guard<std::mutex> lock(loader_mutex_);
    loader_stop_ = true;
  }
  loader_cv_.notify_all();
  if (loader_.joinable()) loader_.join();
  unload();
}

void EngineHost::begin_shutdown() {
  stopping_ = true;
  loader_cv_.notify_all();
  if (std::shared_ptr<LoadedModel> m = current()) m->scheduler->shutdown();
}

void EngineHost::loader_loop() {
  while (true) {
    std::shared_ptr<LoadJob> job;
    {
      std::unique_lock<std::mutex> lock(loader_mutex_);
      loader_cv_.wait(lock, [&] { return loader_stop_ || (job_ && !job_->done); });
      if (loader_stop_) return;
      job = job_;
    }
    do_load(*job);
    {
      std::lock_guard<std::mutex> lock(loader_mutex_);
      job->done = true;
    }
    loader_cv_.notify_all();
  }
}

std::shared_ptr<LoadedModel> EngineHost::current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_;
}

std::string EngineHost::state() const {
  if (loading_.load()) return "loading";
  return current() ? "ready" : "empty";
}

std::vector<DeviceInfo> EngineHost::device_infos() const {
  std::vector<DeviceInfo> out;
  for (const auto& d : devices_) out.push_back(d->info());
  return out;
}

void EngineHost::unload() {
  std::shared_ptr<LoadedModel> old;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    old.swap(current_);
  }
  if (!old) return;
  old->scheduler->shutdown();  // every request finishes (Cancelled); streams let go of `old`
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (old.use_count() > 1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  old.reset();
  // Weights and scratch freed above stay in malloc's arenas unless handed back.
  ::malloc_trim(0);
}

void EngineHost::set_startup(std::vector<std::string> explanation, std::string error) {
  std::lock_guard<std::mutex> lock(mutex_);
  startup_explanation_ = std::move(explanation);
  startup_error_ = std::move(error);
}

Status EngineHost::install(std::unique_ptr<model::Model> model, const plan::Placement& placement) {
  auto loaded = std::make_shared<LoadedModel>();
  loaded->id = model->path().stem().string();
  loaded->own_template = !model->chat_template().empty();
  auto tmpl = chat::template_for_model(model->chat_template());
  if (tmpl.ok()) {
    loaded->tmpl = std::move(*tmpl);
  } else {
    loaded->template_error = tmpl.error().message;
  }
  std::vector<backend::Device*> list;
  for (const auto& d : devices_) list.push_back(d.get());
  STRATA_ASSIGN_OR_RETURN(loaded->pipeline, exec::Pipeline::create(*model, list, placement, &recorder_, options_.ranks));
  loaded->pipeline->set_device_timeout(std::chrono::milliseconds(static_cast<int64_t>(options_.device_timeout_s * 1000.0)));
  loaded->model = std::move(model);
  load_draft(*loaded);
  exec::SchedulerOptions so;
  so.max_waiting = options_.max_waiting;
  so.prompt_chunk = options_.prompt_chunk;
  so.recorder = &recorder_;
  so.host_lane = host_lane_;
  so.draft = loaded->drafter.get();
  so.draft_lane = draft_lane_;
  so.on_replan = [this](const Expected<exec::ReplanReport>& r) {
    nlohmann::json j = r.ok() ? replan_json(*r) : nlohmann::json::object();
    j["time_ns"] = recorder_.now_ns();
    j["ok"] = r.ok();
    if (r.ok()) {
      j["error"] = nullptr;
      j["explanation"] = r->explanation;
      j["placement"] = plan::to_json(r->placement);
    } else {
      j["error"] = r.error().message;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    replans_.push_back(std::move(j));
  };
  loaded->scheduler = std::make_shared<exec::Scheduler>(*loaded->pipeline, so);
  loaded->loaded_at = std::chrono::system_clock::now();
  loaded->pipeline->snapshot_memory();
  std::lock_guard<std::mutex> lock(mutex_);
  current_ = std::move(loaded);
  return {};
}

void EngineHost::load_draft(LoadedModel& loaded) {
  if (options_.draft_model.empty()) return;
  // A draft that cannot serve this model (another vocabulary, no memory left) costs speed, not the
  // model: it is served without one, and /strata/v1/status says why.
  auto draft = exec::load_draft_model(options_.draft_model, *loaded.model, devices_, options_.draft_device,
                                      loaded.pipeline->n_seq(), loaded.pipeline->n_ctx());
  if (!draft.ok()) {
    loaded.draft_error = draft.error().message;
    return;
  }
  loaded.draft_model = std::move(draft->model);
  loaded.drafter = std::move(draft->drafter);
}

Status EngineHost::adopt(std::unique_ptr<model::Model> model, const plan::Placement& placement) {
  std::lock_guard<std::mutex> load_lock(load_mutex_);
  unload();
  return install(std::move(model), placement);
}

Status EngineHost::load(const std::filesystem::path& path, const nlohmann::json& placement_json, int64_t n_ctx,
                        int64_t n_seq, std::string* failed_param) {
  if (stopping_.load()) return Error{Code::Cancelled, "the server is stopping"};
  std::unique_lock<std::mutex> load_lock(load_mutex_, std::try_to_lock);
  if (!load_lock.owns_lock()) return Error{Code::Unsupported, "another model load is running"};
  loading_ = true;
  struct Done {
    std::atomic<bool>& flag;
    ~Done() { flag = false; }
  } done{loading_};
  auto job = std::make_shared<LoadJob>();
  job->path = path;
  job->placement = placement_json;
  job->n_ctx = n_ctx;
  job->n_seq = n_seq;
  std::unique_lock<std::mutex> lock(loader_mutex_);
  job_ = job;
  loader_cv_.notify_all();
  loader_cv_.wait(lock, [&] { return job->done || stopping_.load(); });
  if (!job->done) {
    if (failed_param) *failed_param = "";
    return Error{Code::Cancelled, "the server is stopping: the load was abandoned"};
  }
  if (failed_param) *failed_param = job->param;
  return job->result;
}

void EngineHost::do_load(LoadJob& job) {
  auto fail = [&](const char* param, Error e) {
    job.param = param;
    job.result = std::move(e);
  };
  if (Status s = check_model_file(job.path.string(), options_); !s.ok()) return fail("path", s.error());
  if (options_.ranks) {
    std::error_code a, b;
    if (!std::filesystem::equivalent(job.path, options_.ranks_model, a) || a || b)
      return fail("path", Error{Code::InvalidArgument, "this engine spans several ranks (mpirun), each mapping " +
                                                       options_.ranks_model.filename().string() +
                                                       ": restart the job to serve another model"});
  }
  auto loaded = model::Model::load(job.path);
  if (!loaded.ok()) {
    // The details stay in the error for the server's log; the routes tell clients "cannot open".
    Error e = loaded.error();
    if (e.code == Code::InvalidArgument) e.code = Code::Corrupt;
    e.message = "'" + job.path.string() + "': " + e.message;
    return fail("path", e);
  }
  std::unique_ptr<model::Model> model = std::move(*loaded);
  if (stopping_.load()) return fail("", Error{Code::Cancelled, "the server is stopping"});
  plan::PlacementRequest req = options_.default_request;
  if (job.n_ctx > 0) req.n_ctx = job.n_ctx;
  req.n_seq = job.n_seq > 0 ? job.n_seq : options_.n_seq;
  plan::Placement placement;
  auto placement_step = [&]() -> Status {
    if (job.placement.is_object()) {
      STRATA_ASSIGN_OR_RETURN(placement, plan::placement_from_json(job.placement, model->config().n_layers));
      if (job.n_ctx > 0) placement.n_ctx = job.n_ctx;
      if (job.n_seq > 0) placement.n_seq = job.n_seq;
      STRATA_ASSIGN_OR_RETURN(plan::MemoryEstimate est,
                              plan::estimate_memory(placement, model->config(), model->weights(), infos_));
      STRATA_RETURN_IF_ERROR(plan::check_fits(est));
      return {};
    }
    if (job.placement.is_string()) {
      if (job.placement.get<std::string>() != "auto")
        return Error{Code::InvalidArgument, "'placement' must be a placement object, \"auto\" or null"};
      req.placement = "auto";
    } else if (!job.placement.is_null()) {
      return Error{Code::InvalidArgument, "'placement' must be a placement object, \"auto\" or null"};
    }
    STRATA_ASSIGN_OR_RETURN(plan::PlanResult plan,
                            plan::plan_that_fits(model->config(), model->weights(), infos_, req));
    placement = plan.placement;
    return {};
  };
  if (Status s = placement_step(); !s.ok()) return fail("placement", s.error());
  if (stopping_.load()) return fail("", Error{Code::Cancelled, "the server is stopping"});
  unload();
  if (Status s = install(std::move(model), placement); !s.ok()) return fail("placement", s.error());
  job.result = Status{};
}

Expected<plan::Placement> EngineHost::parse_placement(const LoadedModel& loaded, const nlohmann::json& json) const {
  return plan::placement_from_json(json, loaded.model->config().n_layers);
}

nlohmann::json EngineHost::devices_json() const { return serve::devices_json(device_infos()); }

Status EngineHost::inject_fault(const std::string& device_id, const backend::SimFaults& faults, bool lost_now) {
  for (const auto& d : devices_) {
    if (d->id() != device_id) continue;
    auto* sim = dynamic_cast<backend::SimulatedDevice*>(d.get());
    if (!sim)
      return Error{Code::InvalidArgument, "device '" + device_id + "' is not simulated: faults are injected into "
                                          "simulated devices only"};
    if (lost_now) {
      sim->mark_failed("lost (injected fault)");
    } else {
      sim->inject(faults);
    }
    return {};
  }
  return Error{Code::NotFound, "no device '" + device_id + "'"};
}

std::vector<plan::DeviceSpeed> EngineHost::device_speeds(const LoadedModel& loaded, double seconds) const {
  plan::Placement placement;
  Status s = loaded.scheduler->run_exclusive([&](exec::Pipeline& p) {
    placement = p.placement();
    return Status{};
  });
  if (!s.ok()) return {};
  const int64_t since = recorder_.now_ns() - static_cast<int64_t>(seconds * 1e9);
  return plan::compare_with_plan(recorder_.recent_events(since, 50000), recorder_.lanes(), placement, loaded.model->config(),
                                 loaded.model->weights(), device_infos());
}

std::vector<DeviceInfo> EngineHost::planning_infos(const LoadedModel& loaded) const {
  const std::vector<plan::DeviceSpeed> speeds = device_speeds(loaded);
  std::vector<DeviceInfo> out;
  for (DeviceInfo info : device_infos()) {
    if (info.failed) continue;
    for (const plan::DeviceSpeed& sp : speeds) {
      if (sp.device != info.id || !sp.straggler) continue;
      info.bandwidth_gbps /= sp.ratio();
      info.tflops /= sp.ratio();
    }
    out.push_back(std::move(info));
  }
  return out;
}

std::vector<nlohmann::json> EngineHost::replans_since(size_t index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (index >= replans_.size()) return {};
  return {replans_.begin() + static_cast<std::ptrdiff_t>(index), replans_.end()};
}

nlohmann::json EngineHost::memory_json(const LoadedModel& loaded) const {
  std::map<std::string, backend::MemoryUse> use;
  // The pipeline's layers change only on the scheduler thread: ask there.
  Status s = loaded.scheduler->run_exclusive([&](exec::Pipeline& p) {
    use = p.memory_by_device();
    return Status{};
  });
  nlohmann::json out = nlohmann::json::array();
  if (!s.ok()) return out;
  for (const DeviceInfo& info : infos_) {
    auto it = use.find(info.id);
    if (it == use.end()) continue;
    const backend::MemoryUse& m = it->second;
    out.push_back({{"device", info.id},
                   {"weights", m.weights},
                   {"kv", m.kv},
                   {"scratch", m.scratch},
                   {"overhead", m.overhead},
                   {"total", m.total()},
                   {"capacity", info.bytes_total}});
  }
  return out;
}

nlohmann::json EngineHost::speculative_json(const LoadedModel& loaded) const {
  nlohmann::json j;
  j["default"] = {{"mode", exec::draft_mode_name(options_.speculative.mode)},
                  {"max_draft", options_.speculative.max_draft}};
  if (loaded.drafter) {
    const model::Model& d = *loaded.draft_model;
    j["draft"] = {{"id", d.path().stem().string()},
                  {"path", d.path().string()},
                  {"device", loaded.drafter->device().id()},
                  {"parameters", d.parameter_count()},
                  {"weight_bytes", d.weight_bytes()}};
  } else {
    j["draft"] = nullptr;
  }
  j["draft_error"] = loaded.draft_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(loaded.draft_error);
  const exec::SchedulerStats st = loaded.scheduler->stats();
  j["drafted"] = st.draft_tokens;
  j["accepted"] = st.draft_accepted;
  j["acceptance"] = st.draft_tokens > 0 ? static_cast<double>(st.draft_accepted) / static_cast<double>(st.draft_tokens) : 0.0;
  return j;
}

nlohmann::json EngineHost::status_json() const {
  nlohmann::json j;
  j["version"] = strata::version();
  j["state"] = state();
  // Devices lost (a sticky error or an injected fault) and the re-plans that followed.
  nlohmann::json lost = nlohmann::json::array();
  for (const auto& d : devices_) {
    if (d->failed()) lost.push_back({{"device", d->id()}, {"failure", d->failure()}});
  }
  j["lost_devices"] = lost;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    j["replans"] = replans_;
  }
  std::shared_ptr<LoadedModel> loaded = current();
  const double uptime = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    j["startup"] = {{"explanation", startup_explanation_},
                    {"error", startup_error_.empty() ? nlohmann::json(nullptr) : nlohmann::json(startup_error_)}};
  }
  if (!loaded) {
    j["model"] = nullptr;
    j["placement"] = nullptr;
    j["memory"] = nlohmann::json::array();
    j["tokens_per_s"] = 0.0;
    j["queue"] = {{"active", 0}, {"waiting", 0}, {"slots", 0}};
    j["uptime_s"] = uptime;
    j["process"] = {{"rss_bytes", process_rss_bytes()}};
    return j;
  }
  const model::ModelConfig& c = loaded->model->config();
  nlohmann::json placement;
  Status s = loaded->scheduler->run_exclusive([&](exec::Pipeline& p) {
    placement = plan::to_json(p.placement());
    return Status{};
  });
  j["speculative"] = speculative_json(*loaded);
  j["model"] = {{"id", loaded->id},
                {"path", loaded->model->path().string()},
                {"architecture", model::arch_name(c.arch)},
                {"n_layers", c.n_layers},
                {"n_ctx", loaded->pipeline->n_ctx()},
                {"parameters", loaded->model->parameter_count()},
                {"weight_bytes", loaded->model->weight_bytes()},
                {"chat_template", !loaded->own_template                     ? "completion"
                                  : loaded->model->chat_template_builtin() ? "builtin"
                                                                           : "model"}};
  // Sizes the placement editor draws its tiles with (its figures come from /placement/estimate).
  const model::ModelWeights& w = loaded->model->weights();
  nlohmann::json layer_bytes = nlohmann::json::array();
  for (const model::LayerWeights& l : w.layers) layer_bytes.push_back(l.n_bytes());
  j["model"]["n_embd"] = c.n_embd;
  j["model"]["n_vocab"] = c.n_vocab;
  j["model"]["n_ctx_train"] = c.n_ctx_train;
  j["model"]["layer_bytes"] = layer_bytes;
  // The parts of each block (docs/placement.md, "Parts of a block"), for the editor's part tiles:
  // attention (with its norms), the FFN part (dense FFN, or router + shared expert) and the routed
  // experts (all of them; one expert is experts_bytes / n_expert). The three sum to layer_bytes[i].
  nlohmann::json layer_parts = nlohmann::json::array();
  const plan::LayerShard whole = plan::whole_layer(c);
  for (const model::LayerWeights& l : w.layers)
    layer_parts.push_back({{"attention_bytes", plan::shard_attention_bytes(c, l, whole)},
                           {"ffn_bytes", plan::shard_ffn_bytes(c, l, whole)},
                           {"experts_bytes", plan::expert_range_bytes(c, l, 0, c.n_expert)}});
  j["model"]["layer_parts"] = layer_parts;
  j["model"]["n_expert"] = c.n_expert;            // routed experts per block; 0: a dense model
  j["model"]["n_expert_used"] = c.n_expert_used;  // experts each token runs (top-k)
  j["model"]["embedding_bytes"] = w.token_embd.n_bytes;
  j["model"]["head_bytes"] = w.output_norm.n_bytes + w.output_norm_b.n_bytes + (c.tied_output ? 0 : w.output.n_bytes);
  j["model"]["head_tied"] = c.tied_output;
  // K and V of one block for one position of one sequence, at the loaded cache's element type.
  const kernels::DType kv_type = loaded->pipeline->placement().kv_type;
  j["model"]["kv_type"] = kernels::dtype_name(kv_type);
  j["model"]["kv_bytes_per_token"] = static_cast<uint64_t>(c.kv_planes() * kernels::row_bytes(kv_type, c.kv_dim()));
  j["placement"] = s.ok() ? placement : nlohmann::json(nullptr);
  j["memory"] = memory_json(*loaded);
  const exec::SchedulerStats st = loaded->scheduler->stats();
  j["tokens_per_s"] = st.decode_tokens_per_s;
  j["queue"] = {{"active", st.active}, {"waiting", st.waiting}, {"slots", st.slots}};
  // Measured against planned compute per device over the last 5 s; stragglers named.
  nlohmann::json speeds = nlohmann::json::array(), stragglers = nlohmann::json::array();
  for (const plan::DeviceSpeed& sp : device_speeds(*loaded)) {
    speeds.push_back({{"device", sp.device},
                      {"passes", sp.passes},
                      {"measured_ms", sp.measured_ms},
                      {"planned_ms", sp.planned_ms},
                      {"ratio", sp.ratio()},
                      {"straggler", sp.straggler}});
    if (sp.straggler) stragglers.push_back(sp.device);
  }
  j["device_speed"] = speeds;
  j["stragglers"] = stragglers;
  j["uptime_s"] = uptime;
  j["process"] = {{"rss_bytes", process_rss_bytes()}};
  return j;
}

}  // namespace strata::serve
