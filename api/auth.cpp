// Session-cookie authentication with CSRF checks, and role → scope mapping.
#include "api/auth.h"

#include "core/crypto.h"
#include "core/error.h"

#include <algorithm>

namespace gpurent::http {

std::vector<std::string> scopes_for_role(std::string_view role) {
  if (role == "owner" || role == "admin") {
    return {"rentals:read",   "rentals:write", "billing:read",
            "ssh-keys:write", "members:write", "tokens:write"};
  }
  if (role == "member") return {"rentals:read", "rentals:write", "ssh-keys:write", "tokens:write"};
  if (role == "billing") return {"rentals:read", "billing:read"};
  if (role == "viewer") return {"rentals:read"};
  return {};
}

std::vector<std::string> session_scopes(const identity::User& user, std::string_view role) {
  auto scopes = scopes_for_role(role);
  if (user.is_platform_admin) scopes.emplace_back(kAdminScope);
  return scopes;
}

std::string_view cookie_value(const Request& request, std::string_view name) {
  std::string_view header = request.header("Cookie");
  while (!header.empty()) {
    auto semi = header.find(';');
    std::string_view pair = header.substr(0, semi);
    header = semi == std::string_view::npos ? std::string_view() : header.substr(semi + 1);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    auto eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name) return pair.substr(eq + 1);
  }
  return {};
}

bool is_unsafe_method(Method method) {
  return method != Method::kGet && method != Method::kHead && method != Method::kOptions;
}

gpurent::Actor actor_of(const Request& request, const Principal& principal) {
  gpurent::Actor actor;
  if (!principal.user.id.empty()) actor.user_id = principal.user.id;
  if (!principal.token_id.empty()) actor.token_id = principal.token_id;
  actor.ip = std::string(request.remote_ip);
  actor.request_id = std::string(request.request_id);
  return actor;
}

gpurent::Caller caller_of(const Request& request, const Principal& principal) {
  return {.actor = actor_of(request, principal),
          .org_id = principal.org_id.value_or(std::string()),
          .role = principal.role,
          .token_guardrails = principal.guardrails};
}

const std::string& require_org(const Principal& principal) {
  if (!principal.org_id) {
    throw Error(ErrorCode::kForbidden, "This needs an organisation; choose one first.");
  }
  return *principal.org_id;
}

void require_scope(const Principal& principal, std::string_view scope) {
  for (const auto& s : principal.scopes) {
    if (s == scope) return;
  }
  throw Error(ErrorCode::kForbidden, "This needs the " + std::string(scope) + " permission.",
              {{"scope", scope}});
}

void require_platform_admin(const Principal& principal) {
  bool scoped = std::find(principal.scopes.begin(), principal.scopes.end(), kAdminScope) !=
                principal.scopes.end();
  if (!principal.user.is_platform_admin || !scoped) {
    throw Error(ErrorCode::kForbidden, "This needs a platform administrator.");
  }
}

Principal Authenticator::authenticate_token(std::string_view token) const {
  // gpr_ + 64 hex characters; anything else cannot match and is not looked up.
  if (token.size() != 68 || token.substr(0, 4) != "gpr_") {
    throw Error(ErrorCode::kUnauthenticated, "The API token is malformed.");
  }
  auto t = credentials_.token(crypto::sha256_hex(token));
  if (!t) throw Error(ErrorCode::kUnauthenticated, "The API token is unknown, revoked or expired.");
  // A token acts with its own scopes, but never beyond its creator's current role: a
  // creator who lost the role (or left the org) takes the token's power with them.
  if (!t->role)
    throw Error(ErrorCode::kUnauthenticated, "The API token's owner left the organisation.");
  const identity::TokenIdentity& id = t->identity;
  Principal p;
  p.user = id.user;
  p.org_id = id.org_id;
  p.role = *t->role;
  auto allowed = scopes_for_role(p.role);
  for (const auto& s : id.scopes) {
    // `admin` is no role's: it holds only while the creator is a platform admin (read
    // with the token, so a demoted admin's tokens lose it on the next request).
    bool keep = s == kAdminScope ? id.user.is_platform_admin
                                 : std::find(allowed.begin(), allowed.end(), s) != allowed.end();
    if (keep) p.scopes.push_back(s);
  }
  p.token_id = id.token_id;
  p.guardrails = id.guardrails;
  return p;
}

Principal Authenticator::authenticate(const Request& request) const {
  std::string_view authorization = request.header("Authorization");
  if (!authorization.empty()) {
    if (authorization.size() < 7 || authorization.substr(0, 7) != "Bearer ") {
      throw Error(ErrorCode::kUnauthenticated, "Authorization must be 'Bearer <API token>'.");
    }
    return authenticate_token(authorization.substr(7));
  }
  std::string_view cookie = cookie_value(request, kSessionCookie);
  // Session ids are 64 hex characters; anything else cannot match and is not looked up.
  if (cookie.size() != 64) {
    throw Error(ErrorCode::kUnauthenticated, "Sign in or send an API token.");
  }
  auto s = credentials_.session(crypto::sha256_hex(cookie), policy_);
  if (!s) throw Error(ErrorCode::kUnauthenticated, "The session has expired; sign in again.");
  if (is_unsafe_method(request.method) &&
      !crypto::constant_time_equal(request.header("X-CSRF-Token"), s->session.csrf_token)) {
    throw Error(ErrorCode::kForbidden, "The X-CSRF-Token header is missing or wrong.");
  }
  Principal p;
  p.user = s->session.user;
  p.session_id_hash = s->session.id_hash;
  p.csrf_token = s->session.csrf_token;
  // The membership is read with the session and dropped with it on any change: a removed
  // member loses access on the next request.
  if (s->session.current_org_id && s->role) {
    p.org_id = s->session.current_org_id;
    p.role = *s->role;
  }
  // So is the platform-admin flag: a demoted admin loses `admin` on the next request.
  p.scopes = session_scopes(p.user, p.role);
  return p;
}

Principal authorize(const Authenticator& auth, const Route& route, const Request& request) {
  if (route.access == Access::kAnyone) return {};
  Principal p = auth.authenticate(request);
  if (route.access == Access::kSessionOnly && !p.token_id.empty()) {
    // A token belongs to one org for its whole life; what is session-only (switching the
    // current org) is never a token's to do.
    throw Error(ErrorCode::kForbidden,
                "An API token acts for its own organisation; only a session can do this.");
  }
  if (route.platform_admin) require_platform_admin(p);
  if (route.needs_org) require_org(p);
  if (!route.scope.empty()) require_scope(p, route.scope);
  return p;
}

}  // namespace gpurent::http
