// gpurentd as a process: its documented keys, start-up errors, graceful shutdown, pool
// exhaustion, embedded PostgreSQL, and several replicas on one database.
#include "core/subprocess.h"
#include "tests/support/http_client.h"
#include "tests/support/paths.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <csignal>
#include <fstream>
#include <future>
#include <latch>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

namespace gpurent::testing::lifecycle_e2e {

using namespace std::chrono_literals;

// How many requests of `db`'s database are inside pg_sleep (the test route's statement) now.
int requests_in_pg_sleep(const TestDatabase& db) {
  pqxx::connection c(db.url());
  pqxx::nontransaction tx(c);
  return tx
      .exec(
          "SELECT count(*) FROM pg_stat_activity"
          " WHERE datname = current_database() AND wait_event = 'PgSleep'")[0][0]
      .as<int>();
}

// key -> {environment variable, default}.
using KeyDocs = std::map<std::string, std::pair<std::string, std::string>>;

std::string trimmed_cell(std::string cell) {
  std::erase(cell, '`');
  auto b = cell.find_first_not_of(' ');
  auto e = cell.find_last_not_of(' ');
  return b == std::string::npos ? "" : cell.substr(b, e - b + 1);
}

// The rows of README's configuration table: | `key` | `ENV` | `default` | meaning |.
KeyDocs readme_configuration_table() {
  std::ifstream in(source_dir() + "/README.md");
  EXPECT_TRUE(in) << source_dir() << "/README.md";
  KeyDocs out;
  bool in_section = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#", 0) == 0) in_section = line == "### Configuration";
    if (!in_section || line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::istringstream row(line);
    for (std::string cell; std::getline(row, cell, '|');) cells.push_back(trimmed_cell(cell));
    EXPECT_GE(cells.size(), 5u) << line;
    if (cells.size() >= 5) out[cells[1]] = {cells[2], cells[3]};
  }
  return out;
}

// What `gpurentd --help` lists: "  --key  ENV  default" lines, "(empty)" for no default.
KeyDocs help_keys() {
  auto r = run_subprocess({gpurentd_path(), "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  KeyDocs out;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  --", 0) != 0) continue;
    std::istringstream words(line);
    std::string name, env, default_value;
    words >> name >> env >> default_value;
    out[name.substr(2)] = {env, default_value == "(empty)" ? "" : default_value};
  }
  return out;
}

TEST(Lifecycle, ReadmeDocumentsEveryKeyAsHelpDoes) {
  // --help prints the keys that load_config reads, with their real defaults (core's config
  // tests check that); README's table must say the same.
  KeyDocs help = help_keys();
  ASSERT_TRUE(help.count("listen")) << "no keys parsed from --help";
  help.erase("config");  // the file of keys, described above the table
  KeyDocs readme = readme_configuration_table();
  for (const auto& [key, doc] : help) {
    auto row = readme.find(key);
    if (row == readme.end()) {
      ADD_FAILURE() << key << " is missing from README's table";
      continue;
    }
    EXPECT_EQ(row->second, doc) << key << ": README's (environment, default) differ from --help";
  }
  for (const auto& [key, doc] : readme) {
    EXPECT_TRUE(help.count(key)) << key << " is in README's table but not in --help";
  }
}

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
  ASSERT_TRUE(wait_for([&] { return requests_in_pg_sleep(db) == 1; })) << server.logs();
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
  ASSERT_TRUE(wait_for([&] { return requests_in_pg_sleep(db) == 1; })) << server.logs();
  server.send_signal(SIGTERM);
  auto refused = [&] {
    try {
      RawConnection late(server.port());
      late.send(build_request("GET", "/healthz"));
      late.read_response(2s);
      return false;
    } catch (const std::runtime_error&) {
      return true;
    }
  };
  EXPECT_TRUE(wait_for(refused)) << "the listener closes once shutdown starts";
  EXPECT_TRUE(server.running()) << "refused while the slow request still runs, not after exit";
  EXPECT_EQ(slow.read_response(10s).status, 200);
}

TEST(Lifecycle, ShutdownDeadlineBoundsTheWait) {
  TestDatabase db;
  ServerProcess server({.database_url = db.url(), .flags = {"--shutdown_deadline=500ms"}});
  RawConnection slow(server.port());
  ASSERT_TRUE(slow.send(build_request("GET", "/v1/test/sleep?ms=20000")));
  ASSERT_TRUE(wait_for([&] { return requests_in_pg_sleep(db) == 1; })) << server.logs();
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
  // The one connection is busy once its request sleeps.
  ASSERT_TRUE(wait_for([&] { return requests_in_pg_sleep(db) == 1; })) << server.logs();
  auto start = std::chrono::steady_clock::now();
  auto r = http_request(server.port(), "GET", "/v1/test/sleep?ms=0");
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.json()["error"]["code"], "unavailable");
  EXPECT_GE(waited, 250ms) << "the request waits for a connection before giving up";
  EXPECT_EQ(holder.get().status, 200);
  // With the connection free again, the same request succeeds.
  EXPECT_EQ(http_request(server.port(), "GET", "/v1/test/sleep?ms=0").status, 200);
  // At least this request's wait; the replica's background workers (the rental lifecycle,
  // webhook deliveries) share the one connection and may have given up waiting too.
  EXPECT_GE(read_metric(server.port(), "gpurent_db_pool_wait_timeouts_total"), 1);
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
    // The line is printed right after the listener is up, so it may trail the port file.
    wait_for([&] { return !password_in(server.logs()).empty(); });
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
  wait_for([&] { return !password_in(again.logs()).empty(); });
  EXPECT_EQ(password_in(again.logs()), first) << "a restart prints the same login";
  pqxx::connection c(db.url());
  pqxx::nontransaction tx(c);
  EXPECT_EQ(tx.exec("SELECT count(*) FROM nodes")[0][0].as<int>(), 8)
      << "a restart does not seed the fleet again";
  std::filesystem::remove_all(dir);
}

TEST(Lifecycle, DemoModeSeedsACustomerWithADemoBalanceOnce) {
  TestDatabase db;
  std::string dir = make_temp_dir("gpurent-demo");
  const std::string line = "demo customer login: demo@gpurent.local  password: ";
  auto password_in = [&](const std::string& logs) {
    auto at = logs.find(line);
    if (at == std::string::npos) return std::string();
    at += line.size();
    return logs.substr(at, logs.find('\n', at) - at);
  };
  auto balance_of = [](int port, const std::string& password) {
    auto r =
        http_request(port, "POST", "/v1/auth/login",
                     nlohmann::json{{"email", "demo@gpurent.local"}, {"password", password}}.dump(),
                     {{"Content-Type", "application/json"}});
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["user"]["is_platform_admin"], false) << r.body;
    std::string cookie = r.header("set-cookie");
    auto balance = http_request(port, "GET", "/v1/billing/balance", "",
                                {{"Cookie", cookie.substr(0, cookie.find(';'))}});
    EXPECT_EQ(balance.status, 200) << balance.body;
    return balance.json();
  };
  std::string first;
  {
    ServerProcess server(
        {.database_url = db.url(), .flags = {"--demo=true", "--data_dir=" + dir + "/pg"}});
    wait_for([&] { return !password_in(server.logs()).empty(); });
    first = password_in(server.logs());
    ASSERT_FALSE(first.empty()) << server.logs();
    // Printed beside the admin's login.
    EXPECT_NE(server.logs().find("demo admin login: admin@gpurent.local  password: "),
              std::string::npos);
    auto balance = balance_of(server.port(), first);
    EXPECT_EQ(balance["available"],
              nlohmann::json({{"amount_minor", 100000000}, {"currency", "RUB"}}))
        << balance;
    auto kept = std::filesystem::status(dir + "/demo-customer-password").permissions();
    EXPECT_EQ(kept, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }
  ServerProcess again(
      {.database_url = db.url(), .flags = {"--demo=true", "--data_dir=" + dir + "/pg"}});
  wait_for([&] { return !password_in(again.logs()).empty(); });
  EXPECT_EQ(password_in(again.logs()), first) << "a restart prints the same login";
  EXPECT_EQ(balance_of(again.port(), first)["available"]["amount_minor"], 100000000)
      << "a restart credits nothing more";
  pqxx::connection c(db.url());
  pqxx::nontransaction tx(c);
  EXPECT_EQ(tx.exec("SELECT count(*) FROM orgs WHERE name = 'Demo customer'")[0][0].as<int>(), 1);
  std::filesystem::remove_all(dir);
}

TEST(Lifecycle, ReplicasStartTogetherOnOneDatabase) {
  TestDatabase db(TestDatabase::Kind::kEmpty);  // both must race to migrate it
  std::vector<std::unique_ptr<ServerProcess>> replicas;
  std::vector<std::future<std::unique_ptr<ServerProcess>>> starting;
  constexpr int kReplicas = 3;
  std::latch go(kReplicas);  // started together, not one thread's start-up after another's
  for (int i = 0; i < kReplicas; ++i) {
    starting.push_back(std::async(std::launch::async, [&] {
      go.arrive_and_wait();
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

}  // namespace gpurent::testing::lifecycle_e2e
