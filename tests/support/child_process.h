// A program the test starts and leaves running (an agent, the fleet simulator), its output
// in a log file; stopped with a signal by the test, killed at the end otherwise.
#pragma once

#include "tests/support/wait_for.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpurent::testing {

class ChildProcess {
 public:
  ChildProcess(const std::string& program, std::vector<std::string> args, std::filesystem::path log)
      : log_(std::move(log)) {
    args.insert(args.begin(), program);
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~ChildProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Signals it and waits for it to end; its exit code, or -signal when a signal ended it.
  int stop(int signal, std::chrono::seconds limit = std::chrono::seconds(20)) {
    kill(pid_, signal);
    int status = 0;
    bool ended = wait_for([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, limit);
    if (!ended) return 1000;
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  }
  // Whether it has ended (reaped here; stop() then has nothing to do).
  bool exited() {
    if (pid_ <= 0) return true;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
    pid_ = -1;
    return true;
  }
  std::string log() const {
    std::ifstream in(log_);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  std::filesystem::path log_;
  pid_t pid_ = -1;
};

}  // namespace gpurent::testing
