// identity::SignIn against a real PostgreSQL, with the server's own login throttle
// (api/rate_limiter.h) on a clock the test moves: sign-up's policy and audit row; a login
// that opens a session for the first org; a failed one that is audited in a transaction of
// its own; and the throttle asked before any password is checked, so guessing stops even
// when the guess would be right.
#include "api/rate_limiter.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "identity/identity_store.h"
#include "identity/password.h"
#include "identity/sign_in.h"
#include "tests/support/error_code.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <chrono>
#include <string>

namespace gpurent::http {
namespace sign_in_pgtest {

class SignInTest : public ::testing::Test {
 protected:
  static Actor from(const std::string& ip) { return {.ip = ip, .request_id = "req_sign_in"}; }

  long long count(const std::string& sql) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx.exec(sql)[0][0].as<long long>();
  }

  template <typename Fn>
  static std::string code_of(Fn&& fn) {
    return testing::error_code_of(std::forward<Fn>(fn));
  }

  testing::TestDatabase db_;
  PgPool pool_{{.url = db_.url(), .size = 2}};
  TestClock clock_;
  identity::IdentityStore store_{clock_};
  identity::SessionPolicy policy_;
  std::chrono::steady_clock::time_point now_ = std::chrono::steady_clock::now();
  LoginThrottle throttle_{[this] { return now_; }};
  identity::SignIn sign_in_{pool_, store_, policy_, &throttle_};
};

TEST_F(SignInTest, SignUpHoldsThePasswordPolicyAndMakesTheAccountItsOrgsOwner) {
  EXPECT_EQ(code_of([&] { sign_in_.signup(from("192.0.2.1"), "a@example.com", "short", "Acme"); }),
            "invalid_request");
  EXPECT_EQ(count("SELECT count(*) FROM users"), 0) << "nothing written for a refusal";
  auto [user, org] =
      sign_in_.signup(from("192.0.2.1"), "a@example.com", "correct horse battery", "Acme");
  EXPECT_EQ(org.name, "Acme");
  EXPECT_EQ(count("SELECT count(*) FROM memberships WHERE role = 'owner' AND user_id = '" +
                  user.id + "' AND org_id = '" + org.id + "'"),
            1);
  EXPECT_EQ(count("SELECT count(*) FROM users WHERE password_hash LIKE '%correct horse%'"), 0)
      << "the password is stored hashed";
  EXPECT_EQ(code_of([&] {
              sign_in_.signup(from("192.0.2.1"), "A@example.com", "another good password", "B");
            }),
            "conflict")
      << "the email is taken whatever its case";
}

TEST_F(SignInTest, ALoginOpensASessionForTheFirstOrgAndAFailedOneIsAuditedOnItsOwn) {
  auto [user, org] =
      sign_in_.signup(from("192.0.2.1"), "a@example.com", "correct horse battery", "Acme");
  EXPECT_EQ(code_of([&] { sign_in_.login(from("192.0.2.2"), "a@example.com", "wrong"); }),
            "unauthenticated");
  EXPECT_EQ(code_of([&] { sign_in_.login(from("192.0.2.2"), "nobody@example.com", "wrong"); }),
            "unauthenticated")
      << "an unknown email reads as a wrong password";
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'user.login_failed'"
                  " AND actor_user_id = '" +
                  user.id + "' AND target = '" + user.id + "'"),
            1)
      << "committed although the login was refused";
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'user.login_failed'"
                  " AND actor_user_id IS NULL AND ip = '192.0.2.2'"),
            1);

  auto signed_in = sign_in_.login(from("192.0.2.3"), "a@example.com", "correct horse battery");
  EXPECT_EQ(signed_in.user.id, user.id);
  ASSERT_EQ(signed_in.memberships.size(), 1u);
  EXPECT_EQ(signed_in.current_org_id, org.id);
  EXPECT_FALSE(signed_in.session.cookie_value.empty());
  EXPECT_FALSE(signed_in.session.csrf_token.empty());
  auto session = pool_.transact("find", [&](Tx& tx) {
    return store_.find_session(tx, signed_in.session.cookie_value, policy_);
  });
  ASSERT_TRUE(session);
  EXPECT_EQ(session->current_org_id, org.id);
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'user.login' AND org_id = '" +
                  org.id + "' AND ip = '192.0.2.3'"),
            1);
}

TEST_F(SignInTest, TheThrottleStopsGuessingBeforeAnyPasswordIsChecked) {
  sign_in_.signup(from("192.0.2.1"), "a@example.com", "correct horse battery", "Acme");
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(code_of([&] { sign_in_.login(from("192.0.2.9"), "A@Example.com", "guess"); }),
              "unauthenticated")
        << "attempt " << i + 1 << ": the account counts whatever the email's case";
  }
  // The sixth try is refused even with the right password, and checks nothing.
  try {
    sign_in_.login(from("192.0.2.10"), "a@example.com", "correct horse battery");
    ADD_FAILURE() << "the throttle let a sixth try through";
  } catch (const identity::TooManyLogins& e) {
    EXPECT_GT(e.retry_after_seconds(), 0);
    EXPECT_EQ(e.code(), ErrorCode::kRateLimited);
  }
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'user.login_failed'"), 5)
      << "a throttled try is not an attempt";
  EXPECT_EQ(count("SELECT count(*) FROM sessions"), 0);
  // One more try comes back with time (5 per 15 minutes).
  now_ += std::chrono::minutes(4);
  EXPECT_NO_THROW(sign_in_.login(from("192.0.2.10"), "a@example.com", "correct horse battery"));
}

}  // namespace sign_in_pgtest
}  // namespace gpurent::http
