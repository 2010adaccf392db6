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

// Each org's balance as billing shows it (org id → JSON), read in the list's transaction:
// billing's answer (identity knows nothing of money).
class OrgBalancesView {
 public:
  virtual ~OrgBalancesView() = default;
  virtual std::map<std::string, nlohmann::json> balances_json(
      Tx& tx, const std::vector<std::string>& org_ids) = 0;
};

struct AdminRoutesState {
  PgPool* pool = nullptr;
  identity::OrgAdminStore* orgs = nullptr;
  identity::AuditStore* audit = nullptr;
  OrgBalancesView* balances = nullptr;  // none: the list carries no balances
};

void add_admin_routes(Router& router, AdminRoutesState& state);

}  // namespace gpurent::http
