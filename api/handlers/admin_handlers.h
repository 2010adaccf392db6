// Platform administration: organisations and their guardrails (/v1/admin/orgs) and the
// cross-tenant audit log (/v1/admin/audit). Every route needs require_platform_admin.
#pragma once

#include "api/auth.h"
#include "api/router.h"
#include "core/db_pool.h"
#include "identity/audit_store.h"
#include "identity/org_admin_store.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gpurent::http {

struct AdminRoutesState {
  PgPool* pool = nullptr;
  identity::OrgAdminStore* orgs = nullptr;
  identity::AuditStore* audit = nullptr;
  // Each org's balance as billing shows it (org id → JSON), read in the list's transaction;
  // unset: the list carries none.
  std::function<std::map<std::string, nlohmann::json>(Tx&, const std::vector<std::string>&)>
      balances;
};

void add_admin_routes(Router& router, AdminRoutesState& state);

}  // namespace gpurent::http
