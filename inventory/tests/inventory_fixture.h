// The starting point of the inventory stores' PostgreSQL tests: a fresh migrated database
// (with the seeded GPU catalog), a platform admin to act as, one site, and every store.
#pragma once

#include "core/audit.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/id.h"
#include "inventory/catalog_store.h"
#include "inventory/node_store.h"
#include "inventory/price_store.h"
#include "inventory/site_store.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <string>
#include <utility>

namespace gpurent::inventory {

class InventoryTest : public ::testing::Test {
 protected:
  // A use case of one transaction, as a handler or job runs one.
  template <typename Fn>
  auto transact(Fn&& fn) {
    return pool_.transact("inventory_test", std::forward<Fn>(fn));
  }

  // A use case that only reads, outside any transaction.
  template <typename Fn>
  auto read(Fn&& fn) {
    return pool_.read("inventory_test_read", std::forward<Fn>(fn));
  }

  void SetUp() override {
    admin_.user_id = create_platform_admin();
    site_ = transact([&](Tx& tx) {
              return sites_.create(tx, "Test DC", "test-region", "Europe/Moscow", admin_);
            }).id;
  }

  // The user the audit rows name, inserted directly: the inventory tests need only its row.
  std::string create_platform_admin() {
    static constexpr Statement kInsertAdmin = {
        "inventory_test_insert_admin",
        "INSERT INTO users (id, email, password_hash, is_platform_admin, created_at)"
        " VALUES ($1, 'root@example.com', 'hash', true, now())"};
    std::string id = new_id(id_prefix::kUser);
    transact([&](Tx& tx) { tx.exec(kInsertAdmin, id); });
    return id;
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
  SiteStore sites_{clock_};
  NodeStore nodes_{clock_, std::chrono::hours(24)};
  CatalogStore catalog_{clock_};
  PriceStore prices_{clock_, "RUB"};
  Actor admin_{.user_id = std::nullopt,
               .token_id = std::nullopt,
               .ip = "203.0.113.7",
               .request_id = "req_test"};
  std::string site_;
};

}  // namespace gpurent::inventory
