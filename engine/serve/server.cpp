// engine/serve/server.cpp — server setup: socket, worker pool, API-key check, body limit, error
// bodies for statuses httplib answers itself, request counting; route files do the rest.
#include "engine/serve/server.h"

#include <sys/socket.h>

#include <netinet/in.h>

#include <arpa/inet.h>

#include <exception>
#include <random>
#include <set>

#include "engine/serve/server_context.h"

namespace strata::serve {

void Metrics::count_request(const std::string& route, int status) {
  std::lock_guard<std::mutex> lock(mutex);
  ++requests[{route, status}];
}

void send_json(httplib::Response& res, const Json& body, int status) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, Json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const ApiError& error) { send_json(res, error_body(error), error.status); }

httplib::Server::Handler guarded(std::function<void(const httplib::Request&, httplib::Response&)> fn) {
  return [fn = std::move(fn)](const httplib::Request& req, httplib::Response& res) {
    try {
      fn(req, res);
    } catch (const std::exception& e) {
      ApiError err;
      err.status = 500;
      err.type = "server_error";
      err.message = std::string("internal error: ") + e.what();
      send_error(res, err);
    } catch (...) {
      ApiError err;
      err.status = 500;
      err.type = "server_error";
      err.message = "internal error";
      send_error(res, err);
    }
  };
}

bool acquire_stream(ServerContext& ctx, httplib::Response& res) {
  if (ctx.open_streams.fetch_add(1) >= ctx.options.max_streams) {
    ctx.open_streams.fetch_sub(1);
    ApiError err;
    err.status = 429;
    err.type = "rate_limit_error";
    err.code = "too_many_streams";
    err.message = "too many concurrent streams: the limit is " + std::to_string(ctx.options.max_streams);
    send_error(res, err);
    return false;
  }
  return true;
}

void release_stream(ServerContext& ctx) { ctx.open_streams.fetch_sub(1); }

std::string random_id(const std::string& prefix) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* hex = "0123456789abcdef";
  std::string s = prefix;
  for (int i = 0; i < 24; ++i) s += hex[rng() & 15];
  return s;
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr addr{};
  if (inet_pton(AF_INET, host.c_str(), &addr) == 1) return (ntohl(addr.s_addr) >> 24) == 127;
  return false;
}

namespace {
// Constant-time comparison: the key check does not leak how much of a guess was right.
bool same_secret(const std::string& given, const std::string& expected) {
  if (given.size() != expected.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < given.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ expected[i]);
  return diff == 0;
}

const std::set<std::string>& known_routes() {
  static const std::set<std::string> routes = {
      "/v1/models", "/v1/chat/completions", "/v1/completions", "/metrics", "/strata/v1/devices",
      "/strata/v1/status", "/strata/v1/model/load", "/strata/v1/model/unload", "/strata/v1/placement",
      "/strata/v1/placement/estimate", "/strata/v1/plan", "/strata/v1/trace/stream", "/strata/v1/trace.json"};
  return routes;
}
}  // namespace

struct Server::Impl {
  ServerContext ctx;
  httplib::Server http;
  bool bound = false;
  Impl(EngineHost& host, ServerOptions o) : ctx(host, std::move(o)) {}
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { stop(); }

Expected<std::unique_ptr<Server>> Server::create(EngineHost& host, ServerOptions o) {
  if (!is_loopback_host(o.host) && o.api_key.empty())
    return Error{Code::InvalidArgument, "refusing to listen on non-loopback address " + o.host +
                                            " without --api-key: anyone on the network could use the engine"};
  if (o.max_body_bytes < 1024 || o.max_body_bytes > (size_t{1} << 30))
    return Error{Code::InvalidArgument, "body limit " + std::to_string(o.max_body_bytes) + " outside [1024, 1 GiB]"};
  if (o.max_streams < 1 || o.max_streams > 4096)
    return Error{Code::InvalidArgument, "stream limit " + std::to_string(o.max_streams) + " outside [1, 4096]"};
  if (o.port < 0 || o.port > 65535) return Error{Code::InvalidArgument, "port " + std::to_string(o.port) + " outside [0, 65535]"};
  auto impl = std::make_unique<Impl>(host, std::move(o));
  ServerContext& ctx = impl->ctx;
  httplib::Server& http = impl->http;

  const size_t threads = ctx.options.threads > 0 ? static_cast<size_t>(ctx.options.threads)
                                                 : static_cast<size_t>(ctx.options.max_streams + 16);
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_payload_max_length(ctx.options.max_body_bytes);
  http.set_keep_alive_timeout(5);
  http.set_read_timeout(30);
  http.set_write_timeout(10);

  // API key: every route, before the body is read.
  const std::string expected = "Bearer " + ctx.options.api_key;
  const bool need_key = !ctx.options.api_key.empty();
  http.set_pre_routing_handler([need_key, expected](const httplib::Request& req, httplib::Response& res) {
    if (!need_key) return httplib::Server::HandlerResponse::Unhandled;
    const std::string given = req.get_header_value("Authorization");
    if (same_secret(given, expected)) return httplib::Server::HandlerResponse::Unhandled;
    ApiError err;
    err.status = 401;
    err.type = "authentication_error";
    err.code = "invalid_api_key";
    err.message = given.empty() ? "missing API key: send 'Authorization: Bearer <key>'" : "wrong API key";
    send_error(res, err);
    return httplib::Server::HandlerResponse::Handled;
  });
  // Statuses httplib answers by itself (unknown route, body too large) get an error body too.
  const size_t max_body = ctx.options.max_body_bytes;
  http.set_error_handler([max_body](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty() && res.status >= 400) send_error(res, error_for_status(res.status, max_body));
  });
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    ApiError err;
    err.status = 500;
    err.type = "server_error";
    err.message = "internal error";
    send_error(res, err);
  });
  std::shared_ptr<Metrics> metrics = ctx.metrics;
  // Counted in the post-routing handler, which httplib runs with the final status just before it
  // writes the response: a client that has read its reply and then asks /metrics finds it counted.
  // (The logger runs after the write, so that read raced the count.)
  http.set_post_routing_handler([metrics](const httplib::Request& req, httplib::Response& res) {
    const std::string route = known_routes().count(req.path) ? req.path : "other";
    metrics->count_request(route, res.status);
  });

  register_openai_routes(http, ctx);
  register_control_routes(http, ctx);
  register_trace_routes(http, ctx);
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

namespace {

// cpp-httplib (Debian's compiled libcpp-httplib 0.11) listens with a backlog of 5, fixed when the
// library was built. Twenty clients connecting at once then overflow the accept queue and some
// see their connection dropped. Linux lets listen() be called again on a listening socket to
// change its backlog, so find our socket by its bound port and raise it.
void raise_listen_backlog(int port) {
  for (int fd = 3; fd < 4096; ++fd) {
    int accepting = 0;
    socklen_t len = sizeof accepting;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) != 0 || !accepting) continue;
    sockaddr_storage addr{};
    socklen_t alen = sizeof addr;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &alen) != 0) continue;
    int bound = -1;
    if (addr.ss_family == AF_INET) bound = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    if (addr.ss_family == AF_INET6) bound = ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
    if (bound == port) ::listen(fd, SOMAXCONN);
  }
}

}  // namespace

Expected<int> Server::bind() {
  const ServerOptions& o = impl_->ctx.options;
  int port = o.port;
  if (port == 0) {
    port = impl_->http.bind_to_any_port(o.host);
    if (port <= 0) return Error{Code::Io, "cannot bind to " + o.host + " (any port)"};
  } else if (!impl_->http.bind_to_port(o.host, port)) {
    return Error{Code::Io, "cannot bind to " + o.host + ":" + std::to_string(port) + " (in use, or not an address here)"};
  }
  raise_listen_backlog(port);
  impl_->bound = true;
  return port;
}

Status Server::listen() {
  if (!impl_->bound) STRATA_RETURN_IF_ERROR(bind());
  if (!impl_->http.listen_after_bind() && !impl_->ctx.stopping.load())
    return Error{Code::Io, "the listening socket failed"};
  return {};
}

void Server::stop() {
  impl_->ctx.stopping = true;
  impl_->http.stop();
}

}  // namespace strata::serve
