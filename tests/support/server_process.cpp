// ServerProcess: fork/exec gpurentd with its output in a temp folder.
#include "tests/support/server_process.h"

#include "tests/support/paths.h"
#include "tests/support/sanitizer_report.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace gpurent::testing {

ServerProcess::ServerProcess(ServerOptions options) {
  char dir[] = "/tmp/gpurentd-test-XXXXXX";
  if (!mkdtemp(dir)) throw std::runtime_error("mkdtemp failed");
  dir_ = dir;
  chmod(dir, 0755);  // an embedded cluster inside runs as the postgres user when we are root
  std::string port_file = dir_ + "/port";
  std::vector<std::string> args = {gpurentd_path(), "serve", "--listen=127.0.0.1:0",
                                   "--port_file=" + port_file,
                                   // Its own CA and a free port: test servers run side by side.
                                   "--agent_listen=127.0.0.1:0", "--agent_pki_dir=" + dir_ + "/pki",
                                   "--ssh_ca_dir=" + dir_ + "/ssh-ca", "--log_format=json",
                                   "--io_threads=2", "--web_root=" + source_dir() + "/web/public"};
  if (options.test_mode) {
    args.push_back("--test_mode=true");
    // Thousands of sign-ups and logins in a run: 1 MiB scrypt instead of 32 MiB (a hash in
    // about 3 ms instead of 100 here). Production's cost is held by core/tests/config_test.
    args.push_back("--password_hash_cost=10");
  }
  args.push_back(options.lifecycle_wake ? "--lifecycle_wake=true" : "--lifecycle_wake=false");
  args.push_back(options.burn_ins ? "--burn_ins=true" : "--burn_ins=false");
  if (options.database_url.empty()) {
    args.push_back("--data_dir=" + dir_ + "/pg");
  }
  for (const auto& f : options.flags) args.push_back(f);

  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    // The server's configuration comes from this test alone.
    if (kv.rfind("GPURENT_", 0) == 0 || kv.rfind("DATABASE_URL=", 0) == 0) continue;
    env.push_back(kv);
  }
  if (!options.database_url.empty()) env.push_back("DATABASE_URL=" + options.database_url);
  for (const auto& [k, v] : options.env) env.push_back(k + "=" + v);

  std::string log_path = dir_ + "/server.log";
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  if (!options.wait_ready) return;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(port_file);
    if (in >> port_) {
      in >> agent_port_;  // the second line, when the agent listener is on
      return;
    }
    if (!running()) {
      throw std::runtime_error("gpurentd exited during start-up (code " +
                               std::to_string(exit_code_) + "):\n" + logs());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("gpurentd did not start listening within 60 s:\n" + logs());
}

ServerProcess::~ServerProcess() {
  if (!verdict_taken_ && !finish().empty()) ADD_FAILURE() << verdict_;
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string ServerProcess::stop() {
  verdict_taken_ = true;
  return finish();
}

const std::string& ServerProcess::finish() {
  if (stopped_) return verdict_;
  stopped_ = true;
  bool stopped_by_harness = false;
  bool hung = false;
  if (running()) {
    stopped_by_harness = true;
    send_signal(SIGTERM);
    if (wait_for_exit(std::chrono::seconds(30)) == -2) {
      hung = true;
      send_signal(SIGKILL);
      wait_for_exit(std::chrono::seconds(10));
    }
  }
  std::string log = logs();
  std::string report = find_sanitizer_report(log);
  std::string pid = std::to_string(pid_);
  if (!report.empty()) {
    verdict_ = "gpurentd (pid " + pid + ") wrote a sanitizer report:\n" + report;
  } else if (hung) {
    verdict_ = "gpurentd (pid " + pid + ") did not exit within 30 s of SIGTERM";
  } else if ((stopped_by_harness || !exit_awaited_) && term_signal_ != 0) {
    verdict_ = "gpurentd (pid " + pid + ") was ended by signal " + std::to_string(term_signal_);
  } else if ((stopped_by_harness || !exit_awaited_) && exit_code_ != 0) {
    verdict_ = "gpurentd (pid " + pid + ") exited with code " + std::to_string(exit_code_) +
               (stopped_by_harness ? " after SIGTERM" : " before the test ended");
  }
  if (!verdict_.empty() && report.empty()) {
    constexpr std::size_t kTail = 4000;
    verdict_ +=
        "; the end of its log:\n" + (log.size() > kTail ? log.substr(log.size() - kTail) : log);
  }
  return verdict_;
}

void ServerProcess::send_signal(int signal) {
  if (pid_ > 0) kill(pid_, signal);
}

bool ServerProcess::running() {
  if (pid_ <= 0 || exit_code_ != -3) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  term_signal_ = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return false;
}

int ServerProcess::wait_exit(std::chrono::milliseconds timeout) {
  exit_awaited_ = true;
  return wait_for_exit(timeout);
}

int ServerProcess::wait_for_exit(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return -2;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return exit_code_;
}

std::string ServerProcess::logs() const {
  std::ifstream in(dir_ + "/server.log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace gpurent::testing
