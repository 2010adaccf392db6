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

identity::AuditContext audit_context(const Request& request) {
  return {std::string(request.remote_ip), std::string(request.request_id)};
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
  auto t = tokens_.authenticate(std::string(token));
  if (!t) throw Error(ErrorCode::kUnauthenticated, "The API token is unknown, revoked or expired.");
  // A token acts with its own scopes, but never beyond its creator's current role: a
  // creator who lost the role (or left the org) takes the token's power with them.
  auto role = store_.role_in(t->user.id, t->org_id);
  if (!role)
    throw Error(ErrorCode::kUnauthenticated, "The API token's owner left the organisation.");
  Principal p;
  p.user = t->user;
  p.org_id = t->org_id;
  p.role = *role;
  auto allowed = scopes_for_role(*role);
  for (const auto& s : t->scopes) {
    // `admin` is no role's: it holds only while the creator is a platform admin (read
    // fresh with the token, so a demoted admin's tokens lose it on the next request).
    bool keep = s == kAdminScope ? t->user.is_platform_admin
                                 : std::find(allowed.begin(), allowed.end(), s) != allowed.end();
    if (keep) p.scopes.push_back(s);
  }
  p.token_id = t->token_id;
  p.guardrails = t->guardrails;
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
  auto session = store_.find_session(std::string(cookie), policy_);
  if (!session) throw Error(ErrorCode::kUnauthenticated, "The session has expired; sign in again.");
  if (is_unsafe_method(request.method) &&
      !crypto::constant_time_equal(request.header("X-CSRF-Token"), session->csrf_token)) {
    throw Error(ErrorCode::kForbidden, "The X-CSRF-Token header is missing or wrong.");
  }
  Principal p;
  p.user = session->user;
  p.session_id_hash = session->id_hash;
  if (session->current_org_id) {
    // The membership is checked on every request: a removed member loses access at once.
    if (auto role = store_.role_in(p.user.id, *session->current_org_id)) {
      p.org_id = session->current_org_id;
      p.role = *role;
    }
  }
  // The user (and so the platform-admin flag) is read with the session on every request:
  // a demoted admin loses `admin` at once.
  p.scopes = session_scopes(p.user, p.role);
  return p;
}

}  // namespace gpurent::http
