// Migrator against a real PostgreSQL: order, checksums, failures, concurrent replicas.
#include "core/crypto.h"
#include "core/migrator.h"
#include "migrations/embedded_migrations.h"
#include "tests/support/pg_harness.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <atomic>
#include <latch>
#include <thread>

namespace gpurent {
namespace migrator_pgtest {

using ::testing::HasSubstr;
using testing::TestDatabase;

// The message of the MigrationError that `migrate` throws; fails the test if none is thrown.
std::string migration_error(const std::string& url, const std::vector<Migration>& migrations) {
  try {
    Migrator(url, migrations).migrate();
  } catch (const MigrationError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a MigrationError";
  return "";
}

std::vector<Migration> files(std::vector<EmbeddedFile> f) {
  return migrations_from_files(f);
}

int query_int(const std::string& url, const std::string& sql) {
  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  return tx.exec(sql)[0][0].as<int>();
}

const EmbeddedFile kCreate = {"0001_create.sql", "CREATE TABLE things (id int PRIMARY KEY);"};
const EmbeddedFile kAlter = {"0002_alter.sql", "ALTER TABLE things ADD COLUMN name text;"};
const EmbeddedFile kCount = {
    "0003_count.sql", "CREATE TABLE IF NOT EXISTS runs (n int); INSERT INTO runs VALUES (1);"};

TEST(Migrator, AppliesInNumericOrderAndRecordsChecksums) {
  TestDatabase db(TestDatabase::Kind::kEmpty);
  // Given out of order: 0002 only works after 0001.
  auto status = Migrator(db.url(), files({kAlter, kCreate})).migrate();
  EXPECT_EQ(status.applied, 0);
  EXPECT_EQ(status.pending, 2);
  EXPECT_EQ(query_int(db.url(), "SELECT count(*) FROM schema_migrations"), 2);
  pqxx::connection c(db.url());
  pqxx::nontransaction tx(c);
  auto rows = tx.exec("SELECT version, name, checksum FROM schema_migrations ORDER BY version");
  EXPECT_EQ(rows[0][1].as<std::string>(), "0001_create.sql");
  EXPECT_EQ(rows[0][2].as<std::string>(), crypto::sha256_hex(kCreate.content));
}

TEST(Migrator, SecondRunAppliesNothing) {
  TestDatabase db(TestDatabase::Kind::kEmpty);
  Migrator(db.url(), files({kCreate, kAlter, kCount})).migrate();
  auto again = Migrator(db.url(), files({kCreate, kAlter, kCount})).migrate();
  EXPECT_EQ(again.applied, 3);
  EXPECT_EQ(again.pending, 0);
  EXPECT_EQ(query_int(db.url(), "SELECT count(*) FROM runs"), 1);
}

TEST(Migrator, NewMigrationIsAppliedOnTopOfOldOnes) {
  TestDatabase db(TestDatabase::Kind::kEmpty);
  Migrator(db.url(), files({kCreate})).migrate();
  auto status = Migrator(db.url(), files({kCreate, kAlter})).migrate();
  EXPECT_EQ(status.applied, 1);
  EXPECT_EQ(status.pending, 1);
  EXPECT_EQ(query_int(db.url(),
                      "SELECT count(*) FROM information_schema.columns "
                      "WHERE table_name = 'things' AND column_name = 'name'"),
            1);
}

TEST(Migrator, ChangedAppliedFileStopsWithItsName) {
  TestDatabase db(TestDatabase::Kind::kEmpty);
  Migrator(db.url(), files({kCreate})).migrate();
  EmbeddedFile edited = {"0001_create.sql", "CREATE TABLE things (id bigint PRIMARY KEY);"};
  std::string msg = migration_error(db.url(), files({edited, kAlter}));
  EXPECT_THAT(msg, HasSubstr("0001_create.sql"));
  EXPECT_THAT(msg, HasSubstr("changed"));
  // Nothing after the check ran.
  EXPECT_EQ(query_int(db.url(), "SELECT count(*) FROM schema_migrations"), 1);
}

TEST(Migrator, CheckReportsPendingWithoutApplying) {
  TestDatabase db(TestDatabase::Kind::kEmpty);
  auto status = Migrator(db.url(), files({kCreate, kAlter})).check();
  EXPECT_EQ(status.pending, 2);
  EXPECT_EQ(query_int(db.url(), "SELECT count(*) FROM pg_tables WHERE tablename = 'things'"), 0);
}

TEST(Migrator, AppliedMigrationUnknownToThisBuildStopsWithItsName) {
  TestDatabase db(TestDatabase::Kind::kEmpty);
  Migrator(db.url(), files({kCreate, kAlter})).migrate();
  std::string msg = migration_error(db.url(), files({kCreate}));
  EXPECT_THAT(msg, HasSubstr("0002_alter.sql"));
  EXPECT_THAT(msg, HasSubstr("this build does not have"));
}

TEST(Migrator, NewFileNumberedBelowAnAppliedOneStops) {
  TestDatabase db(TestDatabase::Kind::kEmpty);
  Migrator(db.url(), files({kCreate, kCount})).migrate();
  std::string msg = migration_error(db.url(), files({kCreate, kAlter, kCount}));
  EXPECT_THAT(msg, HasSubstr("0002_alter.sql"));
  EXPECT_THAT(msg, HasSubstr("0003_count.sql"));
}

TEST(Migrator, FailingMigrationRollsBackWholeAndKeepsEarlierOnes) {
  TestDatabase db(TestDatabase::Kind::kEmpty);
  EmbeddedFile broken = {"0002_broken.sql",
                         "CREATE TABLE half (x int); SELECT no_such_function();"};
  try {
    Migrator(db.url(), files({kCreate, broken})).migrate();
    ADD_FAILURE() << "a failing migration must stop start-up";
  } catch (const MigrationError& e) {
    EXPECT_THAT(e.what(), HasSubstr("migration 0002_broken.sql failed")) << "names the file";
    EXPECT_THAT(e.what(), HasSubstr("no_such_function")) << "the database's own error";
  }
  EXPECT_EQ(query_int(db.url(), "SELECT count(*) FROM schema_migrations"), 1);
  EXPECT_EQ(query_int(db.url(), "SELECT count(*) FROM pg_tables WHERE tablename = 'half'"), 0)
      << "a failed migration leaves nothing half-applied";
}

TEST(Migrator, ConcurrentReplicasApplyEachMigrationOnce) {
  TestDatabase db(TestDatabase::Kind::kEmpty);
  auto set = files({kCreate, kAlter, kCount});
  std::atomic<int> errors{0}, applied_total{0};
  std::vector<std::thread> replicas;
  constexpr int kReplicas = 6;
  std::latch go(kReplicas);  // all start migrating at once
  for (int i = 0; i < kReplicas; ++i) {
    replicas.emplace_back([&] {
      go.arrive_and_wait();
      try {
        applied_total += Migrator(db.url(), set).migrate().pending;
      } catch (const std::exception&) {
        ++errors;
      }
    });
  }
  for (auto& t : replicas) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(applied_total.load(), 3) << "each migration is applied by exactly one replica";
  EXPECT_EQ(query_int(db.url(), "SELECT count(*) FROM runs"), 1);
  EXPECT_EQ(query_int(db.url(), "SELECT count(*) FROM schema_migrations"), 3);
}

TEST(Migrator, ProjectMigrationsApplyToAnEmptyDatabase) {
  TestDatabase db(TestDatabase::Kind::kEmpty);
  const auto& all = embedded_migrations();
  ASSERT_FALSE(all.empty());
  auto status = Migrator(db.url(), all).migrate();
  EXPECT_EQ(status.pending, static_cast<int>(all.size()));
  EXPECT_EQ(query_int(db.url(), "SELECT max(version) FROM schema_migrations"), all.back().version);
}

}  // namespace migrator_pgtest
}  // namespace gpurent
