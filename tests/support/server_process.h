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
  bool wait_ready = true;  // wait for the port file (the server is listening)
};

class ServerProcess {
 public:
  explicit ServerProcess(ServerOptions options);
  ~ServerProcess();  // SIGTERM, then SIGKILL after 15 s
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }

  void send_signal(int signal);
  // Waits for the process to exit; returns its exit code (-1 when killed by a signal, -2
  // on timeout).
  int wait_exit(std::chrono::milliseconds timeout);
  bool running();

  // Everything the server wrote to stderr so far.
  std::string logs() const;

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  int exit_code_ = -3;
  std::string dir_;  // port file and log live here
};

}  // namespace gpurent::testing
