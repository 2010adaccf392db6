// What the chaos suite runs and breaks: its own durable PostgreSQL with slow commits, two
// gpurentd replicas on it, and a simulated fleet (gpurent-fleetsim) whose agents reach the
// replicas through a proxy the suite can cut.
#pragma once

#include "core/embedded_postgres.h"
#include "tests/chaos/tcp_proxy.h"
#include "tests/support/child_process.h"
#include "tests/support/server_process.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::testing::chaos {

// A cluster of its own (not the run's shared one, which it restarts): durable (fsync and
// synchronous commit on, as in production), with commit_delay so that each commit waits as
// on network storage, which widens the window in which a restart finds a COMMIT in flight.
class ChaosDatabase {
 public:
  ChaosDatabase(const std::string& dir, int commit_delay_us);
  ~ChaosDatabase();

  std::string url() const;
  // pg_ctl restart -m immediate: every backend killed without a checkpoint, crash recovery,
  // accepting again. Throws when it does not come back within 60 s.
  void restart_immediate();
  // Waits until a connection succeeds; false after `limit`.
  bool wait_accepting(std::chrono::milliseconds limit);

 private:
  std::unique_ptr<EmbeddedPostgres> pg_;
  std::optional<RunAs> run_as_;
  std::string data_dir_;
};

// One gpurentd replica that the suite can kill -9 and start again (ports change; the
// clients and the proxy ask for them). Every process it started must end without a
// sanitizer report; one stopped by the harness must also exit 0 (ServerProcess).
class Replica {
 public:
  Replica(int index, ServerOptions options);
  ~Replica();

  int port() const { return port_.load(); }
  int agent_port() const { return up_.load() ? agent_port_.load() : 0; }
  bool up() const { return up_.load(); }
  // Whether its process is still running (false after kill9 until restart).
  bool running();
  void kill9();
  void restart();
  // Stops the current process; every process's verdict (empty when all were well).
  std::string stop();

 private:
  void start();

  int index_;
  ServerOptions options_;
  std::mutex mutex_;
  std::unique_ptr<ServerProcess> process_;
  std::atomic<int> port_{0};
  std::atomic<int> agent_port_{0};
  std::atomic<bool> up_{false};
  std::vector<std::string> verdicts_;
};

// gpurent-fleetsim for the nodes of an enrolment file, through `proxy_port`.
class Fleet {
 public:
  Fleet(std::string dir, int proxy_port, std::string ca_file, int agents,
        std::chrono::milliseconds provision_delay);

  // The first start enrols from `enroll_file`; later ones reconnect from the state folder.
  void start(const std::string& enroll_file = "");
  // SIGKILL: the agents die mid-whatever, their connections with them.
  void kill9();
  // SIGTERM and its exit code.
  int stop();
  // The simulator's last status line (JSON), or an empty object.
  nlohmann::json last_status() const;
  std::string log() const;

 private:
  std::string dir_;
  int proxy_port_;
  std::string ca_file_;
  int agents_;
  std::chrono::milliseconds provision_delay_;
  int starts_ = 0;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace gpurent::testing::chaos
