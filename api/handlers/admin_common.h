// What every platform-admin route starts with: the caller must be a platform admin, and
// the changes it makes are audited under that user (and token, when one was used).
#pragma once

#include "api/auth.h"
#include "identity/org_admin_store.h"

namespace gpurent::http {

inline Principal platform_admin(const Authenticator& auth, const Request& req) {
  Principal p = auth.authenticate(req);
  require_platform_admin(p);
  return p;
}

inline identity::AdminActor admin_actor(const Principal& p) {
  return {p.user.id, p.token_id.empty() ? std::nullopt : std::optional<std::string>(p.token_id)};
}

}  // namespace gpurent::http
