// The starting point of the identity stores' PostgreSQL tests: a fresh database holding two
// users, each the owner of an org of their own. Every store call is a use case of its own,
// in a transaction (or a read) the test opens as a handler would.
#pragma once

#include "core/audit.h"
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
    auto [u1, o1] = signup("one@example.com", "One");
    auto [u2, o2] = signup(second_email_, "Two");
    user1_ = u1.id;
    org1_ = o1.id;
    user2_ = u2.id;
    org2_ = o2.id;
  }

  // A request from the tests' address with the tests' request id: nobody signed in, or
  // `user_id` with a session.
  static Actor anonymous() { return {.ip = "203.0.113.7", .request_id = "req_test"}; }
  static Actor as(const std::string& user_id) {
    Actor actor = anonymous();
    actor.user_id = user_id;
    return actor;
  }

  std::pair<User, Org> signup(const std::string& email, const std::string& org_name) {
    return pool_.transact("identity_signup", [&](Tx& tx) {
      return identity_.create_user_with_org(tx, email, "hash", org_name, anonymous());
    });
  }

  User create_platform_admin(const std::string& email) {
    return pool_.transact("identity_create_admin", [&](Tx& tx) {
      return identity_.create_platform_admin(tx, email, "hash", {});
    });
  }

  std::optional<std::string> role_in(const std::string& user_id, const std::string& org_id) {
    return pool_.read("identity_role_in",
                      [&](Tx& tx) { return identity_.role_in(tx, user_id, org_id); });
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
  IdentityStore identity_{clock_};
  std::string user1_, org1_, user2_, org2_;
};

}  // namespace gpurent::identity
