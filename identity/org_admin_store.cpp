// OrgAdminStore: named, parameterised statements over orgs for platform admins.
#include "identity/org_admin_store.h"

#include "core/error.h"
#include "core/id.h"
#include "core/sql.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace gpurent::identity {
namespace {

#define ORG_MEMBER_COUNT "(SELECT count(*) FROM memberships m WHERE m.org_id = o.id)"
#define ORG_CREATED_AT SQL_MICROS("o.created_at")
#define ORG_COLUMNS               \
  "o.id, o.name, " ORG_CREATED_AT \
  ", o.max_concurrent_gpus, o.max_days, o.spend_limit_minor, " ORG_MEMBER_COUNT

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

Guardrails guardrails_from(const pqxx::row& row, int first) {
  return {optional_field<int>(row[first]), optional_field<int>(row[first + 1]),
          optional_field<std::int64_t>(row[first + 2])};
}

OrgRecord row_from(const pqxx::row& row) {
  OrgRecord r;
  r.id = row[0].as<std::string>();
  r.name = row[1].as<std::string>();
  r.created_at = read_timestamp(row[2]);
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

OrgPage OrgAdminStore::list(Tx& tx, int limit, const std::optional<std::string>& cursor) {
  if (limit < 1) throw std::invalid_argument("an org page holds at least one org");
  std::optional<Keyset> after;
  if (cursor) {
    after = decode_cursor(*cursor,
                          [](std::string_view id) { return is_valid_id(id_prefix::kOrg, id); });
  }
  // One row more than asked says whether another page follows.
  auto rows = after ? tx.exec(kListAfter, sql_timestamp(after->at), after->id, limit + 1)
                    : tx.exec(kListFirst, limit + 1);
  return page_of<OrgRecord>(rows, limit, row_from, [](const OrgRecord& o) {
    return Keyset{o.created_at, o.id};
  });
}

std::optional<OrgRecord> OrgAdminStore::get(Tx& tx, const std::string& org_id) {
  auto rows = tx.exec(kGetOrg, org_id);
  if (rows.empty()) return std::nullopt;
  return row_from(rows[0]);
}

Guardrails OrgAdminStore::guardrails_of(Tx& tx, const std::string& org_id) {
  auto org = get(tx, org_id);
  return org ? org->guardrails : Guardrails{};
}

std::optional<OrgRecord> OrgAdminStore::set_guardrails(Tx& tx, const std::string& org_id,
                                                       const GuardrailsChange& change,
                                                       const Actor& actor) {
  validate(change);
  // The lock makes before/after in the audit row exact under concurrent changes.
  auto locked = tx.exec(kLockGuardrails, org_id);
  if (locked.empty()) return std::nullopt;
  Guardrails before = guardrails_from(locked[0], 0);
  Guardrails after = before;
  apply(change.max_concurrent_gpus, after.max_concurrent_gpus);
  apply(change.max_days, after.max_days);
  apply(change.spend_limit_minor, after.spend_limit_minor);
  tx.exec(kSetGuardrails, org_id, after.max_concurrent_gpus, after.max_days,
          after.spend_limit_minor);
  write_audit(
      tx, clock_.now(), actor,
      {.org_id = org_id,
       .action = "org.guardrails_set",
       .target = org_id,
       .details = {{"before", guardrails_json(before)}, {"after", guardrails_json(after)}}});
  return row_from(tx.exec(kGetOrg, org_id)[0]);
}

}  // namespace gpurent::identity
