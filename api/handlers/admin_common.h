// Platform-admin routes (declared with .platform_admin = true) audit the changes they make
// under the admin user, and the token when one was used.
#pragma once

#include "api/auth.h"
#include "identity/org_admin_store.h"

namespace gpurent::http {

inline identity::AdminActor admin_actor(const Principal& p) {
  return {p.user.id, p.token_id.empty() ? std::nullopt : std::optional<std::string>(p.token_id)};
}

}  // namespace gpurent::http
