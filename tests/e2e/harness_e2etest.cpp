// The harness itself, end to end: a server that leaks, or dies, fails the test that owns it.
#include "tests/support/http_client.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <csignal>

namespace gpurent::testing::harness_e2e {

using namespace std::chrono_literals;

// EXPECT_NONFATAL_FAILURE may only name globals.
ServerProcess* g_server = nullptr;

bool sanitizer_build() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#else
  return false;
#endif
}

TEST(HarnessE2E, AServerThatLeaksFailsItsTestWithTheReport) {
  if (!sanitizer_build()) GTEST_SKIP() << "LeakSanitizer runs in the sanitizer build only";
  TestDatabase db;
  g_server = new ServerProcess({.database_url = db.url()});
  auto r = http_request(g_server->port(), "POST", "/v1/test/leak");
  ASSERT_EQ(r.status, 200) << r.body;
  // Deleting the server stops it, as the end of any test does.
  EXPECT_NONFATAL_FAILURE(
      {
        delete g_server;
        g_server = nullptr;
      },
      "Direct leak of 4242 byte(s)");
}

TEST(HarnessE2E, TheVerdictNamesTheExitCodeAndTheReport) {
  if (!sanitizer_build()) GTEST_SKIP() << "LeakSanitizer runs in the sanitizer build only";
  TestDatabase db;
  ServerProcess server({.database_url = db.url()});
  ASSERT_EQ(http_request(server.port(), "POST", "/v1/test/leak").status, 200);
  std::string verdict = server.stop();
  EXPECT_NE(verdict.find("LeakSanitizer: detected memory leaks"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("leak_on_purpose"), std::string::npos) << "the report's stack" << verdict;
  EXPECT_EQ(server.stop(), verdict) << "stop() is idempotent";
  EXPECT_NE(server.wait_exit(0ms), 0) << "LeakSanitizer makes the exit code non-zero";
}

TEST(HarnessE2E, AServerKilledDuringTheTestFailsIt) {
  TestDatabase db;
  g_server = new ServerProcess({.database_url = db.url()});
  ASSERT_EQ(http_request(g_server->port(), "GET", "/healthz").status, 200);
  ::kill(g_server->pid(), SIGKILL);  // as a crash would, with no report
  EXPECT_NONFATAL_FAILURE(
      {
        delete g_server;
        g_server = nullptr;
      },
      "was ended by signal 9");
}

TEST(HarnessE2E, AServerThatExitsCleanlyPasses) {
  TestDatabase db;
  ServerProcess server({.database_url = db.url()});
  ASSERT_EQ(http_request(server.port(), "GET", "/readyz").status, 200);
  EXPECT_EQ(server.stop(), "");
  EXPECT_EQ(server.wait_exit(0ms), 0);
}

}  // namespace gpurent::testing::harness_e2e
