// engine/serve/http_guard.cpp — deadline-aware socket stream, per-client connection cap, the
// keep-alive loop and the elastic worker pool under httplib's request processing.
#include "engine/serve/http_guard.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace strata::serve {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kSlice = std::chrono::milliseconds(50);  // how often a wait looks at the stop flag

// A connection's socket, read through a buffer with a deadline for the request being read.
// Used by the one worker thread that serves the connection.
class GuardStream final : public httplib::Stream {
 public:
  enum class Phase { Idle, Headers, Body, Handler };

  GuardStream(int fd, std::string ip, int port, const ConnectionLimits& limits, const std::atomic<bool>& stopping)
      : fd_(fd), ip_(std::move(ip)), port_(port), limits_(limits), stopping_(stopping) {
    raw_body_cap_ = limits.max_body_bytes * 2 + (size_t{64} << 10);  // room for chunk framing
  }

  ConnectionState state;

  // Waits for the first byte of the next request (or data already buffered). False on timeout,
  // stop, or a socket error.
  bool wait_request() {
    phase_ = Phase::Idle;
    if (pos_ < len_) return start_headers();
    const auto deadline = Clock::now() + limits_.idle_timeout;
    while (!stopping_.load()) {
      const int r = poll_in(std::min<Clock::duration>(kSlice, deadline - Clock::now()));
      if (r < 0) return false;
      if (r > 0) return start_headers();
      if (Clock::now() >= deadline) return false;
    }
    return false;
  }

  void begin_body(bool framed) {
    phase_ = Phase::Body;
    deadline_ = Clock::now() + limits_.body_timeout;
    empty_body_ = !framed;
    body_bytes_ = 0;
  }
  void end_body() { phase_ = Phase::Handler; }

  bool is_readable() const override {
    if (pos_ < len_) return true;
    return const_cast<GuardStream*>(this)->wait_readable();
  }
  bool is_writable() const override {
    pollfd p{fd_, POLLOUT, 0};
    if (::poll(&p, 1, 10'000) <= 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL))) return false;
    // Alive unless the peer has closed its side (readable with nothing to read).
    pollfd q{fd_, POLLIN, 0};
    if (::poll(&q, 1, 0) > 0) {
      char c;
      if (::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0) return false;
    }
    return true;
  }

  ssize_t read(char* ptr, size_t size) override {
    if (pos_ >= len_) {
      if (phase_ == Phase::Body && empty_body_) return 0;  // no Content-Length, not chunked: no body
      if (!wait_readable()) return -1;
      ssize_t n;
      do {
        n = ::recv(fd_, buf_, sizeof buf_, 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      pos_ = 0;
      len_ = static_cast<size_t>(n);
    }
    const size_t n = std::min(size, len_ - pos_);
    std::memcpy(ptr, buf_ + pos_, n);
    pos_ += n;
    if (phase_ == Phase::Body) {
      body_bytes_ += n;
      if (body_bytes_ > raw_body_cap_) {
        state.body_too_large = true;
        state.close_after = true;
        return -1;
      }
    }
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do {
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = ip_;
    port = port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    ip.clear();
    port = 0;
    if (getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (addr.ss_family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(&addr);
      inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
      port = ntohs(a->sin_port);
    } else if (addr.ss_family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
      inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
      port = ntohs(a->sin6_port);
    }
    ip = text;
  }
  socket_t socket() const override { return fd_; }

 private:
  bool start_headers() {
    phase_ = Phase::Headers;
    deadline_ = Clock::now() + limits_.header_timeout;
    return true;
  }
  // 1: readable, 0: not within `wait`, -1: error.
  int poll_in(Clock::duration wait) {
    const auto ms = std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(wait).count());
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(ms));
    if (r < 0) return errno == EINTR ? 0 : -1;
    if (r > 0 && (p.revents & POLLNVAL)) return -1;
    return r > 0 ? 1 : 0;
  }
  // Readable before the current deadline (headers or body), and the server not stopping.
  bool wait_readable() {
    while (!stopping_.load()) {
      const bool timed = phase_ == Phase::Headers || phase_ == Phase::Body;
      const auto left = timed ? deadline_ - Clock::now() : Clock::duration(kSlice);
      if (left <= Clock::duration::zero()) {
        if (phase_ == Phase::Body) state.body_timed_out = true;
        state.close_after = true;
        return false;
      }
      const int r = poll_in(std::min<Clock::duration>(kSlice, left));
      if (r < 0) return false;
      if (r > 0) return true;
    }
    state.close_after = true;
    return false;
  }

  int fd_;
  std::string ip_;
  int port_;
  const ConnectionLimits& limits_;
  const std::atomic<bool>& stopping_;
  Phase phase_ = Phase::Idle;
  Clock::time_point deadline_{};
  bool empty_body_ = false;
  size_t body_bytes_ = 0;
  size_t raw_body_cap_ = 0;
  char buf_[4096];
  size_t pos_ = 0, len_ = 0;
};

thread_local GuardStream* t_stream = nullptr;

std::string peer_address(int fd, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  port = 0;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    port = ntohs(a->sin6_port);
  }
  return text;
}

void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace

ConnectionState* current_connection() { return t_stream ? &t_stream->state : nullptr; }
void begin_body(bool framed) {
  if (t_stream) t_stream->begin_body(framed);
}
void end_body() {
  if (t_stream) t_stream->end_body();
}

void ElasticPool::enqueue(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mutex_);
  jobs_.push_back(std::move(fn));
  if (jobs_.size() > idle_ && threads_.size() < max_threads_) {
    threads_.emplace_back([this] { work(); });
  } else {
    cv_.notify_one();
  }
}

void ElasticPool::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void ElasticPool::work() {
  while (true) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ++idle_;
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty()) return;  // stopping, nothing left
      fn = std::move(jobs_.front());
      jobs_.pop_front();
    }
    fn();
  }
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  int port = 0;
  const std::string ip = peer_address(sock, port);
  ++open_;
  bool admitted = true;
  {
    std::lock_guard<std::mutex> lock(clients_mutex_);
    if (++per_client_[ip] > limits_.max_per_client) admitted = false;
  }
  bool ret = false;
  if (!admitted) {
    const std::string body = "{\"error\":{\"message\":\"too many connections from " + ip + ": the limit is " +
                             std::to_string(limits_.max_per_client) +
                             "\",\"type\":\"rate_limit_error\",\"param\":null,\"code\":\"too_many_connections\"}}";
    write_all(sock, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nConnection: close\r\n"
                    "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  } else {
    GuardStream strm(sock, ip, port, limits_, stopping_);
    t_stream = &strm;
    size_t count = keep_alive_max_count_;
    while (svr_sock_ != INVALID_SOCKET && !stopping_.load() && count > 0 && strm.wait_request()) {
      bool connection_closed = false;
      strm.state = ConnectionState{};
      ret = process_request(strm, count == 1, connection_closed, nullptr);
      if (!ret || connection_closed || strm.state.close_after) break;
      --count;
    }
    t_stream = nullptr;
    if (strm.state.close_after) {
      // A body was left unread: close gently, so the client reads our answer instead of a reset.
      ::shutdown(sock, SHUT_WR);
      char sink[4096];
      size_t drained = 0;
      const auto until = Clock::now() + std::chrono::milliseconds(500);
      while (drained < (size_t{4} << 20) && Clock::now() < until) {
        pollfd p{sock, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        const ssize_t n = ::recv(sock, sink, sizeof sink, MSG_DONTWAIT);
        if (n <= 0) break;
        drained += static_cast<size_t>(n);
      }
    }
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  {
    std::lock_guard<std::mutex> lock(clients_mutex_);
    if (--per_client_[ip] <= 0) per_client_.erase(ip);
  }
  --open_;
  return ret;
}

}  // namespace strata::serve
