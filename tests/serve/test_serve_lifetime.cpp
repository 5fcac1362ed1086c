// tests/serve/test_serve_lifetime.cpp — how long `strata-engine serve` lives: with --parent-pid it
// stops (exit 0, as on SIGTERM) when that process dies — killed with SIGKILL mid-stream, gone
// without being our parent (the polling watchdog), or when its stdin pipe closes — and does not
// start when the parent is already gone; without it, an engine started by hand in its own session
// outlives the shell that started it. This process is a child subreaper, so orphaned engines come
// back to it and their exit codes can be read. Every wait polls against a deadline.
#include <fcntl.h>
#include <sys/prctl.h>

#include "serve/serve_test_util.h"

namespace strata::test {
namespace {

using Clock = std::chrono::steady_clock;

std::string engine_cmd(const std::vector<std::string>& args) {
  std::string cmd = quote(STRATA_ENGINE_BINARY);
  cmd += " serve --port 0 --threads 1";
  for (const auto& a : args) cmd += " " + quote(a);
  return cmd;
}

// A live process, not a zombie: /proc/PID/stat exists and its state is not Z or X.
bool alive(pid_t pid) {
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  return stat[paren + 2] != 'Z' && stat[paren + 2] != 'X';
}

// Waits for `pid` (a child, or an orphan handed to this subreaper) to end; its exit code, -1 after
// a signal, nullopt when it still runs at the deadline.
std::optional<int> wait_exit(pid_t pid, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  do {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (r < 0 && !alive(pid)) return -2;  // not a child of ours, and gone
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (Clock::now() < deadline);
  return std::nullopt;
}

// `sh -c SCRIPT` in a forked child, optionally in a new session; stdin from `stdin_fd` (or
// /dev/null), stdout and stderr read by threads. Whatever still runs is SIGKILLed at the end.
class Shell {
 public:
  explicit Shell(const std::string& script, int stdin_fd = -1, bool new_session = false) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      if (new_session) setsid();
      const int in = stdin_fd >= 0 ? stdin_fd : open("/dev/null", O_RDONLY);
      dup2(in, STDIN_FILENO);
      dup2(out[1], STDOUT_FILENO);
      dup2(err[1], STDERR_FILENO);
      execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    close(err[1]);
    readers_.emplace_back([this, fd = out[0]] { drain(fd, out_); });
    readers_.emplace_back([this, fd = err[0]] { drain(fd, err_); });
  }
  ~Shell() {
    if (engine_ > 0 && alive(engine_)) kill(engine_, SIGKILL), wait_exit(engine_, std::chrono::seconds(5));
    if (pid_ > 0 && wait_exit(pid_, std::chrono::milliseconds(0)) == std::nullopt) {
      kill(pid_, SIGKILL);
      wait_exit(pid_, std::chrono::seconds(5));
    }
    for (auto& t : readers_) t.join();
  }

  pid_t pid() const { return pid_; }
  // Waits until `pred` holds for (stdout, stderr).
  bool wait_for(const std::function<bool(const std::string&, const std::string&)>& pred, std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_for(lock, limit, [&] { return pred(out_, err_); });
  }
  // The engine's pid, as the script printed it with `echo $!`.
  pid_t engine_pid(std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    wait_for([](const std::string& out, const std::string&) { return out.find('\n') != std::string::npos; }, limit);
    std::lock_guard<std::mutex> lock(mutex_);
    engine_ = std::atoi(out_.c_str());
    return engine_;
  }
  // The port from "listening on 127.0.0.1:PORT"; 0 when it did not come within `limit`.
  int port(std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    const std::string tag = "listening on 127.0.0.1:";
    wait_for([&](const std::string&, const std::string& err) {
      const size_t at = err.find(tag);
      return at != std::string::npos && err.find('\n', at) != std::string::npos;
    }, limit);
    std::lock_guard<std::mutex> lock(mutex_);
    const size_t at = err_.find(tag);
    return at == std::string::npos ? 0 : std::atoi(err_.c_str() + at + tag.size());
  }
  std::string err() {
    std::lock_guard<std::mutex> lock(mutex_);
    return err_;
  }

 private:
  void drain(int fd, std::string& into) {
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      into.append(buf, static_cast<size_t>(n));
      cv_.notify_all();
    }
    close(fd);
  }

  pid_t pid_ = -1;
  pid_t engine_ = -1;
  std::vector<std::thread> readers_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::string out_, err_;
};

class ServeLifetime : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  }
};

TEST_F(ServeLifetime, StopsWhenItsParentIsKilledMidStream) {
  // sh plays the workstation: it starts the engine tied to itself and waits.
  Shell parent(engine_cmd({"-m", slow_model(), "--ctx", "4096"}) + " --parent-pid $$ & echo $!; wait");
  const pid_t engine_pid = parent.engine_pid();
  ASSERT_GT(engine_pid, 0);
  const int port = parent.port();
  ASSERT_NE(port, 0) << parent.err();

  std::atomic<int> chunks{0}, status{-1};
  std::atomic<bool> returned{false};
  std::thread client([&] {
    status = post_stream(port, "/v1/completions",
                         {{"prompt", "Once upon a time"}, {"max_tokens", 3000}, {"ignore_eos", true}, {"stream", true}},
                         [&](const std::string&) { return ++chunks, true; });
    returned = true;
  });
  struct Join {  // an ASSERT below must not leave a joinable thread behind
    std::thread& t;
    std::atomic<bool>& returned;
    ~Join() {
      if (!t.joinable()) return;
      if (returned.load()) t.join();
      else t.detach();  // still blocked in the server's stream: the process ends with the test
    }
  } join{client, returned};
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (chunks.load() < 3 && !returned.load() && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_GE(chunks.load(), 3) << "no stream to cut (HTTP " << status.load() << "): " << parent.err();

  const auto killed_at = Clock::now();
  ASSERT_EQ(kill(parent.pid(), SIGKILL), 0);
  // The engine gives open streams up to 6 s to write their error event on SIGTERM; 20 s is reached
  // only when nothing stops it, not by a loaded machine.
  const std::optional<int> code = wait_exit(engine_pid, std::chrono::seconds(20));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - killed_at).count();
  ASSERT_TRUE(code.has_value()) << "engine still running 20 s after its parent was killed\n" << parent.err();
  EXPECT_EQ(*code, 0) << "not the orderly SIGTERM shutdown\n" << parent.err();
  std::printf("engine stopped %lld ms after its parent was killed\n", static_cast<long long>(took));
  const auto client_deadline = Clock::now() + std::chrono::seconds(5);
  while (!returned.load() && Clock::now() < client_deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(returned.load()) << "the open stream was left hanging";
  parent.wait_for([](const std::string&, const std::string& err) { return err.find("serve: stopped") != std::string::npos; },
                  std::chrono::seconds(20));
  EXPECT_NE(parent.err().find("strata-engine serve: stopped"), std::string::npos) << parent.err();
}

TEST_F(ServeLifetime, WatchdogStopsItWhenTheWorkstationIsNotItsParent) {
  // A wrapper between workstation and engine: PDEATHSIG cannot see the workstation, the watchdog can.
  Shell workstation("exec sleep 60");
  ASSERT_GT(workstation.pid(), 0);
  Shell wrapper(engine_cmd({"-m", stories_model(), "--parent-pid", std::to_string(workstation.pid())}) + " & echo $!; wait $!");
  const pid_t engine_pid = wrapper.engine_pid();
  ASSERT_GT(engine_pid, 0);
  ASSERT_NE(wrapper.port(), 0) << wrapper.err();

  ASSERT_EQ(kill(workstation.pid(), SIGKILL), 0);
  ASSERT_TRUE(wait_exit(workstation.pid(), std::chrono::seconds(5)).has_value());
  ASSERT_TRUE(wait_exit(engine_pid, std::chrono::seconds(2)).has_value())
      << "engine still running 2 s after the workstation died\n" << wrapper.err();
  const std::optional<int> code = wait_exit(wrapper.pid(), std::chrono::seconds(5));  // the wrapper reaped it
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << wrapper.err();
  EXPECT_NE(wrapper.err().find("is gone (it exited)"), std::string::npos) << wrapper.err();
}

TEST_F(ServeLifetime, StopsWhenItsStdinPipeCloses) {
  // The parent (this test) lives on; only the pipe it gave as stdin closes.
  int in[2];
  ASSERT_EQ(pipe2(in, O_CLOEXEC), 0);
  Shell shell("exec " + engine_cmd({"-m", stories_model(), "--parent-pid", std::to_string(getpid())}), in[0]);
  close(in[0]);
  ASSERT_NE(shell.port(), 0) << shell.err();
  ASSERT_EQ(write(in[1], "ignored\n", 8), 8);  // what arrives on the pipe is read and dropped
  close(in[1]);
  const std::optional<int> code = wait_exit(shell.pid(), std::chrono::seconds(2));
  ASSERT_TRUE(code.has_value()) << "engine still running 2 s after its stdin pipe closed\n" << shell.err();
  EXPECT_EQ(*code, 0) << shell.err();
  EXPECT_NE(shell.err().find("is gone (its pipe closed)"), std::string::npos) << shell.err();
}

TEST_F(ServeLifetime, DoesNotStartWhenTheParentIsAlreadyGone) {
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_TRUE(wait_exit(dead, std::chrono::seconds(5)).has_value());
  Shell shell("exec " + engine_cmd({"-m", stories_model(), "--parent-pid", std::to_string(dead)}));
  const std::optional<int> code = wait_exit(shell.pid(), std::chrono::seconds(10));
  ASSERT_TRUE(code.has_value()) << shell.err();
  EXPECT_EQ(*code, 0) << shell.err();
  EXPECT_NE(shell.err().find("already gone"), std::string::npos) << shell.err();
  EXPECT_EQ(shell.err().find("listening on"), std::string::npos) << shell.err();
}

TEST_F(ServeLifetime, HandStartedEngineOutlivesItsShell) {
  // As `setsid strata-engine serve ... &` from a terminal: the shell returns at once.
  Shell shell(engine_cmd({"-m", stories_model()}) + " & echo $!", -1, /*new_session=*/true);
  const pid_t engine_pid = shell.engine_pid();
  ASSERT_GT(engine_pid, 0);
  const std::optional<int> shell_code = wait_exit(shell.pid(), std::chrono::seconds(10));
  ASSERT_TRUE(shell_code.has_value());
  EXPECT_EQ(*shell_code, 0);
  const int port = shell.port();
  ASSERT_NE(port, 0) << shell.err();

  // Still there and answering for a second after its shell is gone (five watchdog periods, had
  // there been a watchdog).
  const auto until = Clock::now() + std::chrono::seconds(1);
  int answers = 0;
  while (Clock::now() < until) {
    ASSERT_TRUE(alive(engine_pid)) << shell.err();
    ASSERT_EQ(get(port, "/strata/v1/status").status, 200) << shell.err();
    ++answers;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GT(answers, 3);
  ASSERT_EQ(kill(engine_pid, SIGTERM), 0);
  const std::optional<int> code = wait_exit(engine_pid, std::chrono::seconds(10));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << shell.err();
}

}  // namespace
}  // namespace strata::test
