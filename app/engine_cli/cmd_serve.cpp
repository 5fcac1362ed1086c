// app/engine_cli/cmd_serve.cpp — `strata-engine serve`: loads a model onto the devices and serves
// the OpenAI and control APIs (engine/serve) until SIGINT/SIGTERM — or, with --parent-pid, until
// the workstation that started it dies (parent_watch.h). Prints only to stderr. When no placement
// of the model fits the devices it serves with no model loaded and says why (status "startup").
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>

#include "app/engine_cli/commands.h"
#include "app/engine_cli/common.h"
#include "app/engine_cli/draft_cli.h"
#include "app/engine_cli/parent_watch.h"
#include "app/engine_cli/placement_cli.h"
#include "app/engine_cli/ranks.h"

#ifdef STRATA_HAVE_SERVER
#include "engine/serve/engine_host.h"
#include "engine/serve/server.h"
#include "engine/core/units.h"
#endif

namespace strata::cli {

namespace {
struct ServeOptions {
  ModelOptions model;
  DeviceOptions devices;
  DraftOptions draft;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;
  int64_t parallel = 4;
  int64_t queue = 64;
  std::string max_body = "8MiB";
  int64_t max_streams = 32;
  int64_t max_trace_streams = 8;
  int64_t max_connections_per_client = 128;
  int header_timeout_s = 10;
  int body_timeout_s = 60;
  int64_t prompt_chunk = 64;
  double device_timeout_s = 60;
  std::vector<std::string> model_dirs;
  bool allow_any_path = false;
  std::vector<std::string> cors_origins;
  bool parse_special = false;
  int http_threads = 0;
  int parent_pid = 0;  // 0: not tied to a parent
};

#ifdef STRATA_HAVE_SERVER
int serve(const ServeOptions& o) {
  // Signals go to one waiting thread; block them before any thread starts.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  // Started by a workstation: stop when it dies, by the SIGTERM path below.
  std::optional<ParentWatch> parent_watch;
  if (o.parent_pid > 0) {
    if (!die_with_parent(o.parent_pid)) {
      std::fprintf(stderr, "strata-engine serve: the workstation (pid %d) is already gone: not starting\n", o.parent_pid);
      return 0;
    }
    parent_watch.emplace(o.parent_pid);
  }

  std::string key = o.api_key;
  if (key.empty()) {
    if (const char* env = std::getenv("STRATA_API_KEY")) key = env;
  }
  if (!serve::is_loopback_host(o.host) && key.empty())
    return report(Error{Code::InvalidArgument, "refusing to listen on " + o.host +
                                                   " without --api-key: only loopback addresses may go without a key"});
  auto max_body = parse_bytes(o.max_body);
  if (!max_body.ok()) return report(max_body.error());

  auto model = load_model(o.model, /*remember=*/false);
  if (!model.ok()) return report(model.error());
  if (stop_signal_pending(set)) return 0;  // asked to stop while the model loaded
  auto rt = make_runtime_devices(o.model, o.devices, !only_cpu(o.devices) || o.devices.placement == "auto");
  if (!rt.ok()) return report(rt.error());
  // No placement that fits: the engine stays up with no model and says why (status "startup").
  auto plan = make_plan(**model, *rt, o.model, o.devices, o.parallel);

  serve::HostOptions ho;
  {
    // The server's default for requests that do not say (they may ask per request, docs/api.md).
    auto params = speculative_params(o.draft);
    if (!params.ok()) return report(params.error());
    ho.speculative = *params;
    if (!o.draft.model.empty()) {
      auto path = resolve_model_path(o.draft.model);
      if (!path.ok()) return report(path.error());
      ho.draft_model = *path;
    }
    ho.draft_device = o.draft.device;
  }
  ho.n_seq = o.parallel;
  ho.max_waiting = o.queue;
  ho.prompt_chunk = o.prompt_chunk;
  ho.device_timeout_s = o.device_timeout_s;
  for (const std::string& d : o.model_dirs) ho.model_dirs.emplace_back(d);
  ho.allow_any_path = o.allow_any_path;
  // Without a key any local web page could ask for loads: they stay in the started model's
  // folder unless --model-dir names the folders (or --allow-any-path lifts the restriction).
  if (key.empty() && ho.model_dirs.empty()) {
    std::error_code ec;
    ho.model_dirs.push_back(std::filesystem::absolute((*model)->path(), ec).parent_path());
  }
  if (RankContext* ranks = rank_context()) {
    ranks->cluster->set_tracing(true);  // the server always records: the workers send their spans
    ho.ranks = ranks->cluster.get();
    ho.ranks_model = (*model)->path();
  }
  plan::PlacementRequest& req = ho.default_request;  // for loads with "placement": null
  req.split_mode = plan::parse_split_mode(o.devices.split_mode).ok() ? *plan::parse_split_mode(o.devices.split_mode)
                                                                      : plan::SplitMode::Layer;
  if (!o.devices.split_ratio.empty()) {
    if (auto r = plan::parse_split_ratio(o.devices.split_ratio); r.ok()) req.split_ratio = *r;
  }
  req.gpu_layers = o.devices.gpu_layers;
  req.kv_on_cpu = o.devices.kv_on_cpu;
  if (auto kv = plan::kv_type_from_name(o.devices.kv_type); kv.ok()) req.kv_type = *kv;
  req.swa_full = o.devices.swa_full;
  req.main_device = o.devices.main_device;
  req.n_ctx = o.model.ctx;
  req.max_batch = o.devices.max_batch;
  if (auto g = plan::parse_plan_goal(o.devices.goal); g.ok()) req.goal = *g;

  const std::string model_name = (*model)->path().stem().string();
  serve::EngineHost host(std::move(rt->devices), ho);
  Status placed = plan.ok() ? host.adopt(std::move(*model), plan->placement) : Status(plan.error());
  std::string why_empty = placed.ok() ? "" : model_name + " is not loaded: " + placed.error().message;
  for (char& c : why_empty)
    if (c == '\n') c = ' ';
  host.set_startup(plan.ok() ? plan->explanation : std::vector<std::string>{}, why_empty);
  if (stop_signal_pending(set)) return 0;

  serve::ServerOptions so;
  so.host = o.host;
  so.port = o.port;
  so.api_key = key;
  so.max_body_bytes = *max_body;
  so.max_streams = o.max_streams;
  so.max_trace_streams = o.max_trace_streams;
  so.max_connections_per_client = o.max_connections_per_client;
  so.header_timeout_s = o.header_timeout_s;
  so.body_timeout_s = o.body_timeout_s;
  so.threads = o.http_threads;
  so.cors_origins = o.cors_origins;
  so.parse_special = o.parse_special;
  so.log = [](const std::string& line) { std::fprintf(stderr, "strata-engine serve: %s\n", line.c_str()); };
  auto server = serve::Server::create(host, so);
  if (!server.ok()) return report(server.error());
  auto port = (*server)->bind();
  if (!port.ok()) return report(port.error());
  if (placed.ok()) {
    for (const std::string& line : plan->explanation) std::fprintf(stderr, "  %s\n", line.c_str());
    std::fprintf(stderr, "strata-engine serve: %s, %lld slots, ctx %lld%s\n", model_name.c_str(),
                 static_cast<long long>(o.parallel), static_cast<long long>(plan->placement.n_ctx),
                 key.empty() ? "" : ", API key required");
  } else {
    std::fprintf(stderr, "strata-engine serve: no model loaded: %s\n", why_empty.c_str());
  }
  std::fprintf(stderr, "listening on %s:%d\n", o.host.c_str(), *port);
  std::fflush(stderr);

  serve::Server* srv = server->get();
  std::atomic<bool> listen_returned{false};
  // Waits for SIGINT/SIGTERM; stop() is repeated until listen() returns, since a signal may
  // arrive between bind() and the moment listen() starts accepting.
  std::thread waiter([srv, set, &listen_returned] {
    int sig = 0;
    sigwait(&set, &sig);
    while (!listen_returned.load()) {
      srv->stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  Status s = srv->listen();
  listen_returned = true;
  pthread_kill(waiter.native_handle(), SIGTERM);  // wakes the waiter if listen() ended by itself
  waiter.join();
  server->reset();
  host.unload();
  std::fprintf(stderr, "strata-engine serve: stopped\n");
  if (!s.ok()) return report(s.error());
  return 0;
}
#endif
}  // namespace

Command add_serve_command(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "serve the OpenAI-compatible HTTP API and the control API (docs/api.md)");
  add_model_options(*cmd, o->model);
  add_device_options(*cmd, o->devices, /*with_trace=*/false);
  add_draft_options(*cmd, o->draft);
  cmd->add_option("--host", o->host, "address to listen on (non-loopback needs --api-key)");
  cmd->add_option("--port", o->port, "port (0: any free port; the chosen one is printed)")->check(CLI::Range(0, 65535));
  cmd->add_option("--api-key", o->api_key, "require 'Authorization: Bearer KEY' on every route (or STRATA_API_KEY)");
  cmd->add_option("--parallel", o->parallel, "sequence slots generating at once")->check(CLI::Range(int64_t{1}, int64_t{256}));
  cmd->add_option("--queue", o->queue, "requests waiting for a slot before 429")->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_option("--max-body", o->max_body, "largest request body (e.g. 8MiB)");
  cmd->add_option("--max-streams", o->max_streams, "concurrent streaming responses")->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_option("--max-trace-streams", o->max_trace_streams, "concurrent trace streams (their own limit)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_option("--max-connections-per-client", o->max_connections_per_client,
                  "open connections per client address; more are answered 429 and closed")
      ->check(CLI::Range(int64_t{1}, int64_t{65536}));
  cmd->add_option("--header-timeout", o->header_timeout_s, "seconds a client has to send a request's headers")
      ->check(CLI::Range(1, 3600));
  cmd->add_option("--body-timeout", o->body_timeout_s, "seconds a client has to send a request's body")
      ->check(CLI::Range(1, 3600));
  cmd->add_option("--prompt-chunk", o->prompt_chunk,
                  "prompt tokens read per step while other sequences decode (chunked prefill)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--device-timeout", o->device_timeout_s,
                  "seconds a GPU or simulated device may take for one piece of work before it is treated as "
                  "lost and the model re-planned without it (0: no limit; the CPU has none)")
      ->check(CLI::Range(0.0, 86400.0));
  cmd->add_option("--model-dir", o->model_dirs,
                  "model loads over HTTP read files under this folder (repeatable); without --api-key and "
                  "without this, only the started model's folder");
  cmd->add_flag("--allow-any-path", o->allow_any_path, "lift the --model-dir restriction");
  cmd->add_option("--cors", o->cors_origins,
                  "let browser pages of this origin (e.g. https://app.example) call the API (repeatable; off by default)");
  cmd->add_flag("--parse-special", o->parse_special,
                "chat: read special-token texts (<|im_end|>...) in user and tool messages as control tokens "
                "(default: as text, like OpenAI)");
  cmd->add_option("--http-threads", o->http_threads, "most HTTP worker threads, started as needed (default 512)")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--parent-pid", o->parent_pid,
                  "stop (as on SIGTERM) when process PID, the workstation that started this engine, ends")
      ->check(CLI::Range(1, 1 << 30));
#ifdef STRATA_HAVE_SERVER
  return [o] { return serve(*o); };
#else
  return [] {
    std::fprintf(stderr, "error: strata-engine was built without the HTTP server (install libcpp-httplib-dev and rebuild)\n");
    return 1;
  };
#endif
}

}  // namespace strata::cli
