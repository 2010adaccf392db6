// run_hook: fork and exec with pipes, a poll loop that feeds standard input, reads output
// lines and watches the clock and the stop request, and a process group to kill.
#include "agent/hook_runner.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>
#include <sstream>

extern char** environ;

namespace gpurent::agent {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxLine = 1000;
constexpr std::size_t kTailBytes = 4096;

// What the child tells the parent through its close-on-exec pipe when it cannot exec: the
// step that failed and its errno.
struct ChildFailure {
  enum Step : int { kExec, kSetgid, kSetgroups, kSetuid, kKeptRoot, kChdir };
  int step = kExec;
  int error = 0;
};

// In the child: tells the parent why through the error pipe (still open, close-on-exec),
// and ends it.
[[noreturn]] void child_failed(int pipe, int step) {
  ChildFailure f{.step = step, .error = errno};
  [[maybe_unused]] auto n = ::write(pipe, &f, sizeof(f));
  ::_exit(127);
}

std::string failure_text(const HookRun& run, const ChildFailure& f) {
  std::string why = std::strerror(f.error);
  switch (f.step) {
    case ChildFailure::kSetgid:
      return "cannot set group id " + std::to_string(run.user->gid) + ": " + why;
    case ChildFailure::kSetgroups:
      return "cannot set the supplementary groups of uid " + std::to_string(run.user->uid) + ": " +
             why;
    case ChildFailure::kSetuid:
      return "cannot set user id " + std::to_string(run.user->uid) + ": " + why;
    case ChildFailure::kKeptRoot:
      return "user id " + std::to_string(run.user->uid) + " could become root again";
    case ChildFailure::kChdir:
      return "cannot enter " + run.working_dir + ": " + why;
    default:
      return run.argv[0] + ": " + why;
  }
}

// The last lines of output, at most kTailBytes together.
class Tail {
 public:
  void add(const std::string& line) {
    lines_.push_back(line);
    bytes_ += line.size() + 1;
    while (bytes_ > kTailBytes && lines_.size() > 1) {
      bytes_ -= lines_.front().size() + 1;
      lines_.pop_front();
    }
  }
  std::string text() const {
    std::string out;
    for (const auto& l : lines_) out += l + "\n";
    if (out.size() > kTailBytes) out.erase(0, out.size() - kTailBytes);
    return out;
  }

 private:
  std::deque<std::string> lines_;
  std::size_t bytes_ = 0;
};

std::string format_duration(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + "s";
  return std::to_string(d.count()) + "ms";
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

std::string HookResult::describe() const {
  std::string last;
  std::istringstream lines(tail);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) last = line;
  }
  std::string out;
  switch (end) {
    case End::kExited:
      out = exit_code >= 0 ? "exited with " + std::to_string(exit_code) : "ended by a signal";
      break;
    case End::kTimedOut:
      out = "timed out";
      break;
    case End::kStopped:
      out = "stopped";
      break;
    case End::kNotStarted:
      out = "could not start";
      break;
  }
  return last.empty() ? out : out + ": " + last;
}

std::vector<std::string> hook_argv(const std::string& command) {
  std::vector<std::string> out;
  std::istringstream words(command);
  for (std::string word; words >> word;) out.push_back(word);
  return out;
}

HookResult run_hook(const HookRun& run, const std::function<void(const std::string&)>& on_line,
                    const std::stop_token& stop) {
  HookResult result;
  if (run.argv.empty()) {
    result.tail = "no command";
    return result;
  }
  // Everything the child needs is built before fork: after it, a multi-threaded process may
  // only call async-signal-safe functions (no malloc, hence no setenv).
  std::vector<std::string> env_strings;
  for (char** e = run.clean_env ? nullptr : environ; e && *e; ++e) {
    std::string entry(*e);
    if (!run.env.contains(entry.substr(0, entry.find('=')))) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : run.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = run.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::vector<gid_t> groups = run.user ? run.user->groups : std::vector<gid_t>{};

  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) {
    result.tail = std::strerror(errno);
    return result;
  }
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.tail = std::strerror(errno);
    ::close(in_pipe[0]);
    ::close(in_pipe[1]);
    return result;
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(out_pipe[1], 2);
    if (run.user) {
      // Group first, while still root; then the groups initgroups would set (read before
      // fork: getgrouplist is not safe here); the user last, after which none can change.
      if (::setgid(run.user->gid) != 0) child_failed(err_pipe[1], ChildFailure::kSetgid);
      if (::setgroups(groups.size(), groups.data()) != 0)
        child_failed(err_pipe[1], ChildFailure::kSetgroups);
      if (::setuid(run.user->uid) != 0) child_failed(err_pipe[1], ChildFailure::kSetuid);
      if (run.user->uid != 0 && ::setuid(0) == 0) {
        errno = EPERM;
        child_failed(err_pipe[1], ChildFailure::kKeptRoot);
      }
    }
    if (!run.working_dir.empty() && ::chdir(run.working_dir.c_str()) != 0) {
      child_failed(err_pipe[1], ChildFailure::kChdir);
    }
    ::execvpe(argv[0], argv.data(), envp.data());
    child_failed(err_pipe[1], ChildFailure::kExec);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  int to_child = in_pipe[1], from_child = out_pipe[0], exec_error = err_pipe[0];
  if (pid < 0) {
    result.tail = std::strerror(errno);
    close_fd(to_child);
    close_fd(from_child);
    close_fd(exec_error);
    return result;
  }
  ::setpgid(pid, pid);  // also from here, so the group exists before any kill below
  {
    ChildFailure f;
    if (::read(exec_error, &f, sizeof(f)) == sizeof(f)) {
      result.tail = failure_text(run, f);
      ::waitpid(pid, nullptr, 0);
      close_fd(to_child);
      close_fd(from_child);
      close_fd(exec_error);
      return result;
    }
    close_fd(exec_error);
  }
  ::fcntl(to_child, F_SETFL, O_NONBLOCK);
  // A hook that does not read its input must not kill the agent with SIGPIPE; the agent has
  // no use for the signal anywhere (its sockets report EPIPE as errors too).
  ::signal(SIGPIPE, SIG_IGN);

  Tail tail;
  std::string partial;
  auto emit = [&](std::string line) {
    if (line.size() > kMaxLine) line.resize(kMaxLine);
    tail.add(line);
    if (on_line) on_line(line);
  };
  std::size_t written = 0;
  if (run.input.empty()) close_fd(to_child);
  const auto deadline = Clock::now() + run.timeout;
  std::optional<Clock::time_point> killed_at;
  HookResult::End end = HookResult::End::kExited;

  while (from_child >= 0) {
    if (!killed_at && (stop.stop_requested() || Clock::now() >= deadline)) {
      end = stop.stop_requested() ? HookResult::End::kStopped : HookResult::End::kTimedOut;
      ::kill(-pid, SIGTERM);
      killed_at = Clock::now();
      close_fd(to_child);
    }
    if (killed_at && Clock::now() - *killed_at >= run.kill_grace) {
      ::kill(-pid, SIGKILL);
      break;  // its output may never close if a grandchild kept it: stop reading
    }
    pollfd fds[2];
    nfds_t n = 0;
    fds[n++] = {from_child, POLLIN, 0};
    if (to_child >= 0) fds[n++] = {to_child, POLLOUT, 0};
    if (::poll(fds, n, 100) < 0 && errno != EINTR) break;
    if (to_child >= 0 && n == 2 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = ::write(to_child, run.input.data() + written, run.input.size() - written);
      if (w > 0) written += static_cast<std::size_t>(w);
      if (w < 0 && errno != EAGAIN && errno != EINTR) written = run.input.size();
      if (written >= run.input.size()) close_fd(to_child);
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      char buffer[4096];
      ssize_t r = ::read(from_child, buffer, sizeof(buffer));
      if (r <= 0) {
        if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        close_fd(from_child);
        break;
      }
      partial.append(buffer, static_cast<std::size_t>(r));
      for (auto nl = partial.find('\n'); nl != std::string::npos; nl = partial.find('\n')) {
        emit(partial.substr(0, nl));
        partial.erase(0, nl + 1);
      }
      if (partial.size() > kMaxLine) {
        emit(partial);
        partial.clear();
      }
    }
  }
  if (!partial.empty()) emit(partial);
  close_fd(to_child);
  close_fd(from_child);

  // The hook closed its output (or was killed): wait for it to exit, killing it if it
  // lingers. Its exit is seen without reaping it (WNOWAIT), so that its process group, which
  // may hold what it left running, is still its own when killed; then it is reaped.
  for (;;) {
    siginfo_t info{};
    int flags = WEXITED | WNOWAIT | (killed_at ? 0 : WNOHANG);
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, flags) != 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (info.si_pid == pid) break;
    if (!killed_at && !stop.stop_requested() && Clock::now() < deadline) {
      ::usleep(20'000);
      continue;
    }
    end = stop.stop_requested() ? HookResult::End::kStopped : HookResult::End::kTimedOut;
    ::kill(-pid, SIGKILL);
    killed_at = Clock::now();
  }
  ::kill(-pid, SIGKILL);  // whatever it left behind in its group
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.end = end;
  if (end == HookResult::End::kExited) {
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string text = tail.text();
  if (end == HookResult::End::kTimedOut)
    text += "(time limit " + format_duration(run.timeout) + ")";
  result.tail = text;
  return result;
}

}  // namespace gpurent::agent
