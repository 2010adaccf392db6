// OrgAdminStore: named, parameterised statements over orgs for platform admins.
#include "identity/org_admin_store.h"

#include "identity/sql_common.h"

#include "core/error.h"
#include "core/id.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace gpurent::identity {
namespace {

// The exact creation time in microseconds since the epoch: half of a page cursor.
#define ORG_CURSOR_MICROS "(extract(epoch FROM o.created_at) * 1000000)::bigint"
#define ORG_CREATED_AT RFC3339("o.created_at")
#define ORG_MEMBER_COUNT "(SELECT count(*) FROM memberships m WHERE m.org_id = o.id)"
#define ORG_COLUMNS                                                             \
  "o.id, o.name, " ORG_CREATED_AT                                               \
  ", o.max_concurrent_gpus, o.max_days, o.spend_limit_minor, " ORG_MEMBER_COUNT \
  ", " ORG_CURSOR_MICROS

constexpr Statement kListFirst = {"org_admin_list_first",
                                  "SELECT " ORG_COLUMNS
                                  " FROM orgs o ORDER BY o.created_at, o.id LIMIT $1"};
constexpr Statement kListAfter = {"org_admin_list_after",
                                  "SELECT " ORG_COLUMNS
                                  " FROM orgs o WHERE (o.created_at, o.id) > ($1::timestamptz, $2)"
                                  " ORDER BY o.created_at, o.id LIMIT $3"};
constexpr Statement kGetOrg = {"org_admin_get",
                               "SELECT " ORG_COLUMNS " FROM orgs o WHERE o.id = $1"};
constexpr Statement kLockGuardrails = {
    "org_admin_lock_guardrails",
    "SELECT max_concurrent_gpus, max_days, spend_limit_minor FROM orgs WHERE id = $1 FOR UPDATE"};
constexpr Statement kSetGuardrails = {
    "org_admin_set_guardrails",
    "UPDATE orgs SET max_concurrent_gpus = $2, max_days = $3, spend_limit_minor = $4"
    " WHERE id = $1"};
// kInsertAuditRow plus the API token that acted, when one did.
constexpr Statement kInsertAdminAudit = {
    "org_admin_insert_audit",
    "INSERT INTO audit_log (at, org_id, actor_user_id, actor_token_id, action, target, ip,"
    " request_id, details) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb)"};

Guardrails guardrails_from(const pqxx::row& row, int first) {
  return {optional_field<int>(row[first]), optional_field<int>(row[first + 1]),
          optional_field<long long>(row[first + 2])};
}

// Column 7 (the creation time in microseconds) is read by list() for its cursor.
OrgRecord row_from(const pqxx::row& row) {
  OrgRecord r;
  r.id = row[0].as<std::string>();
  r.name = row[1].as<std::string>();
  r.created_at = row[2].as<std::string>();
  r.guardrails = guardrails_from(row, 3);
  r.member_count = row[6].as<long long>();
  return r;
}

nlohmann::json guardrails_json(const Guardrails& g) {
  auto value = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"max_concurrent_gpus", value(g.max_concurrent_gpus)},
          {"max_days", value(g.max_days)},
          {"spend_limit_minor", value(g.spend_limit_minor)}};
}

template <typename T>
void apply(const LimitChange<T>& change, std::optional<T>& limit) {
  if (change.change) limit = change.value;
}

// The table's CHECK constraints, as errors naming the field instead of a failed statement.
void validate(const GuardrailsChange& c) {
  if (c.max_concurrent_gpus.value && *c.max_concurrent_gpus.value < 0) {
    throw Error::invalid_field("max_concurrent_gpus", "must not be negative");
  }
  if (c.max_days.value && *c.max_days.value < 1) {
    throw Error::invalid_field("max_days", "must be at least 1");
  }
  if (c.spend_limit_minor.value && *c.spend_limit_minor.value < 0) {
    throw Error::invalid_field("spend_limit.amount_minor", "must not be negative");
  }
}

}  // namespace

OrgPage OrgAdminStore::list(int limit, const std::optional<std::string>& cursor) {
  if (limit < 1) throw std::invalid_argument("an org page holds at least one org");
  std::optional<KeysetPosition> after;
  if (cursor) after = parse_keyset_cursor(*cursor, id_prefix::kOrg);
  return pool_.transact("org_admin_list", [&](PgPool::Lease& lease, pqxx::work& tx) {
    // One row more than asked says whether another page follows.
    auto rows = after ? lease.exec(tx, kListAfter, after->created_at, after->id, limit + 1)
                      : lease.exec(tx, kListFirst, limit + 1);
    return keyset_page<OrgRecord>(rows, limit, 7, row_from,
                                  [](const OrgRecord& o) { return o.id; });
  });
}

std::optional<OrgRecord> OrgAdminStore::get(const std::string& org_id) {
  return pool_.transact("org_admin_get", [&](PgPool::Lease& lease, pqxx::work& tx) {
    auto rows = lease.exec(tx, kGetOrg, org_id);
    std::optional<OrgRecord> out;
    if (!rows.empty()) out = row_from(rows[0]);
    return out;
  });
}

std::optional<OrgRecord> OrgAdminStore::set_guardrails(const std::string& org_id,
                                                       const GuardrailsChange& change,
                                                       const AdminActor& actor,
                                                       const AuditContext& ctx) {
  validate(change);
  return pool_.transact("org_admin_set_guardrails", [&](PgPool::Lease& lease, pqxx::work& tx) {
    std::optional<OrgRecord> out;
    // The lock makes before/after in the audit row exact under concurrent changes.
    auto locked = lease.exec(tx, kLockGuardrails, org_id);
    if (locked.empty()) return out;
    Guardrails before = guardrails_from(locked[0], 0);
    Guardrails after = before;
    apply(change.max_concurrent_gpus, after.max_concurrent_gpus);
    apply(change.max_days, after.max_days);
    apply(change.spend_limit_minor, after.spend_limit_minor);
    lease.exec(tx, kSetGuardrails, org_id, after.max_concurrent_gpus, after.max_days,
               after.spend_limit_minor);
    nlohmann::json details = {{"before", guardrails_json(before)},
                              {"after", guardrails_json(after)}};
    lease.exec(tx, kInsertAdminAudit, sql_timestamp(clock_.now()), org_id, actor.user_id,
               actor.token_id, "org.guardrails_set", org_id, ctx.ip, ctx.request_id,
               details.dump());
    out = row_from(lease.exec(tx, kGetOrg, org_id)[0]);
    return out;
  });
}

}  // namespace gpurent::identity
