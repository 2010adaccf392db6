// /readyz follows the database: 503 while PostgreSQL is down, 200 again once it is back,
// without restarting gpurentd; 503 while the schema is behind.
#include "core/embedded_postgres.h"
#include "tests/support/http_client.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace gpurent::testing::readiness_e2e {

using namespace std::chrono_literals;

// Polls /readyz until it answers `status` or the deadline passes; returns the last status.
int wait_for_readyz(int port, int status, std::chrono::seconds deadline = 20s) {
  auto until = std::chrono::steady_clock::now() + deadline;
  int last = 0;
  while (std::chrono::steady_clock::now() < until) {
    last = http_request(port, "GET", "/readyz").status;
    if (last == status) return last;
    std::this_thread::sleep_for(100ms);
  }
  return last;
}

TEST(Readiness, FollowsTheDatabaseDownAndBackUp) {
  // A cluster of this test's own: stopping the run's shared one would break other tests.
  std::string dir = make_temp_dir("gpurent-readyz");
  EmbeddedPostgres pg({.data_dir = dir + "/pg", .durable = false});
  pg.start();
  ServerProcess server({.database_url = pg.url()});
  pid_t pid = server.pid();
  EXPECT_EQ(wait_for_readyz(server.port(), 200), 200) << server.logs();

  pg.stop();
  auto down = http_request(server.port(), "GET", "/readyz");
  EXPECT_EQ(down.status, 503);
  EXPECT_EQ(down.json()["error"]["code"], "unavailable");
  EXPECT_EQ(http_request(server.port(), "GET", "/healthz").status, 200)
      << "liveness does not depend on the database";

  pg.start();
  EXPECT_EQ(wait_for_readyz(server.port(), 200), 200) << server.logs();
  EXPECT_EQ(server.pid(), pid);
  EXPECT_TRUE(server.running()) << "no restart was needed";
  std::filesystem::remove_all(dir);
}

TEST(Readiness, NotReadyWhileTheSchemaIsBehind) {
  TestDatabase db(TestDatabase::Kind::kEmpty);
  ServerProcess server({.database_url = db.url(), .flags = {"--migrate_on_start=false"}});
  auto r = http_request(server.port(), "GET", "/readyz");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.json()["error"]["details"]["schema_version"], 0);
  EXPECT_GE(r.json()["error"]["details"]["expected_schema_version"].get<int>(), 1);
}

}  // namespace gpurent::testing::readiness_e2e
