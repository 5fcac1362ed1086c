// engine/serve/server.h — the HTTP server of strata-engine serve: OpenAI routes, control API,
// trace stream and metrics over cpp-httplib. The only part of engine/ that speaks HTTP; its
// public header names no httplib type, so only strata_serve links the library.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/serve/engine_host.h"

namespace strata::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                       // 0: any free port (see bind())
  std::string api_key;                   // non-empty: every route needs "Authorization: Bearer KEY"
  size_t max_body_bytes = size_t{8} << 20;
  int64_t max_streams = 32;              // concurrent streaming completions
  int64_t max_trace_streams = 8;         // concurrent trace streams (a limit of their own)
  int threads = 0;                       // most HTTP worker threads (started as needed); 0: 512
  int64_t max_connections_per_client = 128;  // open connections per client address; more get 429
  int header_timeout_s = 10;             // a request's line and headers must arrive within this
  int body_timeout_s = 60;               // ... and its body within this after the headers
  // Origins ("https://app.example") whose pages may call the API from a browser (CORS); empty:
  // none. Without an API key, requests with another Origin are refused.
  std::vector<std::string> cors_origins;
  // Chat: special-token texts in user and tool contents become control tokens (as in a raw
  // prompt). Off: they are text, as OpenAI reads them; the template's own markers are tokens.
  bool parse_special = false;
  // The server's log (details clients are not told, such as why a model file cannot be opened).
  // Called on HTTP worker threads, one line without a newline; empty: not logged.
  std::function<void(const std::string&)> log;
};

// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(const std::string& host);

struct ServerContext;

// Thread rules: bind() then listen() on one thread (listen blocks); stop() from any thread
// (e.g. a signal-waiting thread) makes listen() return after open streams are closed.
// Handlers run on the HTTP worker threads; nothing here prints.
class Server {
 public:
  // InvalidArgument for a non-loopback host without an API key, or bad limits.
  static Expected<std::unique_ptr<Server>> create(EngineHost& host, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the listening socket; returns the port (the chosen one when options.port is 0).
  Expected<int> bind();
  // Serves until stop(). Io error when the socket fails.
  Status listen();
  void stop();

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::serve
