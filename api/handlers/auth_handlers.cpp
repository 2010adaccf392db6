// Identity routes: sign-up and login are identity::SignIn's use cases; the session's own
// routes (logout, /v1/me, switching org) are one store call each.
#include "api/handlers/auth_handlers.h"
#include "api/handlers/json_values.h"

#include "api/json_body.h"
#include "api/rate_limiter.h"
#include "api/responses.h"
#include "core/clock.h"
#include "core/crypto.h"
#include "core/error.h"
#include "identity/sign_in.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace gpurent::http {
namespace {

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

struct SignUpForm {
  std::string email;
  std::string password;
  std::string org_name;
};

// {email, password, org_name}
SignUpForm read_signup(const Request& req) {
  auto body = parse_json_body(req);
  JsonObjectReader in(body);
  SignUpForm f{.email = validated_email(in.required_string("email", 254)),
               .password = in.required_string("password", 1024),
               .org_name = trimmed(in.required_string("org_name", 200))};
  in.finish();
  if (f.org_name.empty() || has_control_characters(f.org_name)) {
    throw Error::invalid_field("org_name", "must be 1 to 200 printable characters");
  }
  return f;
}

// {email, password}: the email trimmed, as it was registered.
std::pair<std::string, std::string> read_login(const Request& req) {
  auto body = parse_json_body(req);
  JsonObjectReader in(body);
  std::string email = trimmed(in.required_string("email", 254));
  std::string password = in.required_string("password", 1024);
  in.finish();
  return {email, password};
}

nlohmann::json signed_in_json(const identity::SignedIn& s) {
  nlohmann::json orgs = nlohmann::json::array();
  for (const auto& m : s.memberships) {
    orgs.push_back({{"id", m.org.id}, {"name", m.org.name}, {"role", m.role}});
  }
  return {{"user", user_json(s.user)},
          {"orgs", orgs},
          {"current_org_id",
           s.current_org_id ? nlohmann::json(*s.current_org_id) : nlohmann::json(nullptr)},
          {"csrf_token", s.session.csrf_token}};
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
  router.add({.method = Method::kPost,
              .pattern = "/v1/auth/signup",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    if (!state.signup_enabled) {
                      throw Error(ErrorCode::kForbidden, "Sign-up is disabled on this service.");
                    }
                    auto f = read_signup(req);
                    auto [user, org] =
                        state.sign_in->signup(actor_of(req, p), f.email, f.password, f.org_name);
                    return json_response(201, {{"user", user_json(user)},
                                               {"org", {{"id", org.id}, {"name", org.name}}}});
                  },
              .access = Access::kAnyone,
              .summary = "Create an account and its organisation.",
              .tag = "identity",
              .idempotency_key = false});

  router.add({.method = Method::kPost,
              .pattern = "/v1/auth/login",
              .handler =
                  [&state](const Request& req, const Principal& p) {
                    auto [email, password] = read_login(req);
                    try {
                      auto signed_in = state.sign_in->login(actor_of(req, p), email, password);
                      Response r = json_response(200, signed_in_json(signed_in));
                      r.set_header("Set-Cookie",
                                   session_cookie(req, signed_in.session.cookie_value,
                                                  state.auth->policy().absolute.count()));
                      r.set_header("Cache-Control", "no-store");
                      return r;
                    } catch (const identity::TooManyLogins& e) {
                      return rate_limited_response(e.retry_after_seconds());
                    }
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
