// Who is calling: resolves a session cookie (with CSRF on unsafe methods) or, as later
// capabilities add them, an API token, into a Principal acting for one org.
#pragma once

#include "api/credential_cache.h"
#include "api/http_types.h"
#include "api/router.h"
#include "core/audit.h"
#include "core/caller.h"
#include "identity/identity_store.h"
#include "identity/token_store.h"

#include <optional>
#include <string>
#include <vector>

namespace gpurent::http {

inline constexpr std::string_view kSessionCookie = "gpurent_session";

struct Principal {
  identity::User user;
  std::optional<std::string> org_id;  // the org acted for
  std::string role;                   // role in org_id; empty when none
  std::vector<std::string> scopes;
  std::string session_id_hash;      // set for cookie sessions
  std::string csrf_token;           // set for cookie sessions: GET /v1/me hands it to the panel
  std::string token_id;             // set for API tokens
  identity::Guardrails guardrails;  // the token's limits (API tokens only)
};

// The scope of platform administration. It is not an org role's: a platform admin's
// sessions carry it whatever org they act for, and so may the tokens they create.
inline constexpr std::string_view kAdminScope = "admin";

// Scopes a role grants to its sessions (API tokens carry their own, within these).
std::vector<std::string> scopes_for_role(std::string_view role);

// A session's scopes: its role's, plus `admin` when the user is a platform admin.
std::vector<std::string> session_scopes(const identity::User& user, std::string_view role);

// The value of one cookie from the Cookie header; empty when absent.
std::string_view cookie_value(const Request& request, std::string_view name);

bool is_unsafe_method(Method method);

// The actor of the audit rows a request writes: the principal's user and, when it came
// with one, its API token; the client's address and the request id. For anonymous routes
// (an empty Principal) only the address and request id.
gpurent::Actor actor_of(const Request& request, const Principal& principal);

// What a use case is told of who asks: the actor above, the org acted for, the role in it
// and an API token's guardrails.
gpurent::Caller caller_of(const Request& request, const Principal& principal);

// The org the principal acts for; Error(kForbidden) when it acts for none (a user with
// no membership, or a platform admin outside any org).
const std::string& require_org(const Principal& principal);

// Error(kForbidden) unless the principal's role (sessions) or token carries `scope`.
void require_scope(const Principal& principal, std::string_view scope);

// Error(kForbidden) unless the user is a platform admin now and the principal carries the
// `admin` scope (a session of theirs, or a token they granted it).
void require_platform_admin(const Principal& principal);

// The pipeline's check of a route's declaration (Route::access, needs_org, scope,
// platform_admin): the caller, or Error(kUnauthenticated/kForbidden) before any handler
// runs. kAnyone routes read no credentials and get an empty Principal.
class Authenticator;
Principal authorize(const Authenticator& auth, const Route& route, const Request& request);

// Resolves credentials through the CredentialCache: a cached token or session costs no
// database round trip, a miss one statement.
class Authenticator {
 public:
  Authenticator(CredentialCache& credentials, identity::SessionPolicy policy)
      : credentials_(credentials), policy_(policy) {}

  // Throws Error(kUnauthenticated) without valid credentials, Error(kForbidden) when a
  // cookie-authenticated unsafe request lacks the session's CSRF token.
  Principal authenticate(const Request& request) const;

  const identity::SessionPolicy& policy() const { return policy_; }

 private:
  Principal authenticate_token(std::string_view token) const;

  CredentialCache& credentials_;
  identity::SessionPolicy policy_;
};

}  // namespace gpurent::http
