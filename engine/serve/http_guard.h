// engine/serve/http_guard.h — the connection layer under the routes: an httplib::Server whose
// sockets are read through a deadline-aware stream (a whole request's headers, and its body, each
// have a time limit, not just each read; a request's head is read and checked under size limits,
// with strict framing, before httplib sees it), with caps per client address, a waiter thread for
// idle and half-sent connections, an elastic worker pool, and a body limit that holds for chunked
// uploads. Guards cpp-httplib 0.11 (Debian 12) from the front: its parser only ever sees a head
// this layer has accepted and rebuilt. Internal to engine/serve.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

namespace strata::serve {

struct ConnectionLimits {
  std::chrono::milliseconds header_timeout{10'000};  // first byte of a request -> end of its headers
  std::chrono::milliseconds body_timeout{60'000};    // end of headers -> end of its body
  std::chrono::milliseconds idle_timeout{5'000};     // keep-alive: wait for the next request
  int64_t max_per_client = 128;                      // open connections per client address (IPv6: /64)
  int64_t max_busy_per_client = 0;                   // its requests served at once; 0: max_threads * 3 / 4
  size_t max_body_bytes = size_t{8} << 20;           // decoded body (Content-Length or chunked)
  size_t max_threads = 512;                          // worker threads, started as connections need them
  size_t max_request_line = 8192;                    // bytes of "METHOD TARGET HTTP/1.1"
  size_t max_header_bytes = size_t{64} << 10;        // all header field lines of one request
  size_t max_headers = 100;                          // header fields of one request
};

// The verdict on a request's head, read and checked before httplib parses it. status 200: go on;
// 0: the peer left or the header deadline passed (close quietly); else answer it and close.
struct HeadCheck {
  int status = 200;
  std::string message;
  std::string code;
};

// What the routing layer knows about the connection a request came on. Set on the worker thread
// that serves the connection; current_connection() is that thread's, or null outside one.
struct ConnectionState {
  bool close_after = false;     // close once this response is written (framing no longer trusted)
  bool body_too_large = false;  // the body went past max_body_bytes
  bool body_timed_out = false;  // the body did not arrive within body_timeout
  bool bad_framing = false;     // the chunked body broke its framing
};
ConnectionState* current_connection();

// Marks the start of a request's body (called from the pre-routing handler): the body deadline
// starts; a request with neither Content-Length nor chunked encoding has an empty body.
void begin_body(bool has_length_or_chunked);
// The body has been read: no more deadline (handlers may run long).
void end_body();
// True when the client of the current connection has gone (closed its side, or the socket
// failed): a handler waiting for a result it would answer with can stop the work. False outside a
// connection's worker thread, and while the client may still read the answer.
bool client_gone();

// A worker pool that starts a thread for each job while none is idle, up to a maximum; beyond
// that, jobs wait. shutdown() runs what is queued, then joins.
class ElasticPool : public httplib::TaskQueue {
 public:
  explicit ElasticPool(size_t max_threads) : max_threads_(max_threads) {}
  ~ElasticPool() override { shutdown(); }
  void enqueue(std::function<void()> fn) override;
  void shutdown() override;

 private:
  void work();
  size_t max_threads_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stop_ = false;
};

// The server. A connection holds a worker thread only while one of its requests is being served
// (its head has arrived): one waiter thread polls every idle keep-alive connection and every
// connection whose request head is still coming in, under the idle and header deadlines, so slow
// and idle clients cost a socket and a buffer, never a thread. Connections are counted per client
// address (IPv6: per /64, what one host usually holds) against max_per_client, and requests of
// one client being served at once against max_busy_per_client, which keeps threads free for others.
class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(ConnectionLimits limits);
  ~GuardedServer() override;
  const ConnectionLimits& limits() const { return limits_; }
  // Ends every idle or half-read connection promptly (called on stop).
  void stop_connections() { stopping_ = true; }
  // Open connections now (for status and tests).
  int64_t open_connections() const { return open_.load(); }

 private:
  struct Conn;
  bool process_and_close_socket(socket_t sock) override;
  void waiter_loop();
  void park(std::shared_ptr<Conn> c);   // to the waiter, until its next request's head is in
  void serve(std::shared_ptr<Conn> c);  // on a worker: one request
  void finish(const std::shared_ptr<Conn>& c, bool gentle);  // close and forget

  ConnectionLimits limits_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> destroying_{false};
  std::atomic<int64_t> open_{0};
  std::mutex clients_mutex_;
  struct ClientCount {
    int64_t open = 0;  // connections
    int64_t busy = 0;  // requests being served (holding a worker)
  };
  std::map<std::string, ClientCount> per_client_;
  ElasticPool workers_;
  std::mutex park_mutex_;
  std::vector<std::shared_ptr<Conn>> parked_;  // handed to the waiter, not yet polled
  int wake_fd_ = -1;                           // eventfd: wakes the waiter for parked_ and stop
  std::thread waiter_;
};

}  // namespace strata::serve
