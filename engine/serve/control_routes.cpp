// engine/serve/control_routes.cpp — the control API under /strata/v1/: devices, status, model
// load/unload, placement get/put/estimate, auto-plan. Pipeline changes run on the scheduler
// thread (Scheduler::run_exclusive) between generation steps.
#include <optional>

#include "engine/exec/session.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "engine/plan/auto_planner.h"
#include "engine/plan/cost_model.h"
#include "engine/plan/memory_estimate.h"
#include "engine/plan/placement_validate.h"
#include "engine/serve/server_context.h"
#include "engine/backend/sim/sim_device.h"

namespace strata::serve {

namespace {

// A placement naming an unknown device is a bad request (400), not a missing route.
// Every placement error carries a code.
ApiError placement_error(const Error& error) {
  ApiError e = from_engine_error(error, "placement");
  if (error.code == Code::NotFound) e.status = 400;
  if (error.code == Code::OutOfMemory) {
    e.code = "placement_does_not_fit";
  } else if (e.status < 500) {
    e.code = "invalid_placement";
  } else {
    e.code = "placement_failed";
  }
  return e;
}

// The loaded model, or a 503 answered.
std::shared_ptr<LoadedModel> need_model(ServerContext& ctx, httplib::Response& res) {
  std::shared_ptr<LoadedModel> loaded = ctx.host.current();
  if (!loaded) {
    ApiError e;
    e.status = 503;
    e.type = "server_error";
    e.code = "model_not_loaded";
    e.message = "no model is loaded (POST /strata/v1/model/load)";
    send_error(res, e);
  }
  return loaded;
}

void handle_load(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  Json body;
  if (auto e = parse_object(req.body, body)) return send_error(res, *e);
  std::string path;
  if (auto e = read_string(body, "path", path)) return send_error(res, *e);
  if (path.empty()) return send_error(res, bad_request("'path' (a GGUF file on the server) is required", "path"));
  int64_t n_ctx = 0, n_seq = 0;
  if (auto e = read_int(body, "n_ctx", 0, int64_t{1} << 24, n_ctx)) return send_error(res, *e);
  if (auto e = read_int(body, "n_seq", 0, 256, n_seq)) return send_error(res, *e);
  const Json placement = body.contains("placement") ? body["placement"] : Json(nullptr);
  auto busy = [&] {
    ApiError e;
    e.status = 409;
    e.code = "load_in_progress";
    e.message = "another model load is running";
    send_error(res, e);
  };
  if (ctx.host.state() == "loading") return busy();
  std::string failed;
  Status s = ctx.host.load(path, placement, n_ctx, n_seq, &failed);
  if (!s.ok()) {
    if (s.error().code == Code::Unsupported && s.error().message == "another model load is running") return busy();
    if (failed == "path") return send_error(res, model_file_error(ctx, path, s.error()));
    if (failed == "placement") return send_error(res, placement_error(s.error()));
    ApiError e = from_engine_error(s.error());
    if (s.error().code == Code::Cancelled) e.code = "server_stopping";
    return send_error(res, e);
  }
  send_json(res, ctx.host.status_json());
}

// A proposed placement from a request body and its memory estimate; on failure the error has
// been sent and nullopt is returned. Shared by PUT /placement and POST /placement/estimate.
struct ProposedPlacement {
  plan::Placement placement;
  plan::MemoryEstimate estimate;
};
std::optional<ProposedPlacement> propose_placement(ServerContext& ctx, const LoadedModel& loaded,
                                                   const httplib::Request& req, httplib::Response& res) {
  Json body;
  if (auto e = parse_object(req.body, body)) {
    send_error(res, *e);
    return std::nullopt;
  }
  auto placement = ctx.host.parse_placement(loaded, body);
  if (!placement.ok()) {
    send_error(res, placement_error(placement.error()));
    return std::nullopt;
  }
  const model::Model& m = *loaded.model;
  auto estimate = plan::estimate_memory(*placement, m.config(), m.weights(), ctx.host.device_infos_at_start());
  if (!estimate.ok()) {
    send_error(res, placement_error(estimate.error()));
    return std::nullopt;
  }
  return ProposedPlacement{std::move(*placement), std::move(*estimate)};
}

// The body "auto" (a JSON string): the auto planner over the devices that are not lost, with
// stragglers at their measured speed, keeping n_ctx, n_seq, max_batch and the KV type.
std::optional<plan::PlanResult> auto_placement(ServerContext& ctx, const LoadedModel& loaded, httplib::Response& res) {
  plan::Placement now;
  Status got = loaded.scheduler->run_exclusive([&](exec::Pipeline& p) {
    now = p.placement();
    return Status{};
  });
  if (!got.ok()) {
    send_error(res, from_engine_error(got.error()));
    return std::nullopt;
  }
  plan::AutoPlanOptions o;
  o.n_ctx = now.n_ctx;
  o.n_seq = now.n_seq;
  o.max_batch = now.max_batch;
  o.kv_type = now.kv_type;
  o.swa_full = now.swa_full;
  const model::Model& m = *loaded.model;
  auto result = plan::auto_plan(m.config(), m.weights(), ctx.host.planning_infos(loaded), o);
  if (!result.ok()) {
    send_error(res, bad_request(result.error().message, "placement", "placement_does_not_fit"));
    return std::nullopt;
  }
  return std::move(*result);
}

void handle_put_placement(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  std::shared_ptr<LoadedModel> loaded = need_model(ctx, res);
  if (!loaded) return;
  const Json body = Json::parse(req.body, nullptr, false);
  std::optional<ProposedPlacement> proposed;
  std::vector<std::string> explanation;
  if (body.is_string() && body.get<std::string>() == "auto") {
    std::optional<plan::PlanResult> planned = auto_placement(ctx, *loaded, res);
    if (!planned) return;
    proposed = ProposedPlacement{std::move(planned->placement), std::move(planned->memory)};
    explanation = std::move(planned->explanation);
  } else {
    proposed = propose_placement(ctx, *loaded, req, res);
    if (!proposed) return;
  }
  const plan::Placement* placement = &proposed->placement;
  const plan::MemoryEstimate* estimate = &proposed->estimate;
  if (Status fits = plan::check_fits(*estimate); !fits.ok()) {
    ApiError e = bad_request(fits.error().message, "placement", "placement_does_not_fit");
    return send_error(res, e);
  }
  int64_t moved = 0;
  Json applied;
  Status s = loaded->scheduler->run_exclusive([&](exec::Pipeline& p) -> Status {
    STRATA_ASSIGN_OR_RETURN(moved, p.apply(*placement));
    applied = plan::to_json(p.placement());
    p.snapshot_memory();
    return Status{};
  });
  if (!s.ok()) return send_error(res, placement_error(s.error()));
  Json out = {{"moved_layers", moved}, {"placement", applied}, {"memory", ctx.host.memory_json(*loaded)}};
  if (!explanation.empty()) out["explanation"] = explanation;
  send_json(res, out);
}

void handle_estimate(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  std::shared_ptr<LoadedModel> loaded = need_model(ctx, res);
  if (!loaded) return;
  std::optional<ProposedPlacement> proposed = propose_placement(ctx, *loaded, req, res);
  if (!proposed) return;
  const plan::Placement* placement = &proposed->placement;
  const plan::MemoryEstimate* estimate = &proposed->estimate;
  const model::Model& m = *loaded->model;
  const std::vector<DeviceInfo>& infos = ctx.host.device_infos_at_start();
  Json out;
  Status fits = plan::check_fits(*estimate);
  out["fits"] = fits.ok();
  out["memory"] = plan::to_json(*estimate);
  auto cost = plan::estimate_cost(*placement, m.config(), m.weights(), infos);
  out["cost"] = cost.ok() ? plan::to_json(*cost) : Json(nullptr);
  // The same placement at the end of a chat that fills the context: attention reads n_ctx positions.
  auto full = plan::estimate_cost(*placement, m.config(), m.weights(), infos, placement->n_ctx);
  out["cost_full_context"] = full.ok() ? plan::to_json(*full) : Json(nullptr);
  // With simulated devices: what this machine can run, the simulation bounded by the host CPU
  // (plan::host_bounded); null when the placement uses none.
  out["cost_on_this_machine"] = Json(nullptr);
  if (plan::uses_simulated(*placement, infos)) {
    auto here = plan::estimate_cost(*placement, m.config(), m.weights(), plan::host_bounded(infos));
    if (here.ok()) out["cost_on_this_machine"] = plan::to_json(*here);
  }
  out["error"] = fits.ok() ? Json(nullptr) : Json(fits.error().message);
  Json shortfall = Json::object();
  for (const plan::DeviceMemory& d : estimate->devices) {
    if (!d.fits) shortfall[d.device] = d.shortfall_bytes;
  }
  out["shortfall_bytes"] = shortfall;
  send_json(res, out);
}

void handle_plan(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  std::shared_ptr<LoadedModel> loaded = need_model(ctx, res);
  if (!loaded) return;
  Json body = Json::object();
  if (!req.body.empty()) {
    if (auto e = parse_object(req.body, body)) return send_error(res, *e);
  }
  plan::AutoPlanOptions o;
  o.n_ctx = loaded->pipeline->n_ctx();
  o.n_seq = loaded->pipeline->n_seq();
  o.max_batch = loaded->pipeline->placement().max_batch;
  std::string goal = "balance";
  if (auto e = read_string(body, "goal", goal)) return send_error(res, *e);
  auto parsed_goal = plan::parse_plan_goal(goal);
  if (!parsed_goal.ok()) return send_error(res, from_engine_error(parsed_goal.error(), "goal"));
  o.goal = *parsed_goal;
  if (auto e = read_int(body, "n_ctx", 1, int64_t{1} << 24, o.n_ctx)) return send_error(res, *e);
  if (auto e = read_int(body, "n_seq", 1, 256, o.n_seq)) return send_error(res, *e);
  const model::Model& m = *loaded->model;
  auto result = plan::auto_plan(m.config(), m.weights(), ctx.host.device_infos_at_start(), o);
  if (!result.ok()) return send_error(res, from_engine_error(result.error()));
  send_json(res, {{"placement", plan::to_json(result->placement)},
                  {"memory", plan::to_json(result->memory)},
                  {"cost", plan::to_json(result->cost)},
                  {"explanation", result->explanation}});
}

}  // namespace

// A GGUF file's header summary and the memory it needs at a context, without loading weights:
// the GUI's model list asks this for every file it shows.
void handle_inspect(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  Json body;
  if (auto e = parse_object(req.body, body)) return send_error(res, *e);
  std::string path;
  if (auto e = read_string(body, "path", path)) return send_error(res, *e);
  if (path.empty()) return send_error(res, bad_request("'path' is required", "path"));
  int64_t n_ctx = 0;
  if (auto e = read_int(body, "n_ctx", 0, plan::kMaxCtx, n_ctx)) return send_error(res, *e);
  if (Status ok = check_model_file(path, ctx.host.options()); !ok.ok())
    return send_error(res, model_file_error(ctx, path, ok.error()));
  auto file = gguf::GgufFile::open(path);
  if (!file.ok()) {
    Error e = file.error();
    if (e.code == Code::InvalidArgument) e.code = Code::Corrupt;
    return send_error(res, model_file_error(ctx, path, e));
  }
  Json out;
  out["path"] = path;
  out["file_bytes"] = file->file_size();
  out["architecture"] = file->architecture();
  uint64_t params = 0;
  Json types = Json::object();
  for (const gguf::TensorInfo& t : file->tensors()) {
    params += t.n_elements;
    Json& entry = types[kernels::dtype_name(t.type)];
    if (entry.is_null()) entry = {{"tensors", 0}, {"bytes", uint64_t{0}}};
    entry["tensors"] = entry["tensors"].get<int64_t>() + 1;
    entry["bytes"] = entry["bytes"].get<uint64_t>() + t.n_bytes;
  }
  out["parameters"] = params;
  out["types"] = types;
  auto config = model::read_model_config(*file);
  if (!config.ok()) {
    out["runnable"] = false;
    out["error"] = config.error().message;
    return send_json(res, out);
  }
  auto weights = model::bind_weights(*file, *config);
  if (!weights.ok()) {
    out["runnable"] = false;
    out["error"] = weights.error().message;
    return send_json(res, out);
  }
  out["runnable"] = true;
  out["name"] = config->name;
  out["n_layers"] = config->n_layers;
  out["n_ctx_train"] = config->n_ctx_train;
  out["n_embd"] = config->n_embd;
  if (n_ctx == 0) n_ctx = plan::default_n_ctx(*config);
  out["n_ctx"] = n_ctx;
  // Everything on one device: weights + KV at this context + activation buffers.
  DeviceInfo host;
  host.id = "cpu";
  host.bytes_total = UINT64_MAX / 2;
  host.threads = 1;
  auto estimate = plan::estimate_memory(exec::single_device_placement(*config, "cpu", n_ctx, 1, 256), *config,
                                        *weights, {host});
  if (estimate.ok() && !estimate->devices.empty()) {
    const plan::DeviceMemory& d = estimate->devices[0];
    out["memory"] = {{"weights", d.weight_bytes}, {"kv", d.kv_bytes}, {"scratch", d.scratch_bytes},
                     {"total", d.total_bytes}};
  }
  (void)ctx;
  send_json(res, out);
}

// POST /strata/v1/devices/ID/fault: {"kind":"lost"} (now), {"kind":"lost","after_ops":N} or
// {"kind":"lost","after_s":S}, {"kind":"hang","after_ops":N} (the device stops answering: the
// engine gives it up after its device timeout), {"kind":"oom","bytes":B}, {"kind":"slow","factor":F}. Simulated
// devices only, and only on a server that has an API key (a fault is a way to stop service).
void handle_fault(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  if (ctx.options.api_key.empty()) {
    ApiError e;
    e.status = 403;
    e.type = "permission_error";
    e.code = "api_key_required";
    e.message = "fault injection needs a server started with an API key (--api-key)";
    return send_error(res, e);
  }
  const std::string id = req.matches.size() > 1 ? std::string(req.matches[1]) : std::string();
  Json body;
  if (auto e = parse_object(req.body, body)) return send_error(res, *e);
  std::string kind;
  if (auto e = read_string(body, "kind", kind)) return send_error(res, *e);
  backend::SimFaults f;
  bool lost_now = false;
  if (kind == "lost") {
    int64_t after_ops = 0;
    double after_s = 0;
    if (auto e = read_int(body, "after_ops", 0, int64_t{1} << 40, after_ops)) return send_error(res, *e);
    if (body.contains("after_s")) {
      if (!body["after_s"].is_number() || !(body["after_s"].get<double>() >= 0) || body["after_s"].get<double>() > 86400)
        return send_error(res, bad_request("'after_s' must be a number of seconds in [0, 86400]", "after_s"));
      after_s = body["after_s"].get<double>();
    }
    if (after_ops > 0) f.fail_after_ops = after_ops;
    if (after_s > 0) f.fail_at_s = after_s;
    lost_now = after_ops == 0 && after_s == 0;
  } else if (kind == "hang") {
    int64_t after_ops = 0;
    if (auto e = read_int(body, "after_ops", 0, int64_t{1} << 40, after_ops)) return send_error(res, *e);
    f.hang_after_ops = after_ops;
  } else if (kind == "oom") {
    // "bytes": allocations fail beyond B more bytes; "after_ops": the device's scratch stops
    // growing (ops fail with out of memory) after N more ops.
    if (body.contains("after_ops")) {
      int64_t after_ops = 0;
      if (auto e = read_int(body, "after_ops", 0, int64_t{1} << 40, after_ops)) return send_error(res, *e);
      f.oom_after_ops = after_ops;
    } else {
      int64_t bytes = 0;
      if (auto e = read_int(body, "bytes", 0, int64_t{1} << 60, bytes)) return send_error(res, *e);
      f.oom_after_bytes = bytes;
    }
  } else if (kind == "slow") {
    if (!body.contains("factor") || !body["factor"].is_number() || !(body["factor"].get<double>() >= 1) ||
        body["factor"].get<double>() > 1000)
      return send_error(res, bad_request("'factor' must be a number in [1, 1000]", "factor"));
    f.slow = body["factor"].get<double>();
  } else {
    return send_error(res, bad_request("'kind' is '" + kind + "', expected lost, hang, oom or slow", "kind"));
  }
  Status s = ctx.host.inject_fault(id, f, lost_now);
  if (!s.ok()) {
    if (s.error().code == Code::NotFound) {
      ApiError e;
      e.status = 404;
      e.code = "device_not_found";
      e.message = s.error().message;
      return send_error(res, e);
    }
    return send_error(res, bad_request(s.error().message, "device", "invalid_device"));
  }
  send_json(res, {{"device", id}, {"kind", kind}, {"armed", true}});
}

void register_control_routes(httplib::Server& http, ServerContext& ctx) {
  post_route(http, R"(/strata/v1/devices/([A-Za-z0-9_.:-]+)/fault)", ctx,
             guarded([&ctx](const httplib::Request& req, httplib::Response& res) { handle_fault(ctx, req, res); }),
             "/strata/v1/devices/{id}/fault");
  post_route(http, "/strata/v1/models/inspect", ctx, guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_inspect(ctx, req, res);
  }));
  get_route(http, "/strata/v1/devices", ctx, guarded([&ctx](const httplib::Request&, httplib::Response& res) {
    send_json(res, ctx.host.devices_json());
  }));
  get_route(http, "/strata/v1/status", ctx, guarded([&ctx](const httplib::Request&, httplib::Response& res) {
    Json status = ctx.host.status_json();
    status["streams"] = ctx.open_streams.load();
    send_json(res, status);
  }));
  post_route(http, "/strata/v1/model/load", ctx, guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_load(ctx, req, res);
  }));
  post_route(http, "/strata/v1/model/unload", ctx, guarded([&ctx](const httplib::Request&, httplib::Response& res) {
    if (ctx.host.state() == "loading") {
      ApiError e;
      e.status = 409;
      e.code = "load_in_progress";
      e.message = "a model load is running";
      return send_error(res, e);
    }
    ctx.host.unload();
    send_json(res, ctx.host.status_json());
  }));
  get_route(http, "/strata/v1/placement", ctx, guarded([&ctx](const httplib::Request&, httplib::Response& res) {
    std::shared_ptr<LoadedModel> loaded = need_model(ctx, res);
    if (!loaded) return;
    Json placement;
    Status s = loaded->scheduler->run_exclusive([&](exec::Pipeline& p) {
      placement = plan::to_json(p.placement());
      return Status{};
    });
    if (!s.ok()) return send_error(res, from_engine_error(s.error()));
    send_json(res, placement);
  }));
  put_route(http, "/strata/v1/placement", ctx, guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_put_placement(ctx, req, res);
  }));
  post_route(http, "/strata/v1/placement/estimate", ctx, guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_estimate(ctx, req, res);
  }));
  post_route(http, "/strata/v1/plan", ctx, guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_plan(ctx, req, res);
  }));
}

}  // namespace strata::serve
