// Migration 0020 against a real PostgreSQL: a database migrated up to 0019 holds nodes with
// `ssh_port` labels of every kind; after 0020 a valid port is the node's ssh_port field and
// has left the labels, anything else stays a label and the port is 22.
#include "core/migrator.h"
#include "migrations/embedded_migrations.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include <string>
#include <vector>

namespace gpurent::inventory {
namespace node_ssh_migration_pgtest {

constexpr int kNodeSshMigration = 20;

std::vector<Migration> migrations_before(int version) {
  std::vector<Migration> out;
  for (const auto& m : embedded_migrations()) {
    if (m.version < version) out.push_back(m);
  }
  return out;
}

TEST(NodeSshMigration, AValidSshPortLabelBecomesTheFieldAndLeavesTheLabels) {
  testing::TestDatabase db(testing::TestDatabase::Kind::kEmpty);
  Migrator(db.url(), migrations_before(kNodeSshMigration)).migrate();
  struct Case {
    std::string id;
    nlohmann::json labels;
    int port;  // after the migration
    nlohmann::json labels_after;
  };
  std::vector<Case> cases = {
      {"nod_port", {{"ssh_port", "2222"}, {"rack", "r1"}}, 2222, {{"rack", "r1"}}},
      {"nod_max", {{"ssh_port", "65535"}}, 65535, nlohmann::json::object()},
      {"nod_zero", {{"ssh_port", "0"}}, 22, {{"ssh_port", "0"}}},
      {"nod_big", {{"ssh_port", "65536"}}, 22, {{"ssh_port", "65536"}}},
      {"nod_long", {{"ssh_port", "123456789012"}}, 22, {{"ssh_port", "123456789012"}}},
      {"nod_word", {{"ssh_port", "ssh"}}, 22, {{"ssh_port", "ssh"}}},
      {"nod_none", {{"rack", "r2"}}, 22, {{"rack", "r2"}}},
  };
  {
    pqxx::connection c(db.url());
    pqxx::work tx(c);
    tx.exec(
        "INSERT INTO sites (id, name, region, timezone, created_at)"
        " VALUES ('sit_m', 'Migration DC', 'test', 'Europe/Moscow', now())");
    for (const auto& k : cases) {
      tx.exec_params(
          "INSERT INTO nodes (id, site_id, hostname, gpu_model, gpu_count, interconnect, labels,"
          " state, state_changed_at, topology_source, created_at)"
          " VALUES ($1, 'sit_m', $1, 'L4-24GB', 1, 'pcie', $2::jsonb, 'available', now(),"
          " 'declared', now())",
          k.id, k.labels.dump());
    }
    tx.commit();
  }
  auto status = Migrator(db.url(), embedded_migrations()).migrate();
  EXPECT_GE(status.pending, 1);
  pqxx::connection c(db.url());
  pqxx::nontransaction tx(c);
  for (const auto& k : cases) {
    SCOPED_TRACE(k.id);
    auto row = tx.exec_params1(
        "SELECT ssh_port, labels::text, ssh_probe_key IS NULL FROM nodes"
        " WHERE id = $1",
        k.id);
    EXPECT_EQ(row[0].as<int>(), k.port);
    EXPECT_EQ(nlohmann::json::parse(row[1].as<std::string>()), k.labels_after);
    EXPECT_TRUE(row[2].as<bool>()) << "no agent has reported a probe key yet";
  }
}

}  // namespace node_ssh_migration_pgtest
}  // namespace gpurent::inventory
