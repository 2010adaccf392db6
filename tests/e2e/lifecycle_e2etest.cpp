// gpurentd as a process: start-up errors, graceful shutdown, pool exhaustion, embedded
// PostgreSQL, and several replicas on one database.
#include "tests/support/http_client.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <csignal>
#include <future>

namespace gpurent::testing {
namespace {

using namespace std::chrono_literals;

TEST(Lifecycle, BadConfigurationStopsStartupWithOneClearLine) {
  ServerProcess server({.flags = {"--http_body_limit=lots"}, .wait_ready = false});
  EXPECT_EQ(server.wait_exit(10s), 2);
  std::string log = server.logs();
  EXPECT_NE(log.find("http_body_limit"), std::string::npos) << log;
  EXPECT_NE(log.find("lots"), std::string::npos) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
}

TEST(Lifecycle, BadEnvironmentValueNamesTheVariable) {
  ServerProcess server({.env = {{"GPURENT_DB_POOL_SIZE", "-3"}}, .wait_ready = false});
  EXPECT_EQ(server.wait_exit(10s), 2);
  EXPECT_NE(server.logs().find("GPURENT_DB_POOL_SIZE"), std::string::npos) << server.logs();
}

TEST(Lifecycle, SigtermDuringASlowRequestLetsItFinish) {
  TestDatabase db;
  ServerProcess server({.database_url = db.url()});
  RawConnection slow(server.port());
  ASSERT_TRUE(slow.send(build_request("GET", "/v1/test/sleep?ms=1500")));
  std::this_thread::sleep_for(300ms);  // the request is now inside pg_sleep
  auto signalled = std::chrono::steady_clock::now();
  server.send_signal(SIGTERM);

  auto r = slow.read_response(10s);
  EXPECT_EQ(r.status, 200) << server.logs();
  EXPECT_EQ(r.json()["slept_ms"], 1500);
  EXPECT_EQ(r.header("connection"), "close") << "a draining server closes kept-alive connections";
  EXPECT_EQ(server.wait_exit(10s), 0) << server.logs();
  EXPECT_GE(std::chrono::steady_clock::now() - signalled, 1000ms);
  // Once gone, nothing listens on the port any more.
  EXPECT_THROW(RawConnection late(server.port()), std::runtime_error);
}

TEST(Lifecycle, DrainingServerAcceptsNoNewConnections) {
  TestDatabase db;
  ServerProcess server({.database_url = db.url()});
  RawConnection slow(server.port());
  ASSERT_TRUE(slow.send(build_request("GET", "/v1/test/sleep?ms=1500")));
  std::this_thread::sleep_for(300ms);
  server.send_signal(SIGTERM);
  std::this_thread::sleep_for(200ms);
  bool refused = false;
  try {
    RawConnection late(server.port());
    late.send(build_request("GET", "/healthz"));
    late.read_response(2s);
  } catch (const std::runtime_error&) {
    refused = true;
  }
  EXPECT_TRUE(refused) << "the listener closes as soon as shutdown starts";
  EXPECT_EQ(slow.read_response(10s).status, 200);
}

TEST(Lifecycle, ShutdownDeadlineBoundsTheWait) {
  TestDatabase db;
  ServerProcess server({.database_url = db.url(), .flags = {"--shutdown_deadline=500ms"}});
  RawConnection slow(server.port());
  ASSERT_TRUE(slow.send(build_request("GET", "/v1/test/sleep?ms=20000")));
  std::this_thread::sleep_for(300ms);
  auto signalled = std::chrono::steady_clock::now();
  server.send_signal(SIGTERM);
  EXPECT_NE(server.wait_exit(15s), -2);
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, 5s)
      << "in-flight database work is cancelled once the deadline passes";
}

TEST(Lifecycle, PoolExhaustionWaitsThenAnswers503) {
  TestDatabase db;
  ServerProcess server(
      {.database_url = db.url(), .flags = {"--db_pool_size=1", "--db_pool_wait=300ms"}});
  auto holder = std::async(std::launch::async, [&] {
    return http_request(server.port(), "GET", "/v1/test/sleep?ms=2000");
  });
  std::this_thread::sleep_for(400ms);  // the one connection is now busy
  auto start = std::chrono::steady_clock::now();
  auto r = http_request(server.port(), "GET", "/v1/test/sleep?ms=0");
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.json()["error"]["code"], "unavailable");
  EXPECT_GE(waited, 250ms) << "the request waits for a connection before giving up";
  EXPECT_EQ(holder.get().status, 200);
  // With the connection free again, the same request succeeds.
  EXPECT_EQ(http_request(server.port(), "GET", "/v1/test/sleep?ms=0").status, 200);
  auto metrics = http_request(server.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("gpurent_db_pool_wait_timeouts_total 1"), std::string::npos) << metrics;
}

TEST(Lifecycle, EmbeddedPostgresWhenNoDatabaseUrl) {
  std::string dir = make_temp_dir("gpurent-embedded-e2e");
  std::string data_dir = dir + "/pg";
  {
    ServerProcess server({.flags = {"--data_dir=" + data_dir}});
    auto r = http_request(server.port(), "GET", "/readyz");
    EXPECT_EQ(r.status, 200) << r.body << server.logs();
    EXPECT_TRUE(std::filesystem::exists(data_dir + "/PG_VERSION"));

    // A second gpurentd on the same folder stops with a clear error and harms nothing.
    ServerProcess second({.flags = {"--data_dir=" + data_dir}, .wait_ready = false});
    EXPECT_EQ(second.wait_exit(20s), 2) << second.logs();
    EXPECT_NE(second.logs().find("in use by another gpurentd"), std::string::npos) << second.logs();
    EXPECT_EQ(http_request(server.port(), "GET", "/readyz").status, 200);

    server.send_signal(SIGTERM);
    EXPECT_EQ(server.wait_exit(30s), 0) << server.logs();
  }
  // The server stopped its PostgreSQL on the way out.
  EXPECT_FALSE(std::filesystem::exists(data_dir + "/postmaster.pid"));
  // And a restart finds the same cluster, already migrated.
  {
    ServerProcess again({.flags = {"--data_dir=" + data_dir}});
    EXPECT_EQ(http_request(again.port(), "GET", "/readyz").status, 200);
    EXPECT_EQ(again.logs().find("initialising embedded PostgreSQL"), std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST(Lifecycle, DemoModePrintsAWorkingAdminLoginAndSeedsTheFleetOnce) {
  TestDatabase db;
  std::string dir = make_temp_dir("gpurent-demo");
  auto password_in = [](const std::string& logs) {
    auto at = logs.find("demo admin login: admin@gpurent.local  password: ");
    if (at == std::string::npos) return std::string();
    at += std::string("demo admin login: admin@gpurent.local  password: ").size();
    return logs.substr(at, logs.find('\n', at) - at);
  };
  std::string first;
  {
    ServerProcess server(
        {.database_url = db.url(), .flags = {"--demo=true", "--data_dir=" + dir + "/pg"}});
    // The line is printed right after the listener is up; give stdout a moment.
    for (int i = 0; i < 50 && password_in(server.logs()).empty(); ++i)
      std::this_thread::sleep_for(50ms);
    first = password_in(server.logs());
    ASSERT_FALSE(first.empty()) << server.logs();
    auto r =
        http_request(server.port(), "POST", "/v1/auth/login",
                     nlohmann::json{{"email", "admin@gpurent.local"}, {"password", first}}.dump(),
                     {{"Content-Type", "application/json"}});
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["user"]["is_platform_admin"], true);
    // The demo fleet is there: every node available, images and a price list in RUB.
    std::string cookie = r.header("set-cookie");
    std::map<std::string, std::string> session = {{"Cookie", cookie.substr(0, cookie.find(';'))}};
    auto nodes = http_request(server.port(), "GET", "/v1/admin/nodes", "", session);
    ASSERT_EQ(nodes.status, 200) << nodes.body;
    auto node_list = nodes.json();
    EXPECT_EQ(node_list["items"].size(), 8u);
    for (const auto& n : node_list["items"]) EXPECT_EQ(n["state"], "available") << n.dump();
    auto images = http_request(server.port(), "GET", "/v1/images", "", session);
    EXPECT_EQ(images.json()["items"].size(), 5u) << images.body;
    auto prices = http_request(server.port(), "GET", "/v1/admin/prices", "", session);
    auto price_list = prices.json();
    ASSERT_FALSE(price_list["items"].empty()) << prices.body;
    EXPECT_EQ(price_list["items"][0]["price_per_day"]["currency"], "RUB");
  }
  ServerProcess again(
      {.database_url = db.url(), .flags = {"--demo=true", "--data_dir=" + dir + "/pg"}});
  for (int i = 0; i < 50 && password_in(again.logs()).empty(); ++i)
    std::this_thread::sleep_for(50ms);
  EXPECT_EQ(password_in(again.logs()), first) << "a restart prints the same login";
  pqxx::connection c(db.url());
  pqxx::nontransaction tx(c);
  EXPECT_EQ(tx.exec("SELECT count(*) FROM nodes")[0][0].as<int>(), 8)
      << "a restart does not seed the fleet again";
  std::filesystem::remove_all(dir);
}

TEST(Lifecycle, ReplicasStartTogetherOnOneDatabase) {
  TestDatabase db(TestDatabase::Kind::kEmpty);  // both must race to migrate it
  std::vector<std::unique_ptr<ServerProcess>> replicas;
  std::vector<std::future<std::unique_ptr<ServerProcess>>> starting;
  for (int i = 0; i < 3; ++i) {
    starting.push_back(std::async(std::launch::async, [&] {
      return std::make_unique<ServerProcess>(ServerOptions{.database_url = db.url()});
    }));
  }
  for (auto& s : starting) replicas.push_back(s.get());
  for (auto& r : replicas) {
    EXPECT_EQ(http_request(r->port(), "GET", "/readyz").status, 200) << r->logs();
  }
  int applied_now = 0;
  for (auto& r : replicas) {
    if (r->logs().find("\"msg\":\"applying migration") != std::string::npos) ++applied_now;
  }
  EXPECT_EQ(applied_now, 1) << "exactly one replica applies the migrations";
}

}  // namespace
}  // namespace gpurent::testing
