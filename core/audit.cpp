// The audit row.
#include "core/audit.h"

#include "core/sql.h"

namespace gpurent {
namespace {

constexpr Statement kInsertAudit = {
    "audit_insert",
    "INSERT INTO audit_log (at, org_id, actor_user_id, actor_token_id, action, target, ip,"
    " request_id, details) VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), NULLIF($7, ''),"
    " NULLIF($8, ''), $9::jsonb)"};

}  // namespace

void write_audit(Tx& tx, Timestamp at, const Actor& actor, const AuditEntry& entry) {
  tx.exec(kInsertAudit, sql_timestamp(at), entry.org_id, actor.user_id, actor.token_id,
          std::string(entry.action), entry.target, actor.ip, actor.request_id,
          entry.details.dump());
}

}  // namespace gpurent
