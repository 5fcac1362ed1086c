// engine/serve/server_context.h — what the route files share: the engine host, the limits, the
// counters behind /metrics, and the response helpers. Internal to engine/serve (uses httplib).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <httplib.h>

#include "engine/serve/api_json.h"
#include "engine/serve/engine_host.h"
#include "engine/serve/server.h"

namespace strata::serve {

// Counters of /metrics. Shared (shared_ptr) with generation callbacks, which may outlive a
// request; every member is safe to touch from any thread.
struct Metrics {
  std::atomic<uint64_t> tokens_generated{0};
  std::atomic<uint64_t> prompt_tokens{0};
  std::atomic<int64_t> requests_active{0};    // completion requests being served (waiting or generating)
  std::mutex mutex;
  std::map<std::pair<std::string, int>, uint64_t> requests;  // (route, status) -> count

  void count_request(const std::string& route, int status);
};

struct ServerContext {
  EngineHost& host;
  ServerOptions options;
  std::shared_ptr<Metrics> metrics = std::make_shared<Metrics>();
  std::atomic<int64_t> open_streams{0};  // streaming responses in flight (completions + trace)
  std::atomic<bool> stopping{false};

  ServerContext(EngineHost& h, ServerOptions o) : host(h), options(std::move(o)) {}
};

void send_json(httplib::Response& res, const Json& body, int status = 200);
void send_error(httplib::Response& res, const ApiError& error);

// Wraps a handler so that nothing escapes it: an exception becomes a 500 error body.
httplib::Server::Handler guarded(std::function<void(const httplib::Request&, httplib::Response&)> fn);

// A streaming slot: false (and a 429 answered) when max_streams are open. release_stream undoes it.
bool acquire_stream(ServerContext& ctx, httplib::Response& res);
void release_stream(ServerContext& ctx);

// "chatcmpl-" + 24 random hex digits.
std::string random_id(const std::string& prefix);

void register_openai_routes(httplib::Server& server, ServerContext& ctx);
void register_control_routes(httplib::Server& server, ServerContext& ctx);
void register_trace_routes(httplib::Server& server, ServerContext& ctx);

}  // namespace strata::serve
