// The unit of work across modules, against a real PostgreSQL: one use case calls an identity
// store and then an inventory store inside one transaction; when the second refuses, the
// first's change (and its audit row) is rolled back with it, and when both succeed both
// commit. This is the shape the scheduler's booking takes (inventory, scheduling and
// billing stores in one transaction).
#include "core/audit.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/error.h"
#include "identity/identity_store.h"
#include "identity/token_store.h"
#include "inventory/site_store.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <string>

namespace gpurent {
namespace unit_of_work_pgtest {

class UnitOfWorkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto [user, org] = pool_.transact("identity_signup", [&](Tx& tx) {
      return identity_.create_user_with_org(tx, "owner@example.com", "hash", "Org", {});
    });
    actor_ = Actor{.user_id = user.id, .ip = "198.51.100.7", .request_id = "req_uow"};
    org_id_ = org.id;
    pool_.transact("site_create", [&](Tx& tx) {
      sites_.create(tx, "Frankfurt 1", "eu-central", "Europe/Berlin", actor_);
    });
  }

  // One use case: a token for the org, then a site; the site's name decides whether the
  // second step is refused.
  void token_then_site(const std::string& site_name) {
    pool_.transact("token_then_site", [&](Tx& tx) {
      tokens_.create(tx, org_id_, "ci", {"rentals:read"}, std::nullopt, {}, actor_);
      sites_.create(tx, site_name, "eu-central", "Europe/Berlin", actor_);
    });
  }

  long long count(const std::string& sql) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx.exec1(sql)[0].as<long long>();
  }

  testing::TestDatabase db_;
  PgPool pool_{{.url = db_.url(), .size = 2}};
  TestClock clock_;
  identity::IdentityStore identity_{clock_};
  identity::TokenStore tokens_{clock_};
  inventory::SiteStore sites_{clock_};
  Actor actor_;
  std::string org_id_;
};

TEST_F(UnitOfWorkTest, AUseCaseSpanningTwoStoresRollsBackWholeWhenTheSecondFails) {
  // The second store refuses: a site of that name exists (compared ignoring case).
  try {
    token_then_site("FRANKFURT 1");
    FAIL() << "a second site named Frankfurt 1 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConflict) << e.what();
  }
  EXPECT_EQ(count("SELECT count(*) FROM api_tokens"), 0) << "the first store's row stayed";
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'token.create'"), 0)
      << "the first store's audit row stayed";
  EXPECT_EQ(count("SELECT count(*) FROM sites"), 1);
}

TEST_F(UnitOfWorkTest, AUseCaseSpanningTwoStoresCommitsBothWhenBothSucceed) {
  token_then_site("Frankfurt 2");
  EXPECT_EQ(count("SELECT count(*) FROM api_tokens"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM sites"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action IN ('token.create',"
                  " 'site.created') AND request_id = 'req_uow'"),
            3)
      << "the token's and both sites' rows, each with the request's actor";
}

TEST_F(UnitOfWorkTest, ADatabaseRefusalInTheSecondStepRollsBackTheFirst) {
  // Not a rule a store checks first but one only the database knows: the statement after
  // the token violates a constraint, and the violation comes back typed.
  try {
    pool_.transact("token_then_violation", [&](Tx& tx) {
      tokens_.create(tx, org_id_, "ci", {"rentals:read"}, std::nullopt, {}, actor_);
      tx.exec_fixed(
          "INSERT INTO sites (id, name, region, timezone, created_at)"
          " SELECT id, upper(name), region, timezone, now() FROM sites");
    });
    FAIL() << "the duplicate row was accepted";
  } catch (const ConstraintViolation& v) {
    EXPECT_EQ(v.kind(), DbFailure::kUniqueViolation);
    EXPECT_EQ(v.constraint(), "sites_pkey");
  }
  EXPECT_EQ(count("SELECT count(*) FROM api_tokens"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'token.create'"), 0);
}

}  // namespace unit_of_work_pgtest
}  // namespace gpurent
