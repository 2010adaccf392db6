// OrgAdminStore against a real PostgreSQL: listing with member counts and keyset paging,
// one org, and guardrails set, left and cleared with an audit row in the same transaction.
#include "identity/org_admin_store.h"

#include "core/error.h"
#include "core/id.h"
#include "identity/identity_store.h"
#include "identity/member_store.h"
#include "identity/tests/two_orgs_fixture.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <set>

namespace gpurent::identity {
namespace org_admin_store_pgtest {

class OrgAdminStoreTest : public TwoOrgsTest {
 protected:
  void SetUp() override {
    TwoOrgsTest::SetUp();
    admin_ = create_platform_admin("root@example.com").id;
  }

  pqxx::row guardrails_in_db(const std::string& org_id) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx.exec_params1(
        "SELECT max_concurrent_gpus, max_days, spend_limit_minor FROM orgs WHERE id = $1", org_id);
  }

  static GuardrailsChange set_all(int gpus, int days, long long spend) {
    GuardrailsChange c;
    c.max_concurrent_gpus = {true, gpus};
    c.max_days = {true, days};
    c.spend_limit_minor = {true, spend};
    return c;
  }

  // The store's methods as use cases: each in a transaction (or a read) of its own.
  OrgPage list(int limit, const std::optional<std::string>& cursor) {
    return pool_.read("org_admin_list", [&](Tx& tx) { return store_.list(tx, limit, cursor); });
  }
  std::optional<OrgRecord> get(const std::string& org_id) {
    return pool_.read("org_admin_get", [&](Tx& tx) { return store_.get(tx, org_id); });
  }
  std::optional<OrgRecord> set_guardrails(const std::string& org_id, const GuardrailsChange& change,
                                          const Actor& actor) {
    return pool_.transact("org_admin_set_guardrails",
                          [&](Tx& tx) { return store_.set_guardrails(tx, org_id, change, actor); });
  }
  // The admin acting from the tests' address, with an API token or a session.
  Actor admin(const std::optional<std::string>& token_id) const {
    Actor actor = as(admin_);
    actor.token_id = token_id;
    return actor;
  }

  MemberStore members_{clock_};
  OrgAdminStore store_{clock_};
  std::string admin_;
};

TEST_F(OrgAdminStoreTest, ListsEveryOrgWithMemberCountsAndNoLimits) {
  pool_.transact("member_add", [&](Tx& tx) {
    return members_.add_by_email(tx, org1_, "two@example.com", "viewer", as(user1_));
  });
  auto page = list(50, std::nullopt);
  ASSERT_EQ(page.items.size(), 2u);
  EXPECT_FALSE(page.next_cursor);
  EXPECT_EQ(page.items[0].id, org1_);
  EXPECT_EQ(page.items[0].name, "One");
  EXPECT_EQ(page.items[0].member_count, 2);
  EXPECT_LE(page.items[0].created_at, page.items[1].created_at);
  EXPECT_LE(page.items[1].created_at, clock_.now());
  EXPECT_FALSE(page.items[0].guardrails.max_concurrent_gpus);
  EXPECT_FALSE(page.items[0].guardrails.max_days);
  EXPECT_FALSE(page.items[0].guardrails.spend_limit_minor);
  EXPECT_EQ(page.items[1].id, org2_);
  EXPECT_EQ(page.items[1].member_count, 1);

  auto one = get(org2_);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->name, "Two");
  EXPECT_EQ(one->member_count, 1);
  EXPECT_FALSE(get("org_0123456789012345678901"));
  EXPECT_FALSE(get("x' OR '1'='1"));
}

TEST_F(OrgAdminStoreTest, PagesWalkEveryOrgExactlyOnceEvenWithEqualCreationTimes) {
  // Orgs created in the same microsecond are ordered by id; the cursor must split them.
  {
    pqxx::connection c(db_.url());
    pqxx::work tx(c);
    for (int i = 0; i < 9; ++i) {
      tx.exec_params("INSERT INTO orgs (id, name, created_at) VALUES ($1, $2, $3)",
                     new_id(id_prefix::kOrg), "Same " + std::to_string(i),
                     "2030-01-01T00:00:00.123456Z");
    }
    tx.commit();
  }
  auto everything = list(500, std::nullopt);
  ASSERT_EQ(everything.items.size(), 11u);
  for (int limit : {1, 2, 4, 10, 11, 12}) {
    SCOPED_TRACE(limit);
    std::vector<std::string> seen;
    std::optional<std::string> cursor;
    for (int pages = 0; pages < 100; ++pages) {
      auto page = list(limit, cursor);
      for (const auto& o : page.items) seen.push_back(o.id);
      if (!page.next_cursor) break;
      EXPECT_EQ(static_cast<int>(page.items.size()), limit);
      cursor = page.next_cursor;
    }
    ASSERT_EQ(seen.size(), everything.items.size());
    for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], everything.items[i].id);
    EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), seen.size());
  }
}

TEST_F(OrgAdminStoreTest, MalformedCursorsAreInvalidRequestNamingCursor) {
  for (std::string bad : {"", "x", "1", ".org_0123456789012345678901",
                          "1.usr_0123456789012345678901", "-5.org_0123456789012345678901",
                          "1.org_x", "99999999999999999999.org_0123456789012345678901"}) {
    try {
      list(10, bad);
      ADD_FAILURE() << "accepted cursor '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest) << bad;
      EXPECT_EQ(e.details()["field"], "cursor") << bad;
    }
  }
}

TEST_F(OrgAdminStoreTest, SettingGuardrailsWritesThemAndOneAuditRow) {
  auto org = set_guardrails(org1_, set_all(16, 30, 5000000), admin("tok_0123456789012345678901"));
  ASSERT_TRUE(org);
  EXPECT_EQ(org->id, org1_);
  EXPECT_EQ(org->guardrails.max_concurrent_gpus, 16);
  EXPECT_EQ(org->guardrails.max_days, 30);
  EXPECT_EQ(org->guardrails.spend_limit_minor, 5000000);
  EXPECT_EQ(org->member_count, 1);
  auto db = guardrails_in_db(org1_);
  EXPECT_EQ(db[0].as<int>(), 16);
  EXPECT_EQ(db[1].as<int>(), 30);
  EXPECT_EQ(db[2].as<long long>(), 5000000);
  // The other org is untouched.
  EXPECT_TRUE(guardrails_in_db(org2_)[0].is_null());

  pqxx::connection c(db_.url());
  pqxx::nontransaction tx(c);
  auto rows = tx.exec(
      "SELECT org_id, actor_user_id, actor_token_id, target, ip, request_id, details::text"
      " FROM audit_log WHERE action = 'org.guardrails_set'");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0].as<std::string>(), org1_);
  EXPECT_EQ(rows[0][1].as<std::string>(), admin_);
  EXPECT_EQ(rows[0][2].as<std::string>(), "tok_0123456789012345678901");
  EXPECT_EQ(rows[0][3].as<std::string>(), org1_);
  EXPECT_EQ(rows[0][4].as<std::string>(), "203.0.113.7");
  EXPECT_EQ(rows[0][5].as<std::string>(), "req_test");
  auto details = nlohmann::json::parse(rows[0][6].as<std::string>());
  EXPECT_EQ(details["before"], nlohmann::json({{"max_concurrent_gpus", nullptr},
                                               {"max_days", nullptr},
                                               {"spend_limit_minor", nullptr}}));
  EXPECT_EQ(details["after"],
            nlohmann::json(
                {{"max_concurrent_gpus", 16}, {"max_days", 30}, {"spend_limit_minor", 5000000}}));
}

TEST_F(OrgAdminStoreTest, AbsentLeavesAndEmptyClears) {
  set_guardrails(org1_, set_all(8, 7, 100), admin(std::nullopt));
  GuardrailsChange change;
  change.max_days = {true, std::nullopt};  // clear
  change.spend_limit_minor = {true, 0};    // zero is a limit, not "none"
  auto org = set_guardrails(org1_, change, admin(std::nullopt));
  ASSERT_TRUE(org);
  EXPECT_EQ(org->guardrails.max_concurrent_gpus, 8) << "absent leaves the limit";
  EXPECT_FALSE(org->guardrails.max_days) << "empty clears it";
  EXPECT_EQ(org->guardrails.spend_limit_minor, 0);
  auto got = get(org1_);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->guardrails.max_concurrent_gpus, 8);
  EXPECT_FALSE(got->guardrails.max_days);
  EXPECT_EQ(got->guardrails.spend_limit_minor, 0);

  pqxx::connection c(db_.url());
  pqxx::nontransaction tx(c);
  auto rows = tx.exec(
      "SELECT actor_token_id, details::text FROM audit_log WHERE action = 'org.guardrails_set'"
      " ORDER BY id");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[1][0].is_null());
  auto details = nlohmann::json::parse(rows[1][1].as<std::string>());
  EXPECT_EQ(details["before"]["max_days"], 7);
  EXPECT_TRUE(details["after"]["max_days"].is_null());
  EXPECT_EQ(details["after"]["max_concurrent_gpus"], 8);
  EXPECT_EQ(details["after"]["spend_limit_minor"], 0);
}

TEST_F(OrgAdminStoreTest, UnknownOrgChangesNothingAndWritesNoAuditRow) {
  int before = count("SELECT count(*) FROM audit_log");
  EXPECT_FALSE(set_guardrails("org_0123456789012345678901", set_all(1, 1, 1), admin(std::nullopt)));
  EXPECT_FALSE(set_guardrails("'; DROP TABLE orgs; --", set_all(1, 1, 1), admin(std::nullopt)));
  EXPECT_EQ(count("SELECT count(*) FROM audit_log"), before);
  EXPECT_EQ(count("SELECT count(*) FROM orgs WHERE max_days IS NOT NULL"), 0);
}

TEST_F(OrgAdminStoreTest, OutOfRangeLimitsAreInvalidRequestAndWriteNothing) {
  int before = count("SELECT count(*) FROM audit_log");
  struct Case {
    GuardrailsChange change;
    std::string field;
  };
  std::vector<Case> cases;
  cases.push_back({set_all(-1, 1, 1), "max_concurrent_gpus"});
  cases.push_back({set_all(1, 0, 1), "max_days"});
  cases.push_back({set_all(1, 1, -1), "spend_limit.amount_minor"});
  for (const auto& c : cases) {
    try {
      set_guardrails(org1_, c.change, admin(std::nullopt));
      ADD_FAILURE() << c.field;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
      EXPECT_EQ(e.details()["field"], c.field);
    }
  }
  EXPECT_EQ(count("SELECT count(*) FROM audit_log"), before);
  EXPECT_TRUE(guardrails_in_db(org1_)[0].is_null());
}

}  // namespace org_admin_store_pgtest
}  // namespace gpurent::identity
