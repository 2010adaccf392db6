// The starting point of the inventory stores' PostgreSQL tests: a fresh migrated database
// (with the seeded GPU catalog), a platform admin to act as, one site, and every store.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "identity/identity_store.h"
#include "inventory/catalog_store.h"
#include "inventory/node_store.h"
#include "inventory/price_store.h"
#include "inventory/site_store.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <string>

namespace gpurent::inventory {

class InventoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    admin_ = {identity_.create_platform_admin("root@example.com", "hash").id, std::nullopt};
    site_ = sites_.create("Test DC", "test-region", "Europe/Moscow", admin_, ctx_).id;
  }

  // The first column of the first row of `sql`, read over a connection of its own.
  long long count(const std::string& sql) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx.exec(sql)[0][0].as<long long>();
  }

  void exec(const std::string& sql) {
    pqxx::connection c(db_.url());
    pqxx::work tx(c);
    tx.exec(sql);
    tx.commit();
  }

  NewNode node(const std::string& hostname, const std::string& model, int gpus,
               std::optional<std::string> interconnect = std::nullopt) {
    NewNode n;
    n.site_id = site_;
    n.hostname = hostname;
    n.gpu_model = model;
    n.gpu_count = gpus;
    n.interconnect = std::move(interconnect);
    return n;
  }

  testing::TestDatabase db_;
  PgPool pool_{{.url = db_.url(), .size = 8}};
  TestClock clock_;
  identity::IdentityStore identity_{pool_, clock_};
  SiteStore sites_{pool_, clock_};
  NodeStore nodes_{pool_, clock_, std::chrono::hours(24)};
  CatalogStore catalog_{pool_, clock_};
  PriceStore prices_{pool_, clock_, "RUB"};
  AuditContext ctx_{"203.0.113.7", "req_test"};
  AdminActor admin_;
  std::string site_;
};

}  // namespace gpurent::inventory
