// The audit row every inventory change writes in its own transaction. Inventory belongs to
// the platform, not to a tenant, so the rows carry no org and show in GET /v1/admin/audit.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "identity/identity_store.h"
#include "identity/org_admin_store.h"
#include "identity/sql_common.h"

#include <nlohmann/json.hpp>

#include <string>

namespace gpurent::inventory {

using identity::AdminActor;
using identity::AuditContext;

inline constexpr Statement kInsertInventoryAudit = {
    "inventory_insert_audit",
    "INSERT INTO audit_log (at, org_id, actor_user_id, actor_token_id, action, target, ip,"
    " request_id, details) VALUES ($1, NULL, $2, $3, $4, $5, $6, $7, $8::jsonb)"};

inline void write_admin_audit(PgPool::Lease& lease, pqxx::work& tx, const Clock& clock,
                              const AdminActor& actor, const AuditContext& ctx, const char* action,
                              const std::string& target, const nlohmann::json& details) {
  lease.exec(tx, kInsertInventoryAudit, identity::sql_timestamp(clock.now()), actor.user_id,
             actor.token_id, action, target, ctx.ip, ctx.request_id, details.dump());
}

}  // namespace gpurent::inventory
