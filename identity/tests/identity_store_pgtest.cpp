// IdentityStore against a real PostgreSQL: sign-up atomicity, email uniqueness, sessions, and
// a use case's transaction that takes the store's writes with it when it fails.
#include "identity/identity_store.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <atomic>
#include <latch>
#include <stdexcept>
#include <thread>

namespace gpurent::identity {
namespace identity_store_pgtest {

using testing::TestDatabase;
using namespace std::chrono_literals;

// Each call is a use case of its own, in a transaction (or a read) as a handler opens it.
class IdentityStoreTest : public ::testing::Test {
 protected:
  TestDatabase db_;
  PgPool pool_{{.url = db_.url(), .size = 2}};
  TestClock clock_;
  IdentityStore store_{clock_};
  Actor actor_{.ip = "203.0.113.7", .request_id = "req_test"};

  int count(const std::string& sql) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx.exec(sql)[0][0].as<int>();
  }

  std::pair<User, Org> signup(const std::string& email, const std::string& org_name) {
    return pool_.transact("identity_signup", [&](Tx& tx) {
      return store_.create_user_with_org(tx, email, "hash", org_name, actor_);
    });
  }
  User create_platform_admin(const std::string& email) {
    return pool_.transact("identity_create_admin", [&](Tx& tx) {
      return store_.create_platform_admin(tx, email, "hash", {});
    });
  }
  std::optional<std::pair<User, std::string>> find_login(const std::string& email) {
    return pool_.read("identity_find_login", [&](Tx& tx) { return store_.find_login(tx, email); });
  }
  std::vector<Membership> memberships(const std::string& user_id) {
    return pool_.read("identity_memberships",
                      [&](Tx& tx) { return store_.memberships(tx, user_id); });
  }
  std::optional<std::string> role_in(const std::string& user_id, const std::string& org_id) {
    return pool_.read("identity_role_in",
                      [&](Tx& tx) { return store_.role_in(tx, user_id, org_id); });
  }
  NewSession create_session(const std::string& user_id, const std::string& org_id,
                            const SessionPolicy& policy, const std::string& ip) {
    return pool_.transact("identity_create_session", [&](Tx& tx) {
      return store_.create_session(tx, user_id, org_id, policy, ip);
    });
  }
  std::optional<Session> find_session(const std::string& cookie_value,
                                      const SessionPolicy& policy) {
    return pool_.transact("identity_find_session",
                          [&](Tx& tx) { return store_.find_session(tx, cookie_value, policy); });
  }
  void delete_session(const std::string& id_hash) {
    pool_.transact("identity_delete_session", [&](Tx& tx) { store_.delete_session(tx, id_hash); });
  }
};

TEST_F(IdentityStoreTest, SignupCreatesUserOrgAndOwnerMembershipTogether) {
  Timestamp before = clock_.now();
  auto [user, org] = signup("ada@example.com", "Analytical");
  EXPECT_EQ(user.id.rfind("usr_", 0), 0u);
  EXPECT_EQ(org.id.rfind("org_", 0), 0u);
  EXPECT_GE(user.created_at, before);
  EXPECT_LE(user.created_at, clock_.now());
  EXPECT_EQ(role_in(user.id, org.id), "owner");
  auto ms = memberships(user.id);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].org.name, "Analytical");
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'user.signup' AND ip = "
                  "'203.0.113.7' AND actor_user_id = '" +
                  user.id + "' AND actor_token_id IS NULL"),
            1);
  auto login = find_login("ada@example.com");
  ASSERT_TRUE(login);
  EXPECT_EQ(login->first.created_at, user.created_at) << "the time stored is the time returned";
}

TEST_F(IdentityStoreTest, EmailIsUniqueIgnoringCaseAndAFailedSignupLeavesNothing) {
  signup("ada@example.com", "First");
  try {
    signup("ADA@Example.com", "Second");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConflict);
  }
  EXPECT_EQ(count("SELECT count(*) FROM orgs"), 1) << "the second org must not be half-created";
  EXPECT_TRUE(find_login("Ada@EXAMPLE.com").has_value());
}

// The handler's transaction is the unit of work: a step after the store's that fails takes
// the user, the org, the membership and the audit row back with it.
TEST_F(IdentityStoreTest, ASignUpWhoseUseCaseFailsHalfwayLeavesNothing) {
  EXPECT_THROW(pool_.transact("identity_signup",
                              [&](Tx& tx) {
                                store_.create_user_with_org(tx, "half@example.com", "hash", "Half",
                                                            actor_);
                                throw std::runtime_error("the next step of the use case failed");
                              }),
               std::runtime_error);
  EXPECT_EQ(count("SELECT count(*) FROM users"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM orgs"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM memberships"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM audit_log"), 0);
  EXPECT_NO_THROW(signup("half@example.com", "Half")) << "the email is free again";
}

TEST_F(IdentityStoreTest, SessionsAreStoredHashedAndFound) {
  auto [user, org] = signup("s@example.com", "S");
  auto s = create_session(user.id, org.id, {}, "127.0.0.1");
  EXPECT_EQ(s.cookie_value.size(), 64u);
  EXPECT_EQ(count("SELECT count(*) FROM sessions WHERE id_hash = '" + s.cookie_value + "'"), 0)
      << "the cookie value itself is never stored";
  auto found = find_session(s.cookie_value, {});
  ASSERT_TRUE(found);
  EXPECT_EQ(found->user.id, user.id);
  EXPECT_EQ(found->current_org_id, org.id);
  EXPECT_EQ(found->csrf_token, s.csrf_token);
  EXPECT_FALSE(find_session(std::string(64, 'a'), {}));
}

TEST_F(IdentityStoreTest, SessionsExpireWhenIdle) {
  auto [user, org] = signup("i@example.com", "I");
  SessionPolicy policy{.idle = 1h, .absolute = 24h};
  auto s = create_session(user.id, org.id, policy, "");
  clock_.advance(50min);
  EXPECT_TRUE(find_session(s.cookie_value, policy)) << "use refreshes the idle timer";
  clock_.advance(50min);
  EXPECT_TRUE(find_session(s.cookie_value, policy));
  clock_.advance(61min);
  EXPECT_FALSE(find_session(s.cookie_value, policy));
}

TEST_F(IdentityStoreTest, SessionsExpireAtTheAbsoluteLimitEvenWhenActive) {
  auto [user, org] = signup("a@example.com", "A");
  SessionPolicy policy{.idle = 2h, .absolute = 5h};
  auto s = create_session(user.id, org.id, policy, "");
  for (int i = 0; i < 4; ++i) {
    clock_.advance(1h);
    EXPECT_TRUE(find_session(s.cookie_value, policy));
  }
  clock_.advance(61min);
  EXPECT_FALSE(find_session(s.cookie_value, policy));
}

TEST_F(IdentityStoreTest, DeletedSessionIsGoneAtOnce) {
  auto [user, org] = signup("d@example.com", "D");
  auto s = create_session(user.id, org.id, {}, "");
  auto found = find_session(s.cookie_value, {});
  ASSERT_TRUE(found);
  delete_session(found->id_hash);
  EXPECT_FALSE(find_session(s.cookie_value, {}));
}

TEST_F(IdentityStoreTest, PlatformAdminHasNoOrgAndTheFlag) {
  auto admin = create_platform_admin("root@example.com");
  EXPECT_TRUE(admin.is_platform_admin);
  EXPECT_TRUE(memberships(admin.id).empty());
  EXPECT_THROW(create_platform_admin("ROOT@example.com"), Error);
}

TEST_F(IdentityStoreTest, ConcurrentSignupsWithOneEmailCreateOneAccount) {
  std::atomic<int> created{0}, conflicts{0};
  std::vector<std::thread> threads;
  constexpr int kThreads = 6;
  std::latch go(kThreads);  // all sign up at once
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      go.arrive_and_wait();
      try {
        signup("race@example.com", "Race");
        ++created;
      } catch (const Error& e) {
        if (e.code() == ErrorCode::kConflict) ++conflicts;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(created.load(), 1);
  EXPECT_EQ(conflicts.load(), 5);
  EXPECT_EQ(count("SELECT count(*) FROM users"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM orgs"), 1);
}

}  // namespace identity_store_pgtest
}  // namespace gpurent::identity
