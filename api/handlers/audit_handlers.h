// The audit log of the caller's organisation (GET /v1/audit), and the filter and JSON
// shared with the platform admins' cross-tenant view (GET /v1/admin/audit).
#pragma once

#include "api/auth.h"
#include "api/handlers/query_params.h"
#include "api/router.h"
#include "core/db_pool.h"
#include "identity/audit_store.h"

#include <nlohmann/json.hpp>

namespace gpurent::http {

struct AuditRoutesState {
  PgPool* pool = nullptr;
  identity::AuditStore* store = nullptr;
};

void add_audit_routes(Router& router, AuditRoutesState& state);

// action, actor_user_id, since, until from the query; invalid_request naming the one that
// is malformed (or `until` when it lies before `since`).
identity::AuditFilter read_audit_filter(const QueryParams& query);

// {"items": [...], "next_cursor": "…"|null}
nlohmann::json audit_page_json(const identity::AuditPage& page);

}  // namespace gpurent::http
