// Runs a private PostgreSQL cluster in a local folder: initdb, start on a unix socket, stop.
#pragma once

#include <optional>
#include <string>

#include "core/subprocess.h"

namespace gpurent {

struct EmbeddedPostgresOptions {
  std::string data_dir;  // created by initdb when missing
  std::string bin_dir = "/usr/lib/postgresql/15/bin";
  std::string database = "gpurent";      // created on first start
  std::string system_user = "postgres";  // who runs the server when we are root
  // false: a throwaway cluster (the test suite's), where a crash may lose everything:
  // initdb --no-sync, and fsync, synchronous_commit and full_page_writes off. Production
  // (make run) keeps the defaults.
  bool durable = true;
};

// Owns the cluster for its lifetime. While one instance holds a data folder, another (in
// this or any process) gets a ConfigError naming the holder instead of touching it.
class EmbeddedPostgres {
 public:
  explicit EmbeddedPostgres(EmbeddedPostgresOptions options);
  ~EmbeddedPostgres();
  EmbeddedPostgres(const EmbeddedPostgres&) = delete;
  EmbeddedPostgres& operator=(const EmbeddedPostgres&) = delete;

  // Initialises the cluster if needed, starts it (or adopts a server that a crashed
  // owner left running), waits until it accepts connections, creates the database.
  void start();
  // Fast shutdown; waits for the server to exit. Idempotent.
  void stop();
  bool running() const { return running_; }
  // Leaves the server running when this object goes away (a harness that outlives us
  // stops it later through another instance, which adopts it).
  void detach() { running_ = false; }

  // The URL of `options.database` on the server of a gpurentd that holds this data folder
  // now, when that server is up and accepts a connection; nullopt when nothing holds the
  // folder (start an EmbeddedPostgres instead) or its server is not ready. It takes no lock
  // and starts or stops nothing, so a short-lived command (`gpurentd admin create`) can
  // work beside a serving gpurentd.
  static std::optional<std::string> running_server_url(const EmbeddedPostgresOptions& options);

  // libpq URL for a database of this cluster (default: the configured one).
  std::string url(const std::string& database = "") const;
  const std::string& data_dir() const { return data_dir_; }
  const std::string& socket_dir() const { return socket_dir_; }

 private:
  void lock_data_dir();
  void ensure_reachable(const std::string& dir);
  void prepare_dir(const std::string& dir);
  SubprocessResult run(const std::vector<std::string>& argv);
  void create_database();

  EmbeddedPostgresOptions options_;
  std::string data_dir_;    // absolute
  std::string socket_dir_;  // absolute
  std::optional<RunAs> run_as_;
  int lock_fd_ = -1;
  bool running_ = false;
};

}  // namespace gpurent
