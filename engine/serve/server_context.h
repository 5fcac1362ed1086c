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
#include <vector>

#include <httplib.h>

#include "engine/serve/api_json.h"
#include "engine/serve/engine_host.h"
#include "engine/serve/server.h"

namespace strata::serve {

// The last samples of a latency (ms), for percentiles in /metrics; any thread.
class LatencyWindow {
 public:
  void add(double ms);
  // Sorted copy of the kept samples; total count and sum since start.
  std::vector<double> sorted(uint64_t* count, double* sum_ms) const;

 private:
  static constexpr size_t kKeep = 4096;
  mutable std::mutex mutex_;
  std::vector<double> samples_;
  size_t next_ = 0;
  uint64_t count_ = 0;
  double sum_ = 0;
};

// Counters of /metrics. Shared (shared_ptr) with generation callbacks, which may outlive a
// request; every member is safe to touch from any thread.
struct Metrics {
  std::atomic<uint64_t> tokens_generated{0};
  std::atomic<uint64_t> prompt_tokens{0};
  std::atomic<int64_t> requests_active{0};    // completion requests being served (waiting or generating)
  std::mutex mutex;
  std::map<std::pair<std::string, int>, uint64_t> requests;  // (route, status) -> count
  LatencyWindow ttft_ms;   // submit -> first generated token
  LatencyWindow itl_ms;    // between consecutive generated tokens of one sequence

  void count_request(const std::string& route, int status);
};

struct ServerContext {
  EngineHost& host;
  ServerOptions options;
  std::shared_ptr<Metrics> metrics = std::make_shared<Metrics>();
  std::atomic<int64_t> open_streams{0};  // streaming completions in flight
  std::atomic<int64_t> open_trace_streams{0};
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
// The same for trace streams, which have their own limit (max_trace_streams).
bool acquire_trace_stream(ServerContext& ctx, httplib::Response& res);
void release_trace_stream(ServerContext& ctx);

// Registers a POST / PUT route whose body is read here, under the body limit (Content-Length or
// chunked alike): too large is a 413, a broken or late body a 400, and either closes the connection.
void post_route(httplib::Server& http, const std::string& pattern, ServerContext& ctx, httplib::Server::Handler fn);
void put_route(httplib::Server& http, const std::string& pattern, ServerContext& ctx, httplib::Server::Handler fn);

// "chatcmpl-" + 24 random hex digits.
std::string random_id(const std::string& prefix);

// A model path the server could not open, as clients see it: 400 invalid_model_file, param path,
// "cannot open model 'PATH'", whatever the reason (the reason goes to the server's log). Errors
// about the path itself (InvalidArgument: NUL, outside the model folders) keep their message.
ApiError model_file_error(const ServerContext& ctx, const std::string& path, const Error& e);

void register_openai_routes(httplib::Server& server, ServerContext& ctx);
void register_control_routes(httplib::Server& server, ServerContext& ctx);
void register_trace_routes(httplib::Server& server, ServerContext& ctx);

}  // namespace strata::serve
