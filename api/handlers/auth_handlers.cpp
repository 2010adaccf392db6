// Identity routes: each request is one use case, in one transaction of its own (login's
// failed attempt aside, whose audit row must outlive the refusal).
#include "api/handlers/auth_handlers.h"
#include "api/handlers/json_values.h"

#include "api/json_body.h"
#include "api/rate_limiter.h"
#include "api/responses.h"
#include "core/clock.h"
#include "core/crypto.h"
#include "core/error.h"
#include "identity/password.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace gpurent::http {
namespace {

// A hash of nothing in particular: verifying against it when the email is unknown makes
// "no such user" take as long as "wrong password".
const std::string& dummy_hash() {
  static const std::string kHash = identity::hash_password("no user has this password");
  return kHash;
}

nlohmann::json user_json(const identity::User& u) {
  return {{"id", u.id},
          {"email", u.email},
          {"is_platform_admin", u.is_platform_admin},
          {"created_at", time_json(u.created_at)}};
}

nlohmann::json me_json(const Principal& p) {
  nlohmann::json me = {
      {"user", user_json(p.user)},
      {"current_org_id", p.org_id ? nlohmann::json(*p.org_id) : nlohmann::json(nullptr)},
      {"role", p.role.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.role)},
      {"scopes", p.scopes}};
  // A reloaded panel has lost the token login returned; it reads it here. Same-origin only
  // (no CORS), so a page elsewhere can never read it.
  if (!p.csrf_token.empty()) me["csrf_token"] = p.csrf_token;
  return me;
}

std::string session_cookie(const Request& r, const std::string& value, long long max_age) {
  std::string cookie(kSessionCookie);
  cookie.append("=").append(value).append("; Path=/; HttpOnly; SameSite=Lax; Max-Age=");
  cookie.append(std::to_string(max_age));
  // Behind a TLS-terminating proxy the browser must only send the cookie over TLS. Only a
  // trusted proxy's X-Forwarded-Proto counts (Request::secure): a client cannot ask for it.
  if (r.secure) cookie += "; Secure";
  return cookie;
}

// Failed sign-ins are counted per account and per address; once either has run out,
// no password is checked at all, so guessing stops even when the guess would be right.
struct LoginKeys {
  std::string account;
  std::string ip;
};

LoginKeys login_keys(const Request& r, const std::string& email) {
  LoginKeys keys{"acct:" + trimmed(email), "ip:" + std::string(r.remote_ip)};
  for (char& c : keys.account) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return keys;
}

std::optional<Response> login_refused(LoginThrottle& throttle, const LoginKeys& keys) {
  auto account = throttle.per_account.check(keys.account);
  auto ip = throttle.per_ip.check(keys.ip);
  if (account.allowed && ip.allowed) return std::nullopt;
  if (!account.allowed) throttle.per_account.record_refusal();
  if (!ip.allowed) throttle.per_ip.record_refusal();
  return rate_limited_response(std::max(account.retry_after_seconds, ip.retry_after_seconds));
}

}  // namespace

std::string validated_email(const std::string& raw) {
  std::string email = trimmed(raw);
  auto at = email.find('@');
  bool ok = email.size() >= 3 && email.size() <= 254 && at != std::string::npos && at > 0 &&
            email.find('@', at + 1) == std::string::npos && at + 1 < email.size() &&
            email.find(' ') == std::string::npos && !has_control_characters(email) &&
            email.find('.', at) != std::string::npos && email.back() != '.';
  if (!ok) throw Error::invalid_field("email", "must be an email address");
  return email;
}

void add_auth_routes(Router& router, AuthRoutesState& state) {
  router.add(
      {.method = Method::kPost,
       .pattern = "/v1/auth/signup",
       .handler =
           [&state](const Request& req, const Principal& p) {
             if (!state.signup_enabled) {
               throw Error(ErrorCode::kForbidden, "Sign-up is disabled on this service.");
             }
             auto body = parse_json_body(req);
             JsonObjectReader in(body);
             std::string email = validated_email(in.required_string("email", 254));
             std::string password = in.required_string("password", 1024);
             std::string org_name = trimmed(in.required_string("org_name", 200));
             in.finish();
             if (auto why = identity::password_policy_violation(password); !why.empty()) {
               throw Error::invalid_field("password", why);
             }
             if (org_name.empty() || has_control_characters(org_name)) {
               throw Error::invalid_field("org_name", "must be 1 to 200 printable characters");
             }
             // Hashed before the transaction: the connection is not held while it runs.
             std::string hash = identity::hash_password(password);
             auto [user, org] = state.pool->transact("identity_signup", [&](Tx& tx) {
               return state.store->create_user_with_org(tx, email, hash, org_name,
                                                        actor_of(req, p));
             });
             return json_response(
                 201, {{"user", user_json(user)}, {"org", {{"id", org.id}, {"name", org.name}}}});
           },
       .access = Access::kAnyone,
       .summary = "Create an account and its organisation.",
       .tag = "identity",
       .idempotency_key = false});

  router.add(
      {.method = Method::kPost,
       .pattern = "/v1/auth/login",
       .handler =
           [&state](const Request& req, const Principal& p) {
             auto body = parse_json_body(req);
             JsonObjectReader in(body);
             std::string email = in.required_string("email", 254);
             std::string password = in.required_string("password", 1024);
             in.finish();
             LoginKeys keys = login_keys(req, email);
             if (state.login_throttle) {
               if (auto refused = login_refused(*state.login_throttle, keys)) return *refused;
             }
             auto login = state.pool->read("identity_find_login", [&](Tx& tx) {
               return state.store->find_login(tx, trimmed(email));
             });
             // Verified outside any transaction: the connection is not held while it runs.
             bool ok = identity::verify_password(password, login ? login->second : dummy_hash());
             // Nobody is signed in: the row names the account tried, when there is one.
             Actor actor = actor_of(req, p);
             if (login) actor.user_id = login->first.id;
             if (!login || !ok) {
               if (state.login_throttle) {
                 state.login_throttle->per_account.take(keys.account);
                 state.login_throttle->per_ip.take(keys.ip);
               }
               // Committed on its own: the refusal below must not take the row with it.
               state.pool->transact("identity_audit", [&](Tx& tx) {
                 state.store->audit(tx, actor,
                                    {.action = "user.login_failed",
                                     .target = login ? login->first.id : std::string()});
               });
               throw Error(ErrorCode::kUnauthenticated, "The email or password is wrong.");
             }
             const auto& user = login->first;
             struct SignedIn {
               std::vector<identity::Membership> memberships;
               std::optional<std::string> current;
               identity::NewSession session;
             };
             auto signed_in = state.pool->transact("identity_login", [&](Tx& tx) {
               SignedIn s;
               s.memberships = state.store->memberships(tx, user.id);
               if (!s.memberships.empty()) s.current = s.memberships.front().org.id;
               s.session = state.store->create_session(tx, user.id, s.current, state.auth->policy(),
                                                       std::string(req.remote_ip));
               state.store->audit(tx, actor,
                                  {.org_id = s.current, .action = "user.login", .target = user.id});
               return s;
             });
             const auto& current = signed_in.current;
             const auto& session = signed_in.session;
             nlohmann::json orgs = nlohmann::json::array();
             for (const auto& m : signed_in.memberships) {
               orgs.push_back({{"id", m.org.id}, {"name", m.org.name}, {"role", m.role}});
             }
             Response r = json_response(200, {{"user", user_json(user)},
                                              {"orgs", orgs},
                                              {"current_org_id", current ? nlohmann::json(*current)
                                                                         : nlohmann::json(nullptr)},
                                              {"csrf_token", session.csrf_token}});
             r.set_header("Set-Cookie", session_cookie(req, session.cookie_value,
                                                       state.auth->policy().absolute.count()));
             r.set_header("Cache-Control", "no-store");
             return r;
           },
       .access = Access::kAnyone,
       .summary = "Sign in; sets the session cookie and returns the CSRF token.",
       .tag = "identity",
       .idempotency_key = false});

  router.add({.method = Method::kPost,
              .pattern = "/v1/auth/logout",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    state.pool->transact("identity_logout", [&](Tx& tx) {
                      state.store->delete_session(tx, p.session_id_hash);
                      state.store->audit(
                          tx, actor_of(req, p),
                          {.org_id = p.org_id, .action = "user.logout", .target = p.user.id});
                    });
                    Response r;
                    r.status = 204;
                    r.set_header("Set-Cookie", session_cookie(req, "", 0));
                    return r;
                  },
              .changes_credentials = true,
              .summary = "Sign out: the session ends at once.",
              .tag = "identity",
              .idempotency_key = false});

  router.add({.method = Method::kGet,
              .pattern = "/v1/me",
              .handler =
                  [](const Request&, const Principal& p) {
                    Response r = json_response(200, me_json(p));
                    r.set_header("Cache-Control", "no-store");
                    return r;
                  },
              .summary = "The caller: user, current org, role and scopes.",
              .tag = "identity"});

  // Sessions only: a person's other organisations are none of an org's API token's business.
  router.add({.method = Method::kGet,
              .pattern = "/v1/me/orgs",
              .handler =
                  [&state](const Request&, const Principal& p) {
                    auto memberships = state.pool->transact("identity_my_orgs", [&](Tx& tx) {
                      return state.store->memberships(tx, p.user.id);
                    });
                    nlohmann::json items = nlohmann::json::array();
                    for (const auto& m : memberships) {
                      items.push_back({{"id", m.org.id},
                                       {"name", m.org.name},
                                       {"role", m.role},
                                       {"current", p.org_id && *p.org_id == m.org.id}});
                    }
                    Response r = json_response(200, {{"items", items}, {"next_cursor", nullptr}});
                    r.set_header("Cache-Control", "no-store");
                    return r;
                  },
              .access = Access::kSessionOnly,
              .summary = "The organisations the signed-in person belongs to, with their role in "
                         "each and which one the session acts for (panel sessions only).",
              .tag = "identity"});

  router.add({.method = Method::kPost,
              .pattern = "/v1/session/org",
              .handler =
                  [&state](const Request& req, const Principal& caller) {
                    Principal p = caller;
                    auto body = parse_json_body(req);
                    JsonObjectReader in(body);
                    std::string org_id = in.required_string("org_id", 64);
                    in.finish();
                    auto role = state.pool->transact("identity_set_session_org", [&](Tx& tx) {
                      auto role = state.store->role_in(tx, p.user.id, org_id);
                      // Not a member looks exactly like no such org.
                      if (!role) throw Error(ErrorCode::kNotFound, "No such organisation.");
                      state.store->set_session_org(tx, p.session_id_hash, org_id);
                      return *role;
                    });
                    p.org_id = org_id;
                    p.role = role;
                    p.scopes = session_scopes(p.user, role);
                    return json_response(200, me_json(p));
                  },
              .access = Access::kSessionOnly,
              .changes_credentials = true,
              .summary = "Switch the session's current organisation.",
              .tag = "identity"});
}

}  // namespace gpurent::http
