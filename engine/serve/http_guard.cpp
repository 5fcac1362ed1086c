// engine/serve/http_guard.cpp — under httplib's request processing: the head check and chunked
// framing check, the deadline-aware socket stream, per-client caps, the waiter thread that holds
// idle and half-sent connections, and the elastic worker pool.
#include "engine/serve/http_guard.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

namespace strata::serve {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kSlice = std::chrono::milliseconds(50);  // how often a wait looks at the stop flag

// Checks a chunked body byte by byte as httplib reads it (RFC 9112 7.1): hex sizes, optional
// extensions, CRLF after the size line and after each chunk's data, the last chunk and an empty
// trailer section. httplib 0.11 ends a body at a chunk whose data is not followed by CRLF and then
// reads the rest as the next request (request smuggling); here such a body is an error and the
// connection closes. Trailer fields are refused (nothing here reads them).
class ChunkedFraming {
 public:
  enum class Result { More, Done, Bad };
  // Feeds one byte of the body.
  Result feed(char c) {
    switch (state_) {
      case State::SizeFirst:
      case State::Size: {
        const int v = hex(c);
        if (v >= 0) {
          if (++digits_ > 15) return bad();  // past 2^60 bytes: not a real chunk
          size_ = size_ * 16 + static_cast<uint64_t>(v);
          state_ = State::Size;
          return Result::More;
        }
        if (state_ == State::SizeFirst) return bad();
        if (c == ';') return state_ = State::Extension, Result::More;
        if (c == '\r') return state_ = State::SizeLf, Result::More;
        return bad();
      }
      case State::Extension:
        if (c == '\r') return state_ = State::SizeLf, Result::More;
        if (c == '\n' || c == '\0') return bad();
        return Result::More;
      case State::SizeLf:
        if (c != '\n') return bad();
        if (size_ == 0) return state_ = State::TrailerCr, Result::More;
        state_ = State::Data;
        return Result::More;
      case State::Data:
        if (--size_ == 0) state_ = State::DataCr;
        return Result::More;
      case State::DataCr:
        return c == '\r' ? (state_ = State::DataLf, Result::More) : bad();
      case State::DataLf:
        if (c != '\n') return bad();
        state_ = State::SizeFirst;
        digits_ = 0;
        return Result::More;
      case State::TrailerCr:
        return c == '\r' ? (state_ = State::TrailerLf, Result::More) : bad();
      case State::TrailerLf:
        if (c != '\n') return bad();
        state_ = State::Done;
        return Result::Done;
      case State::Done:
      case State::Bad:
        return bad();
    }
    return bad();
  }
  bool done() const { return state_ == State::Done; }

 private:
  enum class State { SizeFirst, Size, Extension, SizeLf, Data, DataCr, DataLf, TrailerCr, TrailerLf, Done, Bad };
  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  Result bad() {
    state_ = State::Bad;
    return Result::Bad;
  }
  State state_ = State::SizeFirst;
  uint64_t size_ = 0;
  int digits_ = 0;
};

bool is_token_char(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != '\0';
}

std::string lower_ascii(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim_ows(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return s.substr(b, e - b);
}

// A connection's socket, read through a buffer with a deadline for the request being read.
// Before httplib parses a request, read_head() reads its whole head (request line and header
// fields) under the limits, checks the framing headers, and hands httplib a rebuilt copy of the
// head it has accepted. Used by the one worker thread that serves the connection.
class GuardStream final : public httplib::Stream {
 public:
  enum class Phase { Idle, Headers, Body, Handler };

  GuardStream(int fd, std::string ip, int port, const ConnectionLimits& limits, const std::atomic<bool>& stopping)
      : fd_(fd), ip_(std::move(ip)), port_(port), limits_(limits), stopping_(stopping) {
    raw_body_cap_ = limits.max_body_bytes * 2 + (size_t{64} << 10);  // room for chunk framing
  }

  ConnectionState state;

  // The bytes the waiter read (the start of a request), and the deadline of its head.
  void adopt(std::string bytes) {
    in_ = std::move(bytes);
    pos_ = 0;
    start_headers();
  }
  // What was read past the request just served (a pipelined next request), for the waiter.
  std::string take_rest() {
    std::string rest = in_.substr(pos_);
    in_.clear();
    pos_ = 0;
    return rest;
  }

  // Reads and checks the head of the request adopt() began. Ok: httplib may parse
  // it (the buffer now starts with the rebuilt head). Otherwise the status to answer with and
  // why; status 0: the peer went away or the header deadline passed (close without an answer).
  HeadCheck read_head() {
    head_left_ = 0;
    chunked_ = false;
    content_length_ = 0;
    body_read_ = 0;
    framing_ = ChunkedFraming{};
    // Skip the empty lines a client may send between requests (RFC 9112 2.2).
    size_t line_start = pos_;
    std::vector<std::string> lines;
    size_t header_bytes = 0;
    while (true) {
      const size_t nl = in_.find('\n', line_start);
      if (nl == std::string::npos) {
        const size_t partial = in_.size() - line_start;
        if (lines.empty() && partial > limits_.max_request_line)
          return HeadCheck{414, "the request line is longer than " + std::to_string(limits_.max_request_line) + " bytes",
                           "request_line_too_long"};
        if (!lines.empty() && header_bytes + partial > limits_.max_header_bytes) return too_many_header_bytes();
        if (!fill()) return HeadCheck{0, "", ""};
        continue;
      }
      std::string line = in_.substr(line_start, nl - line_start);
      line_start = nl + 1;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (lines.empty()) {
        if (line.empty()) continue;  // a blank line before the request line
        if (line.size() > limits_.max_request_line)
          return HeadCheck{414, "the request line is longer than " + std::to_string(limits_.max_request_line) + " bytes",
                           "request_line_too_long"};
      } else {
        header_bytes += line.size() + 2;
        if (header_bytes > limits_.max_header_bytes) return too_many_header_bytes();
      }
      if (line.find('\r') != std::string::npos || line.find('\0') != std::string::npos)
        return HeadCheck{400, "a bare CR or a NUL byte in the request head", "invalid_request_head"};
      if (line.empty()) break;  // end of the head
      if (!lines.empty() && lines.size() - 1 >= limits_.max_headers)  // lines[0] is the request line
        return HeadCheck{431, "more than " + std::to_string(limits_.max_headers) + " header fields",
                         "too_many_headers"};
      lines.push_back(std::move(line));
    }
    const size_t body_start = line_start;

    // The header fields: names are tokens with the colon right after them (no space before it,
    // no folded continuation lines); the framing ones are checked here, before httplib.
    std::vector<std::string> forward;
    forward.push_back(lines[0]);
    std::vector<std::string> lengths;
    int transfer_encodings = 0;
    std::string transfer_encoding;
    for (size_t i = 1; i < lines.size(); ++i) {
      const std::string& l = lines[i];
      const size_t colon = l.find(':');
      if (colon == std::string::npos || colon == 0 ||
          !std::all_of(l.begin(), l.begin() + static_cast<std::ptrdiff_t>(colon), is_token_char))
        return HeadCheck{400, "malformed header field (a name, then ':' right after it)", "invalid_request_head"};
      const std::string name = lower_ascii(l.substr(0, colon));
      const std::string value = trim_ows(l.substr(colon + 1));
      if (name == "content-length") {
        // "5, 5" is one length said twice (RFC 9110 8.6); any other list is two lengths.
        size_t p = 0;
        while (p <= value.size()) {
          size_t q = value.find(',', p);
          if (q == std::string::npos) q = value.size();
          lengths.push_back(trim_ows(value.substr(p, q - p)));
          p = q + 1;
        }
        continue;  // forwarded once below
      }
      if (name == "transfer-encoding") {
        ++transfer_encodings;
        transfer_encoding = lower_ascii(value);
      }
      if (name == "range" || name == "if-range") {
        // Ranges are ignored (RFC 9110 14.2 lets a server do so): every resource here is made per
        // request, and httplib 0.11 answered 1,300 "0-" ranges with a multipart body 700 times
        // the resource, and one range with status 200 and a partial body.
        continue;
      }
      forward.push_back(l.substr(0, colon) + ": " + value);
    }
    if (!lengths.empty()) {
      for (const std::string& v : lengths) {
        if (v.empty() || v.size() > 19 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
          return HeadCheck{400, "malformed Content-Length '" + v + "'", "invalid_body"};
        if (v != lengths[0])
          return HeadCheck{400, "two different Content-Length values (" + lengths[0] + " and " + v + ")", "invalid_body"};
      }
      if (transfer_encodings > 0)
        return HeadCheck{400, "Content-Length together with Transfer-Encoding", "invalid_body"};
      forward.push_back("Content-Length: " + lengths[0]);
      content_length_ = std::stoull(lengths[0]);
    }
    if (transfer_encodings > 1)
      return HeadCheck{400, "more than one Transfer-Encoding header field", "invalid_body"};
    if (transfer_encodings == 1) {
      if (transfer_encoding != "chunked")
        return HeadCheck{501, "Transfer-Encoding '" + transfer_encoding + "' is not supported: only chunked",
                         "unsupported_transfer_encoding"};
      chunked_ = true;
    }

    std::string head;
    for (const std::string& l : forward) head += l + "\r\n";
    head += "\r\n";
    in_ = head + in_.substr(body_start);
    pos_ = 0;
    head_left_ = head.size();
    return HeadCheck{};
  }

  void begin_body(bool framed) {
    phase_ = Phase::Body;
    deadline_ = Clock::now() + limits_.body_timeout;
    empty_body_ = !framed;
    body_bytes_ = 0;
  }
  void end_body() { phase_ = Phase::Handler; }
  // The request's whole body has been read. httplib reads no body for a GET (nor for some
  // answers it gives itself): the unread rest must never be taken for the next request, so the
  // connection then closes.
  bool body_fully_read() const {
    if (head_left_ > 0) return false;
    return chunked_ ? framing_.done() : body_read_ >= content_length_;
  }
  bool peer_closed() const {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) return true;
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }

  bool is_readable() const override {
    if (pos_ < in_.size()) return true;
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
    const bool in_head = head_left_ > 0;
    if (!in_head && chunked_ && framing_.done()) return 0;  // the body has ended; what follows is the next request
    if (pos_ >= in_.size()) {
      if (phase_ == Phase::Body && empty_body_) return 0;  // no Content-Length, not chunked: no body
      const ssize_t n = fill_some();
      if (n <= 0) return n;
    }
    size_t n = std::min(size, in_.size() - pos_);
    if (in_head) {
      n = std::min(n, head_left_);
      head_left_ -= n;
    } else if (chunked_) {
      // Hand over the body no further than its last byte, and nothing past a framing error.
      size_t ok = 0;
      while (ok < n) {
        const ChunkedFraming::Result r = framing_.feed(in_[pos_ + ok]);
        if (r == ChunkedFraming::Result::Bad) {
          state.bad_framing = true;
          state.close_after = true;
          if (ok == 0) return -1;
          break;
        }
        ++ok;
        if (r == ChunkedFraming::Result::Done) break;
      }
      n = ok;
    }
    std::memcpy(ptr, in_.data() + pos_, n);
    pos_ += n;
    if (!in_head) body_read_ += n;
    if (pos_ == in_.size()) {
      in_.clear();
      pos_ = 0;
    }
    if (!in_head && phase_ == Phase::Body) {
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
  HeadCheck too_many_header_bytes() const {
    return HeadCheck{431, "the header fields are longer than " + std::to_string(limits_.max_header_bytes) + " bytes",
                     "headers_too_large"};
  }
  // Appends what the socket has (waiting for it under the deadline): its count, 0 at the peer's
  // end, -1 on an error or a passed deadline.
  ssize_t fill_some() {
    if (!wait_readable()) return -1;
    char buf[4096];
    ssize_t n;
    do {
      n = ::recv(fd_, buf, sizeof buf, 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return n;
    if (pos_ > 0 && pos_ >= in_.size() / 2) {  // drop what was read
      in_.erase(0, pos_);
      pos_ = 0;
    }
    in_.append(buf, static_cast<size_t>(n));
    return n;
  }
  bool fill() { return fill_some() > 0; }
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
  std::string in_;         // bytes read from the socket and not yet handed over, from pos_
  size_t pos_ = 0;
  size_t head_left_ = 0;   // bytes of the rebuilt head httplib has still to read
  bool chunked_ = false;   // the current request's body is chunked: its bytes pass framing_
  uint64_t content_length_ = 0;  // the current request's Content-Length (0: none)
  uint64_t body_read_ = 0;       // body bytes handed to httplib
  ChunkedFraming framing_;
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

const char* reason_phrase(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 414: return "URI Too Long";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

std::string json_escape(const std::string& s) {
  // Quoted request bytes may be anything: ASCII only, and not much of it.
  std::string out;
  for (const char c : s.substr(0, 200)) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) out += '?';
    else out += c;
  }
  return out;
}

// A whole response for a request refused below httplib: an OpenAI-style error body, and the
// connection closes after it.
std::string error_response(int status, const std::string& message, const std::string& code) {
  const std::string type = status == 429 || status == 503 ? "rate_limit_error" : "invalid_request_error";
  const std::string body = "{\"error\":{\"message\":\"" + json_escape(message) + "\",\"type\":\"" + type +
                           "\",\"param\":null,\"code\":\"" + code + "\"}}";
  return "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) +
         "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

}  // namespace

ConnectionState* current_connection() { return t_stream ? &t_stream->state : nullptr; }
void begin_body(bool framed) {
  if (t_stream) t_stream->begin_body(framed);
}
void end_body() {
  if (t_stream) t_stream->end_body();
}
bool client_gone() { return t_stream && t_stream->peer_closed(); }

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

// ---- the server: admission, the waiter, one request per worker job -----------------------------

namespace {

// The address connections are counted under: IPv4 as is (an IPv4-mapped IPv6 address as its IPv4),
// IPv6 by its /64 prefix, since one host usually has a whole /64 to pick addresses from.
std::string client_key(const std::string& ip) {
  in6_addr a6{};
  if (inet_pton(AF_INET6, ip.c_str(), &a6) != 1) return ip;
  if (IN6_IS_ADDR_V4MAPPED(&a6)) {
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, a6.s6_addr + 12, text, sizeof text);
    return text;
  }
  std::memset(a6.s6_addr + 8, 0, 8);
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, &a6, text, sizeof text);
  return std::string(text) + "/64";
}

// A request head is in: its blank line has arrived.
bool head_complete(const std::string& b) {
  return b.find("\r\n\r\n") != std::string::npos || b.find("\n\n") != std::string::npos;
}

// Bodies up to this size are read by the waiter before a worker is taken, so a client sending a
// small body slowly holds no thread either (JSON requests are almost always this small).
constexpr size_t kWaiterBodyBytes = size_t{64} << 10;

// Where the head ends (after its blank line), or npos.
size_t head_end(const std::string& b) {
  const size_t crlf = b.find("\r\n\r\n"), lf = b.find("\n\n");
  size_t end = std::string::npos;
  if (crlf != std::string::npos) end = crlf + 4;
  if (lf != std::string::npos) end = std::min(end, lf + 2);
  return end;
}

// The bytes the waiter should have before a worker takes the request: the head, and a small body
// with one plain Content-Length. Anything else (chunked, several lengths, large) is the worker's
// to read and to judge (read_head answers the malformed ones).
size_t bytes_before_serving(const std::string& b) {
  const size_t end = head_end(b);
  if (end == std::string::npos) return std::string::npos;
  size_t length = 0;
  int lengths = 0;
  size_t pos = 0;
  while (pos < end) {
    size_t nl = b.find('\n', pos);
    if (nl == std::string::npos || nl > end) nl = end;
    std::string line = b.substr(pos, nl - pos);
    pos = nl + 1;
    for (char& ch : line) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (line.rfind("transfer-encoding:", 0) == 0) return end;
    if (line.rfind("content-length:", 0) != 0) continue;
    ++lengths;
    std::string v = line.substr(15);
    while (!v.empty() && (v.back() == '\r' || v.back() == ' ' || v.back() == '\t')) v.pop_back();
    size_t b0 = 0;
    while (b0 < v.size() && (v[b0] == ' ' || v[b0] == '\t')) ++b0;
    v = v.substr(b0);
    if (v.empty() || v.size() > 7 || !std::all_of(v.begin(), v.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      return end;
    length = std::stoul(v);
  }
  if (lengths != 1 || length > kWaiterBodyBytes) return end;
  return end + length;
}

}  // namespace

struct GuardedServer::Conn {
  int fd = -1;
  std::string ip;
  int port = 0;
  std::string key;           // client_key(ip)
  std::string buffer;        // bytes read and not yet served (the next request's start)
  size_t requests_left = 0;  // keep-alive requests this connection may still make
  Clock::time_point deadline{};  // idle deadline, the head's once its first byte is in, then the body's
  bool head_started = false;
  bool body_started = false;     // the head is in; a small body is still coming
};

GuardedServer::GuardedServer(ConnectionLimits limits)
    : limits_(limits), workers_(limits.max_threads) {
  if (limits_.max_busy_per_client <= 0)
    limits_.max_busy_per_client = std::max<int64_t>(1, static_cast<int64_t>(limits_.max_threads) * 3 / 4);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  waiter_ = std::thread([this] { waiter_loop(); });
}

GuardedServer::~GuardedServer() {
  stopping_ = true;
  destroying_ = true;
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }
  if (waiter_.joinable()) waiter_.join();
  workers_.shutdown();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  auto c = std::make_shared<Conn>();
  c->fd = sock;
  c->ip = peer_address(sock, c->port);
  c->key = client_key(c->ip);
  c->requests_left = keep_alive_max_count_;
  ++open_;
  bool admitted = true;
  {
    std::lock_guard<std::mutex> lock(clients_mutex_);
    if (++per_client_[c->key].open > limits_.max_per_client) admitted = false;
  }
  if (!admitted || stopping_.load()) {
    if (!admitted)
      write_all(sock, error_response(429, "too many connections from " + c->key + ": the limit is " +
                                              std::to_string(limits_.max_per_client),
                                      "too_many_connections"));
    finish(c, false);
    return false;
  }
  park(std::move(c));
  return true;
}

void GuardedServer::park(std::shared_ptr<Conn> c) {
  c->head_started = false;
  c->body_started = false;
  c->deadline = Clock::now() + limits_.idle_timeout;
  {
    std::lock_guard<std::mutex> lock(park_mutex_);
    parked_.push_back(std::move(c));
  }
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

void GuardedServer::finish(const std::shared_ptr<Conn>& c, bool gentle) {
  if (gentle) {
    // A body was left unread: close gently, so the client reads our answer instead of a reset.
    ::shutdown(c->fd, SHUT_WR);
    char sink[4096];
    size_t drained = 0;
    const auto until = Clock::now() + std::chrono::milliseconds(500);
    while (drained < (size_t{4} << 20) && Clock::now() < until) {
      pollfd p{c->fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const ssize_t n = ::recv(c->fd, sink, sizeof sink, MSG_DONTWAIT);
      if (n <= 0) break;
      drained += static_cast<size_t>(n);
    }
  }
  ::shutdown(c->fd, SHUT_RDWR);
  ::close(c->fd);
  c->fd = -1;
  {
    std::lock_guard<std::mutex> lock(clients_mutex_);
    auto it = per_client_.find(c->key);
    if (it != per_client_.end() && --it->second.open <= 0 && it->second.busy <= 0) per_client_.erase(it);
  }
  --open_;
}

void GuardedServer::waiter_loop() {
  std::vector<std::shared_ptr<Conn>> conns;
  std::vector<pollfd> fds;
  const size_t head_cap = limits_.max_request_line + limits_.max_header_bytes + 1024;
  while (!destroying_.load()) {
    {
      std::lock_guard<std::mutex> lock(park_mutex_);
      for (auto& c : parked_) conns.push_back(std::move(c));
      parked_.clear();
    }
    if (stopping_.load()) {
      for (auto& c : conns) finish(c, false);
      conns.clear();
    }
    fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    // Ready: the head (and a small body) is in. Pipelined requests may be: then no wait.
    auto ready = [&](const Conn& c) {
      const size_t need = bytes_before_serving(c.buffer);
      return (need != std::string::npos && c.buffer.size() >= need) || c.buffer.size() >= head_cap + kWaiterBodyBytes;
    };
    bool any_ready = false;
    for (const auto& c : conns) {
      const bool r = ready(*c);
      any_ready = any_ready || r;
      fds.push_back(pollfd{c->fd, static_cast<short>(r ? 0 : POLLIN), 0});
    }
    ::poll(fds.data(), fds.size(), any_ready ? 0 : static_cast<int>(kSlice.count()));
    if (fds[0].revents & POLLIN) {
      uint64_t n;
      (void)!::read(wake_fd_, &n, sizeof n);
    }
    const auto now = Clock::now();
    std::vector<std::shared_ptr<Conn>> keep;
    keep.reserve(conns.size());
    for (size_t i = 0; i < conns.size(); ++i) {
      auto& c = conns[i];
      bool gone = false;
      if (fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) {
        char buf[4096];
        while (c->buffer.size() < head_cap + kWaiterBodyBytes) {
          const ssize_t n = ::recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
          if (n > 0) {
            c->buffer.append(buf, static_cast<size_t>(n));
            continue;
          }
          if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) gone = true;
          break;
        }
      }
      if (!c->head_started && !c->buffer.empty()) {
        c->head_started = true;
        c->deadline = now + limits_.header_timeout;
      }
      if (head_complete(c->buffer) && !c->body_started && !ready(*c)) {
        c->body_started = true;  // a small body is coming: the body's deadline from here
        c->deadline = now + limits_.body_timeout;
      }
      if (ready(*c) || (!head_complete(c->buffer) && c->buffer.size() >= head_cap)) {
        // The head is in (or too long: the worker answers 414 / 431).
        bool admitted = true;
        {
          std::lock_guard<std::mutex> lock(clients_mutex_);
          ClientCount& count = per_client_[c->key];
          if (count.busy >= limits_.max_busy_per_client) admitted = false;
          else ++count.busy;
        }
        if (!admitted) {
          write_all(c->fd, error_response(429, "too many requests from " + c->key + " served at once: the limit is " +
                                                   std::to_string(limits_.max_busy_per_client),
                                          "too_many_connections"));
          finish(c, false);  // not the gentle close: the waiter must not wait on one client
          continue;
        }
        workers_.enqueue([this, c] { serve(c); });
        continue;
      }
      if (gone || now >= c->deadline) {
        if (!gone && c->body_started)
          write_all(c->fd, error_response(400, "the request body did not arrive within " +
                                                   std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                                      limits_.body_timeout).count()) + " s",
                                          "invalid_body"));
        finish(c, false);  // left, or idle / slow past its deadline: closed (idle and head: without an answer)
        continue;
      }
      keep.push_back(std::move(c));
    }
    conns.swap(keep);
  }
  for (auto& c : conns) finish(c, false);
  std::lock_guard<std::mutex> lock(park_mutex_);
  for (auto& c : parked_) finish(c, false);
  parked_.clear();
}

void GuardedServer::serve(std::shared_ptr<Conn> c) {
  GuardStream strm(c->fd, c->ip, c->port, limits_, stopping_);
  strm.adopt(std::move(c->buffer));
  c->buffer.clear();
  t_stream = &strm;
  bool keep = false;
  const HeadCheck head = strm.read_head();
  if (head.status == 200) {
    bool connection_closed = false;
    const bool ret = process_request(strm, c->requests_left <= 1, connection_closed, nullptr);
    keep = ret && !connection_closed && !strm.state.close_after && strm.body_fully_read() && --c->requests_left > 0;
    if (ret && !strm.body_fully_read()) strm.state.close_after = true;  // close gently, the rest unread
  } else if (head.status != 0) {
    // Refused before httplib parsed anything (and so before the API key was looked at).
    write_all(c->fd, error_response(head.status, head.message, head.code));
    strm.state.close_after = true;
  }
  t_stream = nullptr;
  {
    std::lock_guard<std::mutex> lock(clients_mutex_);
    --per_client_[c->key].busy;
  }
  if (keep && !stopping_.load()) {
    c->buffer = strm.take_rest();
    park(std::move(c));
    return;
  }
  finish(c, strm.state.close_after);
}

}  // namespace strata::serve
