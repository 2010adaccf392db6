// Starts the real gpurentd binary on port 0 for end-to-end tests, and stops it.
#pragma once

#include <sys/types.h>
#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace gpurent::testing {

struct ServerOptions {
  std::string database_url;        // empty: the server runs its own embedded cluster
  std::vector<std::string> flags;  // extra --key=value flags
  std::map<std::string, std::string> env;
  bool test_mode = true;
  // --lifecycle_wake: off by default, so that the lifecycle moves rentals on its interval
  // alone: a rental booked "now" stays `scheduled` for the interval's first seconds, and a
  // test that steps the lifecycle itself (a long interval, POST /v1/test/lifecycle/run) is
  // the only one to move it. FleetsimWakeE2E and the chaos suite run with it on.
  bool lifecycle_wake = false;
  // --burn_ins: off by default, so that a rental's handover is its provision and its access,
  // as the tests that play the agent by hand expect; BurnInE2E and the chaos suite run with it.
  bool burn_ins = false;
  bool wait_ready = true;  // wait for the port file (the server is listening)
};

// When the harness stops a server (the destructor, or stop()), it must exit 0 after
// SIGTERM and its log must hold no sanitizer report; otherwise the owning test fails with
// the report or the log's tail. A test that ends the process itself (wait_exit) asserts the
// exit code it expects; the log is scanned all the same.
class ServerProcess {
 public:
  explicit ServerProcess(ServerOptions options);
  ~ServerProcess();  // stop(), failing the current test with its verdict
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  // The agent listener's port (TLS); 0 when it is off.
  int agent_port() const { return agent_port_; }
  // The folder of the server's agents' CA (ca.crt, ca.key).
  std::string agent_pki_dir() const { return dir_ + "/pki"; }
  std::string ssh_ca_dir() const { return dir_ + "/ssh-ca"; }
  pid_t pid() const { return pid_; }

  void send_signal(int signal);
  // Waits for the process to exit; returns its exit code (-1 when killed by a signal, -2
  // on timeout).
  int wait_exit(std::chrono::milliseconds timeout);
  bool running();

  // Everything the server wrote to stderr so far.
  std::string logs() const;

  // SIGTERM (SIGKILL after 30 s) unless it has exited, then the verdict: empty when all is
  // well, otherwise what went wrong (exit code or signal, the sanitizer report or the log's
  // tail). The caller now owns the verdict: the destructor no longer fails the test with it.
  // Idempotent: later calls answer the same.
  [[nodiscard]] std::string stop();

 private:
  int wait_for_exit(std::chrono::milliseconds timeout);
  const std::string& finish();

  pid_t pid_ = -1;
  int port_ = 0;
  int agent_port_ = 0;
  int exit_code_ = -3;
  int term_signal_ = 0;        // the signal that ended it, if any
  bool exit_awaited_ = false;  // the test collected the exit itself (wait_exit)
  bool stopped_ = false;
  bool verdict_taken_ = false;
  std::string verdict_;
  std::string dir_;  // port file and log live here
};

}  // namespace gpurent::testing
