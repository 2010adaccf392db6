// IdentityStore against a real PostgreSQL: sign-up atomicity, email uniqueness, sessions.
#include "identity/identity_store.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <atomic>
#include <latch>
#include <thread>

namespace gpurent::identity {
namespace {

using testing::TestDatabase;
using namespace std::chrono_literals;

class IdentityStoreTest : public ::testing::Test {
 protected:
  TestDatabase db_;
  PgPool pool_{{.url = db_.url(), .size = 2}};
  TestClock clock_;
  IdentityStore store_{pool_, clock_};
  AuditContext ctx_{"203.0.113.7", "req_test"};

  int count(const std::string& sql) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx.exec(sql)[0][0].as<int>();
  }
};

TEST_F(IdentityStoreTest, SignupCreatesUserOrgAndOwnerMembershipTogether) {
  auto [user, org] = store_.create_user_with_org("ada@example.com", "hash", "Analytical", ctx_);
  EXPECT_EQ(user.id.rfind("usr_", 0), 0u);
  EXPECT_EQ(org.id.rfind("org_", 0), 0u);
  EXPECT_EQ(store_.role_in(user.id, org.id), "owner");
  auto ms = store_.memberships(user.id);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].org.name, "Analytical");
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'user.signup' AND ip = "
                  "'203.0.113.7'"),
            1);
}

TEST_F(IdentityStoreTest, EmailIsUniqueIgnoringCaseAndAFailedSignupLeavesNothing) {
  store_.create_user_with_org("ada@example.com", "hash", "First", ctx_);
  try {
    store_.create_user_with_org("ADA@Example.com", "hash", "Second", ctx_);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConflict);
  }
  EXPECT_EQ(count("SELECT count(*) FROM orgs"), 1) << "the second org must not be half-created";
  EXPECT_TRUE(store_.find_login("Ada@EXAMPLE.com").has_value());
}

TEST_F(IdentityStoreTest, SessionsAreStoredHashedAndFound) {
  auto [user, org] = store_.create_user_with_org("s@example.com", "hash", "S", ctx_);
  auto s = store_.create_session(user.id, org.id, {}, "127.0.0.1");
  EXPECT_EQ(s.cookie_value.size(), 64u);
  EXPECT_EQ(count("SELECT count(*) FROM sessions WHERE id_hash = '" + s.cookie_value + "'"), 0)
      << "the cookie value itself is never stored";
  auto found = store_.find_session(s.cookie_value, {});
  ASSERT_TRUE(found);
  EXPECT_EQ(found->user.id, user.id);
  EXPECT_EQ(found->current_org_id, org.id);
  EXPECT_EQ(found->csrf_token, s.csrf_token);
  EXPECT_FALSE(store_.find_session(std::string(64, 'a'), {}));
}

TEST_F(IdentityStoreTest, SessionsExpireWhenIdle) {
  auto [user, org] = store_.create_user_with_org("i@example.com", "hash", "I", ctx_);
  SessionPolicy policy{.idle = 1h, .absolute = 24h};
  auto s = store_.create_session(user.id, org.id, policy, "");
  clock_.advance(50min);
  EXPECT_TRUE(store_.find_session(s.cookie_value, policy)) << "use refreshes the idle timer";
  clock_.advance(50min);
  EXPECT_TRUE(store_.find_session(s.cookie_value, policy));
  clock_.advance(61min);
  EXPECT_FALSE(store_.find_session(s.cookie_value, policy));
}

TEST_F(IdentityStoreTest, SessionsExpireAtTheAbsoluteLimitEvenWhenActive) {
  auto [user, org] = store_.create_user_with_org("a@example.com", "hash", "A", ctx_);
  SessionPolicy policy{.idle = 2h, .absolute = 5h};
  auto s = store_.create_session(user.id, org.id, policy, "");
  for (int i = 0; i < 4; ++i) {
    clock_.advance(1h);
    EXPECT_TRUE(store_.find_session(s.cookie_value, policy));
  }
  clock_.advance(61min);
  EXPECT_FALSE(store_.find_session(s.cookie_value, policy));
}

TEST_F(IdentityStoreTest, DeletedSessionIsGoneAtOnce) {
  auto [user, org] = store_.create_user_with_org("d@example.com", "hash", "D", ctx_);
  auto s = store_.create_session(user.id, org.id, {}, "");
  auto found = store_.find_session(s.cookie_value, {});
  ASSERT_TRUE(found);
  store_.delete_session(found->id_hash);
  EXPECT_FALSE(store_.find_session(s.cookie_value, {}));
}

TEST_F(IdentityStoreTest, PlatformAdminHasNoOrgAndTheFlag) {
  auto admin = store_.create_platform_admin("root@example.com", "hash");
  EXPECT_TRUE(admin.is_platform_admin);
  EXPECT_TRUE(store_.memberships(admin.id).empty());
  EXPECT_THROW(store_.create_platform_admin("ROOT@example.com", "hash"), Error);
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
        store_.create_user_with_org("race@example.com", "hash", "Race", ctx_);
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

}  // namespace
}  // namespace gpurent::identity
