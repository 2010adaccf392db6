// The starting point of the identity stores' PostgreSQL tests: a fresh database holding two
// users, each the owner of an org of their own.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "identity/identity_store.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <string>

namespace gpurent::identity {

class TwoOrgsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto [u1, o1] = identity_.create_user_with_org("one@example.com", "hash", "One", ctx_);
    auto [u2, o2] = identity_.create_user_with_org(second_email_, "hash", "Two", ctx_);
    user1_ = u1.id;
    org1_ = o1.id;
    user2_ = u2.id;
    org2_ = o2.id;
  }

  // The first column of the first row of `sql`, read over a connection of its own.
  int count(const std::string& sql) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx.exec(sql)[0][0].as<int>();
  }

  std::string second_email_ = "two@example.com";  // a test may change it before SetUp
  testing::TestDatabase db_;
  PgPool pool_{{.url = db_.url(), .size = 8}};
  TestClock clock_;
  IdentityStore identity_{pool_, clock_};
  AuditContext ctx_{"203.0.113.7", "req_test"};
  std::string user1_, org1_, user2_, org2_;
};

}  // namespace gpurent::identity
