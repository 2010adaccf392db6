// The starting point of the scheduler stores' PostgreSQL tests: a fresh migrated database
// with two tenants (org, user), a platform admin, one site, one image and one price row,
// bookable nodes made through the inventory stores, and every scheduler store.
#pragma once

#include "core/audit.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/id.h"
#include "inventory/node_store.h"
#include "inventory/site_store.h"
#include "scheduler/candidate_store.h"
#include "scheduler/rental_store.h"
#include "scheduler/task_store.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpurent::scheduler {

class SchedulerTest : public ::testing::Test {
 protected:
  struct Tenant {
    std::string org_id;
    std::string user_id;
  };

  // The cleaning window the tests' allocations add after each rental.
  static constexpr std::chrono::hours kWindow{2};

  // A use case of one transaction, as a handler or job runs one.
  template <typename Fn>
  auto transact(Fn&& fn) {
    return pool_.transact("scheduler_test", std::forward<Fn>(fn));
  }

  // A use case that only reads, outside any transaction.
  template <typename Fn>
  auto read(Fn&& fn) {
    return pool_.read("scheduler_test_read", std::forward<Fn>(fn));
  }

  void SetUp() override {
    static constexpr Statement kInsertAdmin = {
        "scheduler_test_insert_admin",
        "INSERT INTO users (id, email, password_hash, is_platform_admin, created_at)"
        " VALUES ($1, 'root@example.com', 'hash', true, now())"};
    static constexpr Statement kInsertImage = {
        "scheduler_test_insert_image",
        "INSERT INTO images (id, name, os, driver_version, cuda_version, status, created_at)"
        " VALUES ($1, 'ubuntu-22.04-cuda-12.4', 'Ubuntu 22.04', '550.54.14', '12.4', 'active',"
        " now())"};
    static constexpr Statement kInsertPrice = {
        "scheduler_test_insert_price",
        "INSERT INTO prices (gpu_model, gpu_count, amount_minor, currency, valid_from)"
        " VALUES ('H100-SXM5-80GB', 8, 2500000, 'RUB', now()) RETURNING id"};
    admin_.user_id = new_id(id_prefix::kUser);
    image_ = new_id(id_prefix::kImage);
    transact([&](Tx& tx) {
      tx.exec(kInsertAdmin, *admin_.user_id);
      tx.exec(kInsertImage, image_);
      price_id_ = tx.exec(kInsertPrice)[0][0].as<long long>();
    });
    site_ = transact([&](Tx& tx) {
              return sites_.create(tx, "Test DC", "test-region", "Europe/Moscow", admin_);
            }).id;
    a_ = tenant("a");
    b_ = tenant("b");
  }

  // An org with one member, inserted directly: the scheduler tests need only the rows.
  Tenant tenant(const std::string& name) {
    static constexpr Statement kInsertOrg = {
        "scheduler_test_insert_org",
        "INSERT INTO orgs (id, name, created_at) VALUES ($1, $2, now())"};
    static constexpr Statement kInsertUser = {
        "scheduler_test_insert_user",
        "INSERT INTO users (id, email, password_hash, created_at) VALUES ($1, $2, 'hash', now())"};
    static constexpr Statement kInsertMember = {
        "scheduler_test_insert_member",
        "INSERT INTO memberships (org_id, user_id, role, created_at)"
        " VALUES ($1, $2, 'owner', now())"};
    Tenant t{new_id(id_prefix::kOrg), new_id(id_prefix::kUser)};
    transact([&](Tx& tx) {
      tx.exec(kInsertOrg, t.org_id, "Org " + name);
      tx.exec(kInsertUser, t.user_id, name + "@example.com");
      tx.exec(kInsertMember, t.org_id, t.user_id);
    });
    return t;
  }

  // A node made the way the product makes one: created, enrolled, health ok.
  std::string node(const std::string& hostname, const std::string& model = "H100-SXM5-80GB",
                   int gpus = 8, std::optional<std::string> interconnect = std::nullopt) {
    inventory::NewNode n;
    n.site_id = site_;
    n.hostname = hostname;
    n.gpu_model = model;
    n.gpu_count = gpus;
    n.interconnect = std::move(interconnect);
    return transact([&](Tx& tx) {
      std::string id = nodes_.create(tx, n, admin_).node.node.id;
      nodes_.transition(tx, id, inventory::NodeAction::kEnrolled, "enrolled", std::nullopt);
      nodes_.set_health(tx, id, inventory::Health::kOk);
      return id;
    });
  }

  // Hours after a fixed point in the future: every period the tests book is far from the
  // clock, so only the tests that mean to depend on "now" do.
  static Timestamp at(int h) {
    return Timestamp(std::chrono::seconds(1'893'456'000)) + std::chrono::hours(h);
  }
  static Period hours(int from, int to) { return {at(from), at(to)}; }
  // What a rental over `p` occupies: its period plus the cleaning window.
  static Period occupied(const Period& p) { return {p.start, p.end + kWindow}; }

  // A booking request for `node`'s GPUs over `p`, as the booking use case would make it.
  NewRental booking(const Tenant& t, const std::optional<std::string>& node_id,
                    std::vector<int> gpus, const Period& p,
                    RentalState state = RentalState::kScheduled) {
    NewRental r;
    r.org_id = t.org_id;
    r.created_by = t.user_id;
    r.name = "job";
    r.state = state;
    r.gpu_model = "H100-SXM5-80GB";
    r.gpu_count = state == RentalState::kPending ? 1 : static_cast<int>(gpus.size());
    r.link_need = LinkNeed::kNvlink;
    r.node_id = node_id;
    r.gpu_indices = std::move(gpus);
    r.period = p;
    r.days = 1;
    r.image_id = image_;
    r.price_per_day = Money(2'500'000, "RUB");
    r.price_id = price_id_;
    return r;
  }

  // A scheduled rental with its allocations, committed; its id.
  std::string book(const Tenant& t, const std::string& node_id, const std::vector<int>& gpus,
                   const Period& p) {
    return transact([&](Tx& tx) {
      auto r = rentals_.create(tx, booking(t, node_id, gpus, p));
      rentals_.allocate(tx, r.id, node_id, gpus, occupied(p));
      return r.id;
    });
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

  testing::TestDatabase db_;
  PgPool pool_{{.url = db_.url(), .size = 8}};
  TestClock clock_;
  inventory::SiteStore sites_{clock_};
  inventory::NodeStore nodes_{clock_, std::chrono::hours(24)};
  RentalStore rentals_{clock_};
  TaskStore tasks_{clock_};
  CandidateStore candidates_;
  Actor admin_{.user_id = std::nullopt,
               .token_id = std::nullopt,
               .ip = "203.0.113.7",
               .request_id = "req_test"};
  std::string site_;
  std::string image_;
  long long price_id_ = 0;
  Tenant a_;
  Tenant b_;
};

}  // namespace gpurent::scheduler
