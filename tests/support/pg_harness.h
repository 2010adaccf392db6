// The test run's PostgreSQL: one throwaway cluster per run, a fresh database per test.
#pragma once

#include "core/embedded_postgres.h"

#include <memory>
#include <string>

namespace gpurent::testing {

// A new folder under /tmp that the PostgreSQL system user can enter (mode 0755), for
// clusters that tests start themselves. Not removed automatically.
std::string make_temp_dir(const std::string& prefix = "gpurent-test");

// The same, for the run's throwaway cluster: on tmpfs (/dev/shm) when there is one with
// room, otherwise /tmp. Every test's database is hundreds of files copied from the template
// and removed after; on ext4 finding inodes for them took a tenth of PostgreSQL's CPU in
// the suite (docs/TESTING.md, "What makes it fast"). GPURENT_TEST_CLUSTER_PARENT names
// another parent folder.
std::string make_cluster_dir();

// Where the run's cluster is. Under CTest, the pg_cluster fixture started it and wrote its
// state file (GPURENT_TEST_STATE); a binary run by hand starts one for itself (make_cluster_dir).
class TestCluster {
 public:
  static TestCluster& get();
  // Stops a cluster this process started and removes its folder, which is on tmpfs, in
  // memory (no-op for the fixture's, which pg_cluster_stop removes).
  static void shutdown();

  // URL of a database in the cluster.
  std::string url(const std::string& database) const;
  // The migrated database that every TestDatabase is cloned from.
  static constexpr const char* kTemplate = "gpurent_template";

  // Creates the template: a database with every embedded migration applied.
  static void prepare_template(const std::string& admin_url, const std::string& template_url);

 private:
  std::string socket_dir_;
  std::unique_ptr<EmbeddedPostgres> owned_;
  std::string owned_dir_;  // the folder of owned_, removed once it has stopped
  friend class ClusterAccess;
};

// A database of its own for one test; dropped (with FORCE) when destroyed.
class TestDatabase {
 public:
  enum class Kind { kMigrated, kEmpty };
  explicit TestDatabase(Kind kind = Kind::kMigrated);
  ~TestDatabase();
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  const std::string& name() const { return name_; }
  std::string url() const;

 private:
  std::string name_;
};

}  // namespace gpurent::testing
