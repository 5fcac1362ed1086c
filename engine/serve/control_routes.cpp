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
    if (failed == "path") {
      ApiError e = from_engine_error(s.error(), "path");
      e.status = 400;
      e.type = "invalid_request_error";
      e.code = "invalid_model_file";
      return send_error(res, e);
    }
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

void handle_put_placement(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  std::shared_ptr<LoadedModel> loaded = need_model(ctx, res);
  if (!loaded) return;
  std::optional<ProposedPlacement> proposed = propose_placement(ctx, *loaded, req, res);
  if (!proposed) return;
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
  send_json(res, {{"moved_layers", moved}, {"placement", applied}, {"memory", ctx.host.memory_json(*loaded)}});
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
    return send_error(res, bad_request(ok.error().message, "path", "invalid_model_file"));
  auto file = gguf::GgufFile::open(path);
  if (!file.ok()) return send_error(res, bad_request("not a GGUF file: '" + path + "'", "path", "invalid_model_file"));
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

void register_control_routes(httplib::Server& http, ServerContext& ctx) {
  post_route(http, "/strata/v1/models/inspect", ctx, guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_inspect(ctx, req, res);
  }));
  http.Get("/strata/v1/devices", guarded([&ctx](const httplib::Request&, httplib::Response& res) {
    send_json(res, ctx.host.devices_json());
  }));
  http.Get("/strata/v1/status", guarded([&ctx](const httplib::Request&, httplib::Response& res) {
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
  http.Get("/strata/v1/placement", guarded([&ctx](const httplib::Request&, httplib::Response& res) {
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
