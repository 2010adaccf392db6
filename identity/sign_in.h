// SignIn: the use cases of a person without a session yet (API.md "Identity"): signing up,
// which makes the account and its organisation, and logging in, which checks the password
// behind a throttle and opens a browser session. Password hashing and checking run outside
// any transaction, so no connection is held while they work.
#pragma once

#include "core/audit.h"
#include "core/db_pool.h"
#include "core/error.h"
#include "identity/identity_store.h"
#include "identity/password.h"

#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::identity {

// What a login attempt is counted against: the account (the email, lower-cased) and the
// client's address.
struct LoginKeys {
  std::string account;
  std::string ip;
};
LoginKeys login_keys(std::string_view email, std::string_view ip);

// Counts failed sign-ins. Once either key has run out, no password is checked at all, so
// guessing stops even when the guess would be right.
class LoginThrottling {
 public:
  virtual ~LoginThrottling() = default;
  // 0 when the attempt may go ahead; otherwise the seconds until one may.
  virtual int wait_before(const LoginKeys& keys) = 0;
  virtual void failed(const LoginKeys& keys) = 0;
};

// Thrown by login() while the throttle holds: the contract's 429 rate_limited with
// Retry-After.
class TooManyLogins : public Error {
 public:
  explicit TooManyLogins(int retry_after_seconds)
      : Error(ErrorCode::kRateLimited, "Too many failed sign-ins; try again later."),
        retry_after_(retry_after_seconds) {}
  int retry_after_seconds() const { return retry_after_; }

 private:
  int retry_after_;
};

struct SignedIn {
  User user;
  std::vector<Membership> memberships;
  std::optional<std::string> current_org_id;  // the first membership's, when there is one
  NewSession session;
};

class SignIn {
 public:
  // `throttle` absent: failed logins are not throttled. New passwords are hashed with
  // `hashing` (config password_hash_cost).
  SignIn(PgPool& pool, IdentityStore& store, const SessionPolicy& policy, LoginThrottling* throttle,
         ScryptParams hashing = {})
      : pool_(pool), store_(store), policy_(policy), throttle_(throttle), hashing_(hashing) {}

  // A user, an org they own and the `user.signup` audit row. invalid_request naming
  // password when it breaks the policy; conflict when the email is taken. The email and the
  // org's name come checked and trimmed from the edge.
  std::pair<User, Org> signup(const Actor& actor, const std::string& email,
                              const std::string& password, const std::string& org_name);

  // A session for the account, acting for its first org, and the `user.login` audit row.
  // `email` comes trimmed.
  // unauthenticated for an unknown email or a wrong password (alike, and as slow), with a
  // `user.login_failed` row committed on its own; TooManyLogins while the throttle holds.
  SignedIn login(const Actor& actor, const std::string& email, const std::string& password);

 private:
  PgPool& pool_;
  IdentityStore& store_;
  const SessionPolicy& policy_;
  LoginThrottling* throttle_;
  const ScryptParams hashing_;
  // A hash of nothing in particular, at the same cost: verifying against it when the email
  // is unknown makes "no such user" take as long as "wrong password". Made on first use.
  const std::string& dummy_hash();
  std::once_flag dummy_once_;
  std::string dummy_hash_;
};

}  // namespace gpurent::identity
