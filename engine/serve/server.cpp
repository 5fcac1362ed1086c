// engine/serve/server.cpp — server setup: socket, worker pool, API-key check, body limit, error
// bodies for statuses httplib answers itself, request counting; route files do the rest.
#include "engine/serve/server.h"

#include <chrono>
#include <thread>

#include <sys/socket.h>

#include <netinet/in.h>

#include <arpa/inet.h>

#include <exception>
#include <random>
#include <algorithm>
#include <cstring>
#include <cctype>
#include <map>

#include "engine/serve/http_guard.h"
#include "engine/serve/server_context.h"

namespace strata::serve {

void Metrics::count_request(const std::string& route, int status) {
  std::lock_guard<std::mutex> lock(mutex);
  ++requests[{route, status}];
}

void LatencyWindow::add(double ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (samples_.size() < kKeep) {
    samples_.push_back(ms);
  } else {
    samples_[next_] = ms;
    next_ = (next_ + 1) % kKeep;
  }
  ++count_;
  sum_ += ms;
}

std::vector<double> LatencyWindow::sorted(uint64_t* count, double* sum_ms) const {
  std::vector<double> out;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    out = samples_;
    if (count) *count = count_;
    if (sum_ms) *sum_ms = sum_;
  }
  std::sort(out.begin(), out.end());
  return out;
}

void send_json(httplib::Response& res, const Json& body, int status) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, Json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const ApiError& error) { send_json(res, error_body(error), error.status); }

httplib::Server::Handler guarded(std::function<void(const httplib::Request&, httplib::Response&)> fn) {
  return [fn = std::move(fn)](const httplib::Request& req, httplib::Response& res) {
    end_body();  // the body (if any) has been read: no read deadline while the handler runs
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

bool acquire_trace_stream(ServerContext& ctx, httplib::Response& res) {
  if (ctx.open_trace_streams.fetch_add(1) >= ctx.options.max_trace_streams) {
    ctx.open_trace_streams.fetch_sub(1);
    ApiError err;
    err.status = 429;
    err.type = "rate_limit_error";
    err.code = "too_many_trace_streams";
    err.message = "too many concurrent trace streams: the limit is " + std::to_string(ctx.options.max_trace_streams);
    send_error(res, err);
    return false;
  }
  return true;
}

void release_trace_stream(ServerContext& ctx) { ctx.open_trace_streams.fetch_sub(1); }

namespace {
// Reads the body through `reader` under the body limit, then runs fn with it in req.body.
void with_body(ServerContext& ctx, const httplib::Request& req, httplib::Response& res,
               const httplib::ContentReader& reader, const httplib::Server::Handler& fn) {
  const size_t max = ctx.options.max_body_bytes;
  std::string body;
  bool over = false;
  const bool ok = reader([&](const char* data, size_t n) {
    if (body.size() + n > max) {
      over = true;
      return false;
    }
    body.append(data, n);
    return true;
  });
  end_body();
  ConnectionState* conn = current_connection();
  if (over || !ok || (conn && conn->body_too_large)) {
    // The rest of the body is unread: this connection cannot carry another request.
    if (conn) conn->close_after = true;
    res.set_header("Connection", "close");
    if (over || (conn && conn->body_too_large)) return send_error(res, error_for_status(413, max));
    const bool late = conn && conn->body_timed_out;
    return send_error(res, bad_request(late ? "the request body did not arrive within " +
                                                  std::to_string(ctx.options.body_timeout_s) + " s"
                                            : conn && conn->bad_framing
                                                  ? "malformed chunked encoding (a chunk's data must end in CRLF)"
                                                  : "the request body could not be read (broken chunked encoding?)",
                                       "", "invalid_body"));
  }
  httplib::Request copy = req;
  copy.body = std::move(body);
  fn(copy, res);
}
}  // namespace

void post_route(httplib::Server& http, const std::string& pattern, ServerContext& ctx, httplib::Server::Handler fn) {
  http.Post(pattern, [&ctx, fn = std::move(fn)](const httplib::Request& req, httplib::Response& res,
                                                const httplib::ContentReader& reader) {
    with_body(ctx, req, res, reader, fn);
  });
}

void put_route(httplib::Server& http, const std::string& pattern, ServerContext& ctx, httplib::Server::Handler fn) {
  http.Put(pattern, [&ctx, fn = std::move(fn)](const httplib::Request& req, httplib::Response& res,
                                               const httplib::ContentReader& reader) {
    with_body(ctx, req, res, reader, fn);
  });
}

std::string random_id(const std::string& prefix) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* hex = "0123456789abcdef";
  std::string s = prefix;
  for (int i = 0; i < 24; ++i) s += hex[rng() & 15];
  return s;
}

ApiError model_file_error(const ServerContext& ctx, const std::string& path, const Error& e) {
  ApiError out = bad_request(e.message, "path", "invalid_model_file");
  if (e.code == Code::InvalidArgument) return out;
  if (ctx.options.log) ctx.options.log("cannot open model '" + path + "': " + e.message);
  out.message = "cannot open model '" + path + "' (the server's log says why)";
  return out;
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

// Every route and the methods it answers (a known route asked with another method is a 405).
const std::map<std::string, std::string>& route_methods() {
  static const std::map<std::string, std::string> routes = {
      {"/v1/models", "GET, HEAD"},
      {"/v1/models/{id}", "GET, HEAD"},
      {"/v1/chat/completions", "POST"},
      {"/v1/completions", "POST"},
      {"/metrics", "GET, HEAD"},
      {"/strata/v1/devices", "GET, HEAD"},
      {"/strata/v1/status", "GET, HEAD"},
      {"/strata/v1/model/load", "POST"},
      {"/strata/v1/model/unload", "POST"},
      {"/strata/v1/models/inspect", "POST"},
      {"/strata/v1/placement", "GET, HEAD, PUT"},
      {"/strata/v1/placement/estimate", "POST"},
      {"/strata/v1/plan", "POST"},
      {"/strata/v1/trace/stream", "GET, HEAD"},
      {"/strata/v1/trace.json", "GET, HEAD"}};
  return routes;
}

// The route a path belongs to ("other" when none).
std::string route_of(const std::string& path) {
  if (route_methods().count(path)) return path;
  if (path.rfind("/v1/models/", 0) == 0 && path.size() > 11) return "/v1/models/{id}";
  return "other";
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The token of "Authorization: Bearer TOKEN"; the scheme is case-insensitive (RFC 7235).
std::string bearer_token(const std::string& header) {
  size_t i = 0;
  while (i < header.size() && header[i] == ' ') ++i;
  const size_t scheme_end = header.find(' ', i);
  if (scheme_end == std::string::npos || lower(header.substr(i, scheme_end - i)) != "bearer") return "";
  size_t b = scheme_end;
  while (b < header.size() && header[b] == ' ') ++b;
  size_t e = header.size();
  while (e > b && (header[e - 1] == ' ' || header[e - 1] == '\t')) --e;
  return header.substr(b, e - b);
}

// The host name of a Host header value ("[::1]:8080" -> "::1", "localhost:80" -> "localhost").
std::string host_name_of(const std::string& value) {
  if (!value.empty() && value[0] == '[') {
    const size_t end = value.find(']');
    return end == std::string::npos ? value : value.substr(1, end - 1);
  }
  const size_t colon = value.find(':');
  return colon == std::string::npos ? value : value.substr(0, colon);
}

// Without an API key, a browser page of any site could reach the server: by a DNS name that
// resolves to 127.0.0.1 (rebinding), so the Host must name the bound address or localhost.
bool host_allowed(const std::string& value, const std::string& bound) {
  const std::string name = lower(host_name_of(value));
  return name == "localhost" || is_loopback_host(name) || name == lower(bound);
}

// Same-origin pages of the server itself (http://localhost:PORT, http://127.0.0.1:PORT).
bool loopback_origin(const std::string& origin) {
  const std::string o = lower(origin);
  for (const char* scheme : {"http://", "https://"}) {
    if (o.rfind(scheme, 0) == 0) {
      const std::string rest = o.substr(std::strlen(scheme));
      if (rest.find('/') != std::string::npos) return false;
      const std::string name = host_name_of(rest);
      return name == "localhost" || is_loopback_host(name);
    }
  }
  return false;
}

bool is_json_media_type(const std::string& content_type) {
  std::string t = lower(content_type.substr(0, content_type.find(';')));
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.pop_back();
  size_t b = 0;
  while (b < t.size() && t[b] == ' ') ++b;
  return t.substr(b) == "application/json";
}
}  // namespace

namespace {
ConnectionLimits limits_from(const ServerOptions& o) {
  ConnectionLimits l;
  l.header_timeout = std::chrono::seconds(o.header_timeout_s);
  l.body_timeout = std::chrono::seconds(o.body_timeout_s);
  l.max_per_client = o.max_connections_per_client;
  l.max_body_bytes = o.max_body_bytes;
  l.max_threads = o.threads > 0 ? static_cast<size_t>(o.threads) : 512;
  return l;
}
}  // namespace

struct Server::Impl {
  ServerContext ctx;
  GuardedServer http;
  bool bound = false;
  Impl(EngineHost& host, ServerOptions o) : ctx(host, std::move(o)), http(limits_from(ctx.options)) {}
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
  if (o.max_trace_streams < 1 || o.max_trace_streams > 4096)
    return Error{Code::InvalidArgument, "trace stream limit " + std::to_string(o.max_trace_streams) + " outside [1, 4096]"};
  if (o.max_connections_per_client < 1 || o.max_connections_per_client > 65536)
    return Error{Code::InvalidArgument, "connection limit per client " + std::to_string(o.max_connections_per_client) +
                                            " outside [1, 65536]"};
  if (o.header_timeout_s < 1 || o.header_timeout_s > 3600 || o.body_timeout_s < 1 || o.body_timeout_s > 3600)
    return Error{Code::InvalidArgument, "header and body timeouts must be within [1, 3600] s"};
  auto impl = std::make_unique<Impl>(host, std::move(o));
  ServerContext& ctx = impl->ctx;
  httplib::Server& http = impl->http;

  const size_t threads = ctx.options.threads > 0 ? static_cast<size_t>(ctx.options.threads) : 512;
  // Threads start as connections need them (up to `threads`): idle keep-alive connections and
  // slow clients cannot take the workers that control and status requests need.
  http.new_task_queue = [threads] { return new ElasticPool(threads); };
  http.set_payload_max_length(ctx.options.max_body_bytes);
  http.set_keep_alive_timeout(5);
  http.set_read_timeout(30);
  http.set_write_timeout(10);

  // Before any body is read: framing checks (a Content-Length past the limit is answered at once,
  // without reading), then the API key.
  const std::string key = ctx.options.api_key;
  const size_t max_body = ctx.options.max_body_bytes;
  const std::string bound_host = ctx.options.host;
  const std::vector<std::string> cors = ctx.options.cors_origins;
  http.set_pre_routing_handler([key, max_body, bound_host, cors](const httplib::Request& req, httplib::Response& res) {
    const bool chunked = lower(req.get_header_value("Transfer-Encoding")).find("chunked") != std::string::npos;
    const bool has_length = req.has_header("Content-Length");
    begin_body(has_length || chunked);
    if (!has_length && !chunked && (req.method == "POST" || req.method == "PUT" || req.method == "PATCH")) {
      // Read as an empty body at once (not until a 30 s timeout); what follows on the connection
      // cannot be trusted to be the next request, so it closes after the answer.
      if (ConnectionState* c = current_connection()) c->close_after = true;
      res.set_header("Connection", "close");
    }
    auto refuse = [&](const ApiError& e) {
      // The body stays unread: the connection closes after this answer.
      if (ConnectionState* c = current_connection()) c->close_after = true;
      res.set_header("Connection", "close");
      send_error(res, e);
      return httplib::Server::HandlerResponse::Handled;
    };
    auto forbidden = [](std::string message, std::string code) {
      ApiError e = bad_request(std::move(message), "", std::move(code));
      e.status = 403;
      return e;
    };
    // CORS (off unless --cors names origins): an allowed Origin gets the headers that let its
    // page read the answer; a preflight (OPTIONS) is answered here, before the key check, since
    // browsers send it without credentials.
    const std::string origin = req.get_header_value("Origin");
    const bool cors_allowed = !origin.empty() && std::find(cors.begin(), cors.end(), origin) != cors.end();
    if (cors_allowed) {
      res.set_header("Access-Control-Allow-Origin", origin);
      res.set_header("Vary", "Origin");
    }
    if (req.method == "OPTIONS") {
      const std::string route = route_of(req.path);
      if (!cors_allowed || route == "other" || !req.has_header("Access-Control-Request-Method")) {
        return refuse(forbidden(origin.empty() || cors_allowed ? "not a CORS preflight of a known route"
                                                               : "origin '" + origin + "' is not allowed (--cors)",
                                "cors_not_allowed"));
      }
      res.status = 204;
      res.set_header("Access-Control-Allow-Methods", route_methods().at(route));
      res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
      res.set_header("Access-Control-Max-Age", "600");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (has_length) {
      const std::string v = req.get_header_value("Content-Length");
      const bool digits = !v.empty() && v.size() <= 19 &&
                          std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (!digits) return refuse(bad_request("malformed Content-Length '" + v + "'", "", "invalid_body"));
      if (std::stoull(v) > max_body) return refuse(error_for_status(413, max_body));
    }
    if (lower(req.get_header_value("Content-Type")).rfind("multipart/", 0) == 0) {
      ApiError e = bad_request("multipart bodies are not accepted: send JSON", "", "unsupported_media_type");
      e.status = 415;
      return refuse(e);
    }
    if (key.empty()) {
      // No key: any web page the user visits could send requests here. Refuse what a browser
      // sends without asking the server first: other hosts (DNS rebinding), other origins, and
      // bodies that are not JSON (forms and text/plain need no CORS preflight; JSON does).
      if (req.has_header("Host") && !host_allowed(req.get_header_value("Host"), bound_host))
        return refuse(forbidden("Host '" + req.get_header_value("Host") + "' is not this server: without --api-key only "
                                "localhost and the bound address are answered",
                                "invalid_host"));
      if (!origin.empty() && !cors_allowed && !loopback_origin(origin))
        return refuse(forbidden("origin '" + origin + "' is not allowed: without --api-key only pages of this server "
                                "or --cors origins may call it",
                                "cors_not_allowed"));
      if ((req.method == "POST" || req.method == "PUT" || req.method == "PATCH" || req.method == "DELETE") &&
          !is_json_media_type(req.get_header_value("Content-Type"))) {
        ApiError e = bad_request("send the body as Content-Type: application/json (got '" +
                                     req.get_header_value("Content-Type") + "')",
                                 "", "unsupported_media_type");
        e.status = 415;
        return refuse(e);
      }
    }
    if (key.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const std::string given = req.get_header_value("Authorization");
    if (same_secret(bearer_token(given), key)) return httplib::Server::HandlerResponse::Unhandled;
    ApiError err;
    err.status = 401;
    err.type = "authentication_error";
    err.code = "invalid_api_key";
    err.message = given.empty() ? "missing API key: send 'Authorization: Bearer <key>'" : "wrong API key";
    if (has_length || chunked) return refuse(err);
    send_error(res, err);
    return httplib::Server::HandlerResponse::Handled;
  });
  // Statuses httplib answers by itself (unknown route, wrong method, body too large) get an error body too.
  http.set_error_handler([max_body](const httplib::Request& req, httplib::Response& res) {
    ConnectionState* conn = current_connection();
    if (conn && conn->body_too_large && res.status != 413) {
      res.status = 413;
      res.body.clear();
    }
    if (res.status == 404 && res.body.empty()) {
      const std::string route = route_of(req.path);
      if (route != "other") {
        res.status = 405;
        res.set_header("Allow", route_methods().at(route));
      }
    }
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
    metrics->count_request(route_of(req.path), res.status);
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
  if (!impl_->ctx.stopping.exchange(true)) {
    impl_->http.stop_connections();   // idle and half-read connections end now
    impl_->ctx.host.begin_shutdown(); // streams end with an error event and [DONE]; loads are abandoned
    // httplib stops calling content providers once its listening socket is closed, so the open
    // completion streams get a bounded moment (6 s, under the 10 s a supervisor waits) to write their error event and [DONE] first.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(6);
    while (impl_->ctx.open_streams.load() > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  impl_->http.stop();
}

}  // namespace strata::serve
