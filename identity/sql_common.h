// SQL fragments and statements shared by the identity stores.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"

#include <string>

// Timestamps leave the database as RFC 3339 UTC with second precision, as the API prints them.
#define RFC3339(column) "to_char(" column " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"

namespace gpurent::identity {

// A timestamp as a parameter: RFC 3339 UTC with microseconds, so ordering within one second
// survives the round trip.
std::string sql_timestamp(Timestamp t);

// One audit row: at, org_id, actor_user_id, action, target, ip, request_id, details (JSON
// text). Stores write it inside the transaction of the change it records.
inline constexpr Statement kInsertAuditRow = {
    "identity_insert_audit",
    "INSERT INTO audit_log (at, org_id, actor_user_id, action, target, ip, request_id, details)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb)"};

}  // namespace gpurent::identity
