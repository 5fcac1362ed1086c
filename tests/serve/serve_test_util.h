// tests/serve/serve_test_util.h — starts the real `strata-engine serve` as a child process on a
// free loopback port (it prints "listening on 127.0.0.1:PORT" on stderr) and talks to it with
// httplib::Client: JSON requests and server-sent-event streams. The child is always killed.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "app/cli_runner.h"
#include "test_support.h"

namespace strata::test {

using Json = nlohmann::json;

inline std::string stories_model() { return shared_model("stories260K.gguf").string(); }

// SmolLM2-135M-Instruct Q4_1, where setup puts the real chat models (tools/fetch_models.sh); it
// guarantees them, so a missing one fails the test that starts a server on it.
inline std::string smollm2() { return (test::real_models() / "SmolLM2-135M-Instruct.Q4_1.gguf").string(); }

// A random-weight llama model (stories260K's vocabulary, ~5 ms a token here): generations long
// enough to kill a client mid-stream or to watch the trace stream. Made once per test binary.
inline std::string slow_model() {
  static const std::string path = [] {
    const auto p = temp_dir("serve_slow") / "slow.gguf";
    if (!std::filesystem::exists(p)) {
      CliRun r = engine({"make-model", "--vocab-from", stories_model(), "--dim", "256", "--layers", "8", "--heads", "8",
                         "--ffn", "768", "--ctx", "4096", "--type", "q8_0", "--seed", "7", "-o", p.string()});
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    return p.string();
  }();
  return path;
}

class ServerProcess {
 public:
  // Starts `strata-engine serve --port 0 ARGS...`; port() is 0 when it did not come up. launcher:
  // a command line the engine runs under (mpirun and its options; the first word a full path).
  explicit ServerProcess(std::vector<std::string> args, std::chrono::seconds timeout = std::chrono::seconds(60),
                         std::vector<std::string> launcher = {}) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDERR_FILENO);
      close(fds[0]);
      close(fds[1]);
      std::vector<std::string> all = launcher;
      for (const char* a : {STRATA_ENGINE_BINARY, "serve", "--port", "0"}) all.push_back(a);
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : all) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(fds[1]);
    err_fd_ = fds[0];
    reader_ = std::thread([this] { read_stderr(); });
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait_for(lock, timeout, [&] { return port_ != 0 || eof_; });
  }
  ~ServerProcess() { stop(); }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // The server's resident memory in bytes (VmRSS of /proc/PID/status); 0 when unreadable.
  size_t rss_bytes() const {
    FILE* f = std::fopen(("/proc/" + std::to_string(pid_) + "/status").c_str(), "r");
    if (!f) return 0;
    char line[256];
    size_t kb = 0;
    while (std::fgets(line, sizeof line, f))
      if (std::strncmp(line, "VmRSS:", 6) == 0) kb = std::strtoull(line + 6, nullptr, 10);
    std::fclose(f);
    return kb * 1024;
  }
  std::string stderr_text() {
    std::lock_guard<std::mutex> lock(mutex_);
    return err_;
  }
  // SIGTERM, then SIGKILL after 10 s; returns the exit code (-1: killed by a signal).
  int stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      for (int i = 0; i < 1000; ++i) {
        if (waitpid(pid_, &status, WNOHANG) == pid_) break;
        if (i == 999) {
          kill(pid_, SIGKILL);
          waitpid(pid_, &status, 0);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      pid_ = -1;
    }
    if (reader_.joinable()) reader_.join();
    if (err_fd_ >= 0) close(err_fd_), err_fd_ = -1;
    return exit_code_;
  }

 private:
  void read_stderr() {
    char buf[4096];
    while (true) {
      const ssize_t n = read(err_fd_, buf, sizeof buf);
      std::lock_guard<std::mutex> lock(mutex_);
      if (n <= 0) {
        eof_ = true;
        cv_.notify_all();
        return;
      }
      err_.append(buf, static_cast<size_t>(n));
      const auto at = err_.find("listening on 127.0.0.1:");
      if (port_ == 0 && at != std::string::npos && err_.find('\n', at) != std::string::npos) {
        port_ = std::atoi(err_.c_str() + at + std::string("listening on 127.0.0.1:").size());
        cv_.notify_all();
      }
    }
  }

  pid_t pid_ = -1;
  int err_fd_ = -1;
  int exit_code_ = -1;
  std::thread reader_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::string err_;
  int port_ = 0;
  bool eof_ = false;
};

struct Reply {
  int status = 0;  // 0: no response (connection failed)
  std::string body;
  Json json() const { return Json::parse(body, nullptr, false); }
};

inline httplib::Headers auth_headers(const std::string& key) {
  httplib::Headers h;
  if (!key.empty()) h.emplace("Authorization", "Bearer " + key);
  return h;
}

inline Reply request(int port, const std::string& method, const std::string& path, const std::string& body = "",
                     const std::string& key = "") {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(120, 0);
  httplib::Result r = method == "GET"   ? cli.Get(path.c_str(), auth_headers(key))
                     : method == "PUT" ? cli.Put(path.c_str(), auth_headers(key), body, "application/json")
                                       : cli.Post(path.c_str(), auth_headers(key), body, "application/json");
  Reply out;
  if (r) {
    out.status = r->status;
    out.body = r->body;
  }
  return out;
}
inline Reply get(int port, const std::string& path, const std::string& key = "") { return request(port, "GET", path, "", key); }
inline Reply post(int port, const std::string& path, const Json& body, const std::string& key = "") {
  return request(port, "POST", path, body.dump(), key);
}

// Splits server-sent events as they arrive; on_event gets each event's data (joined data: lines).
class SseParser {
 public:
  explicit SseParser(std::function<bool(const std::string&)> on_event) : on_event_(std::move(on_event)) {}
  bool feed(const char* data, size_t n) {
    buf_.append(data, n);
    size_t end;
    while ((end = buf_.find("\n\n")) != std::string::npos) {
      const std::string block = buf_.substr(0, end);
      buf_.erase(0, end + 2);
      std::string payload;
      size_t pos = 0;
      while (pos <= block.size()) {
        size_t nl = block.find('\n', pos);
        if (nl == std::string::npos) nl = block.size();
        const std::string line = block.substr(pos, nl - pos);
        if (line.rfind("data: ", 0) == 0) payload += (payload.empty() ? "" : "\n") + line.substr(6);
        pos = nl + 1;
      }
      if (!payload.empty() && !on_event_(payload)) return false;
    }
    return true;
  }

 private:
  std::function<bool(const std::string&)> on_event_;
  std::string buf_;
};

// POSTs with "stream": true; on_event gets each data payload (return false to hang up).
inline int post_stream(int port, const std::string& path, const Json& body,
                       const std::function<bool(const std::string&)>& on_event, const std::string& key = "") {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(120, 0);
  SseParser parser(on_event);
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.headers = auth_headers(key);
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) { return parser.feed(data, n); };
  auto r = cli.send(req);
  return r ? r->status : 0;
}

// A streamed chat/text completion: the concatenated content, the finish reason, "[DONE]" seen.
struct Streamed {
  int status = 0;
  std::string text, finish;
  bool done = false;
  int chunks = 0;
  int text_chunks = 0;  // chunks whose content (chat) or text (completion) is not empty
  Json usage;
  Json replans = Json::array();  // the "replan" notes of chunks (a device was lost mid-stream)
};

inline Streamed stream_completion(int port, const std::string& path, Json body, const std::string& key = "") {
  body["stream"] = true;
  Streamed s;
  const bool chat = path.find("chat") != std::string::npos;
  s.status = post_stream(port, path, body, [&](const std::string& data) {
    if (data == "[DONE]") {
      s.done = true;
      return true;
    }
    Json j = Json::parse(data, nullptr, false);
    if (j.is_discarded()) return false;
    ++s.chunks;
    if (j.contains("usage") && !j["usage"].is_null()) s.usage = j["usage"];
    if (j.contains("replan")) s.replans.push_back(j["replan"]);
    if (!j.contains("choices") || j["choices"].empty()) return true;
    const Json& c = j["choices"][0];
    const std::string piece = chat ? c["delta"].value("content", std::string()) : c["text"].get<std::string>();
    s.text += piece;
    s.text_chunks += !piece.empty();
    if (!c["finish_reason"].is_null()) s.finish = c["finish_reason"].get<std::string>();
    return true;
  }, key);
  return s;
}

// A raw TCP connection to the server: for what httplib::Client will not send.
class Raw {
 public:
  explicit Raw(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) close_fd();
  }
  ~Raw() { close_fd(); }
  Raw(const Raw&) = delete;
  Raw& operator=(const Raw&) = delete;
  bool ok() const { return fd_ >= 0; }
  bool send(const std::string& s) {
    size_t done = 0;
    while (done < s.size()) {
      const ssize_t n = ::send(fd_, s.data() + done, s.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads until the peer closes or `limit` passes; the bytes read.
  std::string read_all(std::chrono::milliseconds limit) {
    return read_until(limit, [](const std::string&) { return false; });
  }
  // Reads one response (its headers, then Content-Length bytes of body) within `limit`; what was
  // read when the limit passed or the peer closed.
  std::string read_response(std::chrono::milliseconds limit) {
    return read_until(limit, [](const std::string& out) {
      const size_t end = out.find("\r\n\r\n");
      if (end == std::string::npos) return false;
      const size_t at = out.find("Content-Length: ");
      const size_t length = at != std::string::npos && at < end ? std::strtoul(out.c_str() + at + 16, nullptr, 10) : 0;
      return out.size() >= end + 4 + length;
    });
  }
  // True when the peer closed the connection within `limit`.
  bool closed_within(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    char buf[4096];
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return true;
    }
    return false;
  }

 private:
  // Reads until complete(bytes so far) holds, the peer closes, or `limit` passes.
  template <typename Complete>
  std::string read_until(std::chrono::milliseconds limit, Complete complete) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    char buf[4096];
    while (!complete(out) && std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
  void close_fd() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

inline int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0) return 0;
  return std::atoi(response.c_str() + 9);
}

inline Json body_of(const std::string& response) {
  const size_t at = response.find("\r\n\r\n");
  if (at == std::string::npos) return Json();
  return Json::parse(response.substr(at + 4), nullptr, false);
}

inline Json chat_body(const std::string& user, int max_tokens) {
  return Json{{"model", "stories260K"},
              {"messages", Json::array({Json{{"role", "user"}, {"content", user}}})},
              {"temperature", 0},
              {"max_tokens", max_tokens}};
}

}  // namespace strata::test
