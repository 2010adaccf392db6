// MemberStore against a real PostgreSQL: adding by email, roles, tenant isolation, the
// last-owner rule under concurrency, and audit rows.
#include "identity/member_store.h"

#include "core/error.h"
#include "identity/identity_store.h"
#include "identity/tests/two_orgs_fixture.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <atomic>
#include <latch>
#include <thread>

namespace gpurent::identity {
namespace member_store_pgtest {

using namespace std::chrono_literals;

// The second user's email keeps its capitals, to show lookups ignore case.
class MemberStoreTest : public TwoOrgsTest {
 protected:
  MemberStoreTest() { second_email_ = "Two@Example.com"; }

  int owners(const std::string& org_id) {
    return count("SELECT count(*) FROM memberships WHERE role = 'owner' AND org_id = '" + org_id +
                 "'");
  }

  // Expects `fn` to throw Error with `code`; returns its details.
  template <typename Fn>
  nlohmann::json expect_error(ErrorCode code, Fn&& fn) {
    try {
      fn();
      ADD_FAILURE() << "no error thrown";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      return e.details();
    }
    return {};
  }

  // The store's methods as use cases: each in a transaction (or a read) of its own.
  gpurent::Page<MemberRecord> list(const std::string& org_id) {
    return pool_.read("member_list", [&](Tx& tx) { return store_.list(tx, org_id); });
  }
  std::optional<MemberRecord> get(const std::string& org_id, const std::string& user_id) {
    return pool_.read("member_get", [&](Tx& tx) { return store_.get(tx, org_id, user_id); });
  }
  MemberRecord add_by_email(const std::string& org_id, const std::string& email,
                            const std::string& role, const std::string& actor,
                            OwnerAuthority authority = OwnerAuthority::kMayManageOwners) {
    return pool_.transact("member_add", [&](Tx& tx) {
      return store_.add_by_email(tx, org_id, email, role, as(actor), authority);
    });
  }
  std::optional<MemberRecord> set_role(
      const std::string& org_id, const std::string& user_id, const std::string& role,
      const std::string& actor, OwnerAuthority authority = OwnerAuthority::kMayManageOwners) {
    return pool_.transact("member_set_role", [&](Tx& tx) {
      return store_.set_role(tx, org_id, user_id, role, as(actor), authority);
    });
  }
  bool remove(const std::string& org_id, const std::string& user_id, const std::string& actor,
              OwnerAuthority authority = OwnerAuthority::kMayManageOwners) {
    return pool_.transact("member_remove", [&](Tx& tx) {
      return store_.remove(tx, org_id, user_id, as(actor), authority);
    });
  }

  MemberStore store_{clock_};
};

TEST_F(MemberStoreTest, AddListSetRoleRemove) {
  auto initial = list(org1_).items;
  ASSERT_EQ(initial.size(), 1u);
  EXPECT_EQ(initial[0].user_id, user1_);
  EXPECT_EQ(initial[0].role, "owner");
  EXPECT_EQ(initial[0].email, "one@example.com");

  clock_.advance(1ms);
  Timestamp before = clock_.now();
  // Email is matched case-insensitively; the stored spelling is returned.
  auto added = add_by_email(org1_, "two@EXAMPLE.com", "viewer", user1_);
  EXPECT_EQ(added.user_id, user2_);
  EXPECT_EQ(added.email, "Two@Example.com");
  EXPECT_EQ(added.role, "viewer");
  EXPECT_GE(added.joined_at, before);
  EXPECT_LE(added.joined_at, clock_.now());

  auto listed = list(org1_).items;
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].user_id, user1_) << "ordered by joined_at";
  EXPECT_EQ(listed[1].user_id, user2_);
  EXPECT_EQ(listed[1].joined_at, added.joined_at);
  EXPECT_EQ(role_in(user2_, org1_), "viewer");

  auto changed = set_role(org1_, user2_, "admin", user1_);
  ASSERT_TRUE(changed);
  EXPECT_EQ(changed->role, "admin");
  EXPECT_EQ(role_in(user2_, org1_), "admin");

  EXPECT_TRUE(remove(org1_, user2_, user1_));
  EXPECT_FALSE(role_in(user2_, org1_));
  EXPECT_EQ(list(org1_).items.size(), 1u);
  EXPECT_FALSE(remove(org1_, user2_, user1_)) << "no longer a member";
  EXPECT_FALSE(set_role(org1_, user2_, "admin", user1_));
}

TEST_F(MemberStoreTest, UnknownEmailIsNotFoundAndRevealsNothing) {
  auto details = expect_error(ErrorCode::kNotFound,
                              [&] { add_by_email(org1_, "nobody@example.com", "member", user1_); });
  EXPECT_FALSE(details.contains("user_id"));
  // A disabled user is indistinguishable from an unknown one.
  count("WITH u AS (UPDATE users SET disabled_at = now() WHERE id = '" + user2_ +
        "' RETURNING 1) SELECT count(*) FROM u");
  expect_error(ErrorCode::kNotFound,
               [&] { add_by_email(org1_, "two@example.com", "member", user1_); });
  EXPECT_EQ(list(org1_).items.size(), 1u);
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'member.add'"), 0);
}

TEST_F(MemberStoreTest, AlreadyAMemberIsConflict) {
  add_by_email(org1_, "two@example.com", "member", user1_);
  expect_error(ErrorCode::kConflict,
               [&] { add_by_email(org1_, "TWO@example.com", "admin", user1_); });
  expect_error(ErrorCode::kConflict,
               [&] { add_by_email(org1_, "one@example.com", "viewer", user1_); });
  EXPECT_EQ(role_in(user2_, org1_), "member") << "the refused add changed nothing";
  EXPECT_EQ(role_in(user1_, org1_), "owner");
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'member.add'"), 1);
}

TEST_F(MemberStoreTest, InvalidRoleIsInvalidRequestNamingRole) {
  for (std::string bad : {"", "Owner", "superuser", "owner'; --"}) {
    auto d = expect_error(ErrorCode::kInvalidRequest,
                          [&] { add_by_email(org1_, "two@example.com", bad, user1_); });
    EXPECT_EQ(d["field"], "role");
    d = expect_error(ErrorCode::kInvalidRequest, [&] { set_role(org1_, user1_, bad, user1_); });
    EXPECT_EQ(d["field"], "role");
  }
}

TEST_F(MemberStoreTest, AnotherOrgCanNeitherSeeNorChangeMembers) {
  add_by_email(org1_, "two@example.com", "member", user1_);
  for (const auto& m : list(org2_).items) EXPECT_NE(m.user_id, user1_);
  EXPECT_EQ(list(org2_).items.size(), 1u);
  EXPECT_FALSE(get(org2_, user1_));
  // user2 owns org2 and is a member of org1; acting for org2 reaches nobody in org1.
  EXPECT_FALSE(set_role(org2_, user1_, "viewer", user2_));
  EXPECT_FALSE(remove(org2_, user1_, user2_));
  EXPECT_EQ(role_in(user1_, org1_), "owner");
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action LIKE 'member.%' AND org_id = '" +
                  org2_ + "'"),
            0);
}

TEST_F(MemberStoreTest, LastOwnerCanBeNeitherRemovedNorDemoted) {
  auto d = expect_error(ErrorCode::kConflict, [&] { remove(org1_, user1_, user1_); });
  EXPECT_EQ(d["reason"], "last_owner");
  for (std::string role : {"admin", "member", "billing", "viewer"}) {
    d = expect_error(ErrorCode::kConflict, [&] { set_role(org1_, user1_, role, user1_); });
    EXPECT_EQ(d["reason"], "last_owner");
  }
  EXPECT_EQ(role_in(user1_, org1_), "owner");
  // Re-stating the role is not a demotion.
  EXPECT_EQ(set_role(org1_, user1_, "owner", user1_)->role, "owner");

  // With a second owner either may go, but not both.
  add_by_email(org1_, "two@example.com", "owner", user1_);
  EXPECT_EQ(set_role(org1_, user1_, "admin", user2_)->role, "admin");
  expect_error(ErrorCode::kConflict, [&] { remove(org1_, user2_, user2_); });
  EXPECT_TRUE(remove(org1_, user1_, user2_));
  EXPECT_EQ(owners(org1_), 1);
}

TEST_F(MemberStoreTest, WithoutOwnerAuthorityOwnersAreUntouchable) {
  auto admin = signup("admin@example.com", "A").first;
  add_by_email(org1_, "admin@example.com", "admin", user1_);
  add_by_email(org1_, "two@example.com", "member", user1_);
  auto no = OwnerAuthority::kCannotManageOwners;
  expect_error(ErrorCode::kForbidden, [&] { set_role(org1_, user1_, "admin", admin.id, no); });
  expect_error(ErrorCode::kForbidden, [&] { set_role(org1_, user2_, "owner", admin.id, no); });
  expect_error(ErrorCode::kForbidden, [&] { remove(org1_, user1_, admin.id, no); });
  EXPECT_EQ(role_in(user1_, org1_), "owner");
  EXPECT_EQ(role_in(user2_, org1_), "member");
  EXPECT_EQ(set_role(org1_, user2_, "billing", admin.id, no)->role, "billing");
  EXPECT_TRUE(remove(org1_, user2_, admin.id, no));
}

// Two owners removing (or demoting) each other at the same moment: the org lock makes one
// of them wait and then see that the other is the last owner.
TEST_F(MemberStoreTest, OwnersRemovingEachOtherConcurrentlyNeverLeaveAnOrgWithoutOwner) {
  constexpr int kIterations = 40;
  int both_succeeded = 0;
  for (int i = 0; i < kIterations; ++i) {
    auto n = std::to_string(i);
    auto [a, org] = signup("a" + n + "@race.example", "Race");
    auto b = signup("b" + n + "@race.example", "B").first;
    add_by_email(org.id, b.email, "owner", a.id);
    bool demote = i % 2 == 1;
    std::atomic<int> ok{0}, last_owner{0}, other{0};
    std::latch go(2);  // both act at once
    auto act = [&](const std::string& actor, const std::string& target) {
      go.arrive_and_wait();
      try {
        if (demote) {
          if (set_role(org.id, target, "member", actor)) ++ok;
        } else if (remove(org.id, target, actor)) {
          ++ok;
        }
      } catch (const Error& e) {
        (e.code() == ErrorCode::kConflict && e.details().value("reason", "") == "last_owner"
             ? last_owner
             : other)++;
      }
    };
    std::thread t1(act, a.id, b.id);
    std::thread t2(act, b.id, a.id);
    t1.join();
    t2.join();
    EXPECT_EQ(owners(org.id), 1) << "iteration " << i;
    EXPECT_EQ(ok.load(), 1) << "iteration " << i;
    EXPECT_EQ(last_owner.load(), 1) << "iteration " << i;
    EXPECT_EQ(other.load(), 0) << "iteration " << i;
    if (ok.load() == 2) ++both_succeeded;
  }
  EXPECT_EQ(both_succeeded, 0);
}

TEST_F(MemberStoreTest, ChangesWriteAuditRowsAndRefusalsWriteNone) {
  add_by_email(org1_, "two@example.com", "viewer", user1_);
  set_role(org1_, user2_, "admin", user1_);
  remove(org1_, user2_, user1_);
  expect_error(ErrorCode::kConflict, [&] { remove(org1_, user1_, user1_); });
  pqxx::connection c(db_.url());
  pqxx::nontransaction tx(c);
  auto rows = tx.exec(
      "SELECT action, org_id, actor_user_id, target, ip, request_id, details::text"
      " FROM audit_log WHERE action LIKE 'member.%' ORDER BY id");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0][0].as<std::string>(), "member.add");
  EXPECT_EQ(rows[1][0].as<std::string>(), "member.role_change");
  EXPECT_EQ(rows[2][0].as<std::string>(), "member.remove");
  for (const auto& row : rows) {
    EXPECT_EQ(row[1].as<std::string>(), org1_);
    EXPECT_EQ(row[2].as<std::string>(), user1_);
    EXPECT_EQ(row[3].as<std::string>(), user2_);
    EXPECT_EQ(row[4].as<std::string>(), "203.0.113.7");
    EXPECT_EQ(row[5].as<std::string>(), "req_test");
  }
  auto add = nlohmann::json::parse(rows[0][6].as<std::string>());
  EXPECT_EQ(add["role"], "viewer");
  auto change = nlohmann::json::parse(rows[1][6].as<std::string>());
  EXPECT_EQ(change["from"], "viewer");
  EXPECT_EQ(change["to"], "admin");
  auto removed = nlohmann::json::parse(rows[2][6].as<std::string>());
  EXPECT_EQ(removed["role"], "admin");
}

TEST_F(MemberStoreTest, EmailsWithSqlMetacharactersAreOnlyData) {
  expect_error(ErrorCode::kNotFound,
               [&] { add_by_email(org1_, "x' OR '1'='1@example.com", "member", user1_); });
  expect_error(ErrorCode::kNotFound,
               [&] { add_by_email(org1_, "%@example.com", "member", user1_); });
  EXPECT_EQ(list(org1_).items.size(), 1u);
}

}  // namespace member_store_pgtest
}  // namespace gpurent::identity
