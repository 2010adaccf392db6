// Platform administration: organisations and their guardrails (/v1/admin/orgs) and the
// cross-tenant audit log (/v1/admin/audit). Every route needs require_platform_admin.
#pragma once

#include "api/auth.h"
#include "api/router.h"
#include "core/db_pool.h"
#include "identity/audit_store.h"
#include "identity/org_admin_store.h"

namespace gpurent::http {

struct AdminRoutesState {
  PgPool* pool = nullptr;
  identity::OrgAdminStore* orgs = nullptr;
  identity::AuditStore* audit = nullptr;
};

void add_admin_routes(Router& router, AdminRoutesState& state);

}  // namespace gpurent::http
