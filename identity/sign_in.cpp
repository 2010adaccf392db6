// SignIn: sign-up and login, with the login's failed attempt audited in a transaction of its
// own (the refusal must not take the row with it).
#include "identity/sign_in.h"

#include "identity/password.h"

namespace gpurent::identity {

LoginKeys login_keys(std::string_view email, std::string_view ip) {
  LoginKeys keys{"acct:" + std::string(email), "ip:" + std::string(ip)};
  for (char& c : keys.account) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return keys;
}

std::pair<User, Org> SignIn::signup(const Actor& actor, const std::string& email,
                                    const std::string& password, const std::string& org_name) {
  if (auto why = password_policy_violation(password); !why.empty()) {
    throw Error::invalid_field("password", why);
  }
  std::string hash = hash_password(password, hashing_);
  return pool_.transact("identity_signup", [&](Tx& tx) {
    return store_.create_user_with_org(tx, email, hash, org_name, actor);
  });
}

const std::string& SignIn::dummy_hash() {
  std::call_once(dummy_once_,
                 [this] { dummy_hash_ = hash_password("no user has this password", hashing_); });
  return dummy_hash_;
}

SignedIn SignIn::login(const Actor& who, const std::string& email, const std::string& password) {
  LoginKeys keys = login_keys(email, who.ip);
  if (throttle_) {
    if (int wait = throttle_->wait_before(keys); wait > 0) throw TooManyLogins(wait);
  }
  auto login =
      pool_.read("identity_find_login", [&](Tx& tx) { return store_.find_login(tx, email); });
  bool ok = verify_password(password, login ? login->second : dummy_hash());
  // Nobody is signed in: the row names the account tried, when there is one.
  Actor actor = who;
  if (login) actor.user_id = login->first.id;
  if (!login || !ok) {
    if (throttle_) throttle_->failed(keys);
    pool_.transact("identity_audit", [&](Tx& tx) {
      store_.audit(tx, actor,
                   {.action = "user.login_failed", .target = login ? login->first.id : ""});
    });
    throw Error(ErrorCode::kUnauthenticated, "The email or password is wrong.");
  }
  return pool_.transact("identity_login", [&](Tx& tx) {
    SignedIn s{.user = login->first};
    s.memberships = store_.memberships(tx, s.user.id);
    if (!s.memberships.empty()) s.current_org_id = s.memberships.front().org.id;
    s.session = store_.create_session(tx, s.user.id, s.current_org_id, policy_, who.ip);
    store_.audit(tx, actor,
                 {.org_id = s.current_org_id, .action = "user.login", .target = s.user.id});
    return s;
  });
}

}  // namespace gpurent::identity
