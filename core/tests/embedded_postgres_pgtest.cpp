// EmbeddedPostgres: initdb, start, stop, restart with data kept, lock against a second owner.
#include "core/embedded_postgres.h"
#include "core/error.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <filesystem>
#include <optional>

namespace gpurent {
namespace embedded_postgres_pgtest {

class EmbeddedPostgresTest : public ::testing::Test {
 protected:
  void SetUp() override { root_ = testing::make_temp_dir("gpurent-embedded"); }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::string root_;
};

int count_rows(const std::string& url, const std::string& table) {
  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  return tx.exec("SELECT count(*) FROM " + tx.quote_name(table))[0][0].as<int>();
}

std::string setting(const std::string& url, const std::string& name) {
  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  return tx.exec("SELECT current_setting(" + tx.quote(name) + ")")[0][0].as<std::string>();
}

TEST_F(EmbeddedPostgresTest, InitialisesStartsAndKeepsDataAcrossRestarts) {
  EmbeddedPostgres pg({.data_dir = root_ + "/pg"});  // as make run and production start it
  pg.start();
  EXPECT_TRUE(std::filesystem::exists(root_ + "/pg/PG_VERSION"));
  for (const char* name : {"fsync", "synchronous_commit", "full_page_writes"}) {
    EXPECT_EQ(setting(pg.url(), name), "on") << name << ": durable by default";
  }
  {
    pqxx::connection c(pg.url());
    pqxx::nontransaction tx(c);
    tx.exec("CREATE TABLE kept (x int); INSERT INTO kept VALUES (1), (2)");
  }
  pg.stop();
  EXPECT_THROW(pqxx::connection c(pg.url()), pqxx::broken_connection);
  pg.start();
  EXPECT_EQ(count_rows(pg.url(), "kept"), 2);
}

TEST_F(EmbeddedPostgresTest, ThrowawayClustersSkipTheDiskAndTheRunsClusterIsOne) {
  EmbeddedPostgres throwaway({.data_dir = root_ + "/pg", .durable = false});
  throwaway.start();
  testing::TestDatabase db;  // in the run's shared cluster
  for (const std::string& url : {throwaway.url(), db.url()}) {
    for (const char* name : {"fsync", "synchronous_commit", "full_page_writes"}) {
      EXPECT_EQ(setting(url, name), "off") << name << " " << url;
    }
  }
}

TEST_F(EmbeddedPostgresTest, ListensOnNoTcpPort) {
  EmbeddedPostgres pg({.data_dir = root_ + "/pg", .durable = false});
  pg.start();
  pqxx::connection c(pg.url());
  pqxx::nontransaction tx(c);
  EXPECT_EQ(tx.exec("SHOW listen_addresses")[0][0].as<std::string>(), "");
}

TEST_F(EmbeddedPostgresTest, SecondOwnerOfTheSameFolderIsRefusedClearly) {
  EmbeddedPostgres first({.data_dir = root_ + "/pg", .durable = false});
  first.start();
  try {
    EmbeddedPostgres second({.data_dir = root_ + "/pg", .durable = false});
    FAIL() << "a second owner must not touch a folder in use";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("in use by another gpurentd"), std::string::npos)
        << e.what();
  }
  // The first is unharmed.
  pqxx::connection c(first.url());
  EXPECT_TRUE(c.is_open());
}

TEST_F(EmbeddedPostgresTest, AdoptsAServerLeftRunningByACrashedOwner) {
  std::string url;
  {
    EmbeddedPostgres crashed({.data_dir = root_ + "/pg", .durable = false});
    crashed.start();
    url = crashed.url();
    crashed.detach();  // like a process that died without stopping its server
  }
  EmbeddedPostgres next({.data_dir = root_ + "/pg", .durable = false});
  next.start();
  pqxx::connection c(next.url());
  EXPECT_TRUE(c.is_open());
  next.stop();
  EXPECT_THROW(pqxx::connection c2(url), pqxx::broken_connection);
}

TEST_F(EmbeddedPostgresTest, LongFolderPathsGetASocketUnderTmp) {
  std::string deep = root_ + "/" + std::string(60, 'd') + "/" + std::string(40, 'e');
  EmbeddedPostgresOptions options{.data_dir = deep + "/pg", .durable = false};
  EmbeddedPostgres pg(options);
  EXPECT_EQ(pg.socket_dir().rfind("/tmp/gpurent-pg-", 0), 0u) << pg.socket_dir();
  pg.start();
  pqxx::connection c(pg.url());
  EXPECT_TRUE(c.is_open());
  EXPECT_EQ(EmbeddedPostgres::running_server_url(options), pg.url()) << "found from the folder";
}

TEST_F(EmbeddedPostgresTest, RunningServerUrlReachesTheHoldersServerWithoutTakingIt) {
  EmbeddedPostgresOptions options{.data_dir = root_ + "/pg", .durable = false};
  EXPECT_EQ(EmbeddedPostgres::running_server_url(options), std::nullopt) << "no folder yet";
  EmbeddedPostgres holder(options);
  EXPECT_EQ(EmbeddedPostgres::running_server_url(options), std::nullopt)
      << "held, but no server started yet";
  holder.start();
  auto url = EmbeddedPostgres::running_server_url(options);
  ASSERT_TRUE(url);
  EXPECT_EQ(*url, holder.url());
  {
    pqxx::connection c(*url);
    pqxx::nontransaction tx(c);
    EXPECT_EQ(tx.exec("SELECT current_database()")[0][0].as<std::string>(), "gpurent");
  }
  // Asking took nothing: the holder keeps the folder and its server runs on.
  EXPECT_THROW(EmbeddedPostgres second(options), ConfigError);
  EXPECT_TRUE(pqxx::connection(holder.url()).is_open());
  holder.stop();
  EXPECT_EQ(EmbeddedPostgres::running_server_url(options), std::nullopt)
      << "held, but its server is down";
}

TEST_F(EmbeddedPostgresTest, RunningServerUrlIgnoresAServerNobodyHolds) {
  EmbeddedPostgresOptions options{.data_dir = root_ + "/pg", .durable = false};
  {
    EmbeddedPostgres crashed(options);
    crashed.start();
    crashed.detach();  // its owner died; the server runs on, the folder is free
  }
  // Not a serving gpurentd's: the next owner adopts it (and stops it), as before.
  EXPECT_EQ(EmbeddedPostgres::running_server_url(options), std::nullopt);
  EmbeddedPostgres next(options);
  next.start();
  next.stop();
}

}  // namespace embedded_postgres_pgtest
}  // namespace gpurent
