// AuditStore: named, parameterised statements over audit_log; absent filters are NULL
// parameters, so one statement serves every combination.
#include "identity/audit_store.h"

#include "core/sql.h"

#include <charconv>
#include <stdexcept>
#include <string_view>

namespace gpurent::identity {
namespace {

#define AUDIT_AT SQL_MICROS("at")
#define AUDIT_COLUMNS                                                        \
  "id, " AUDIT_AT                                                            \
  ", org_id, actor_user_id, actor_token_id, action, target, ip, request_id," \
  " details::text"
// $2..$8: action, actor, since, until, the cursor's time and id (both NULL on the first
// page), limit. Newest first: rows sharing a time go by id, so a cursor splits them.
#define AUDIT_FILTERS                                                                   \
  " AND ($2::text IS NULL OR action = $2) AND ($3::text IS NULL OR actor_user_id = $3)" \
  " AND ($4::timestamptz IS NULL OR at >= $4) AND ($5::timestamptz IS NULL OR at < $5)" \
  " AND ($6::timestamptz IS NULL OR (at, id) < ($6::timestamptz, $7::bigint))"          \
  " ORDER BY at DESC, id DESC LIMIT $8"

constexpr Statement kListAll = {
    "audit_list_all", "SELECT " AUDIT_COLUMNS
                      " FROM audit_log WHERE ($1::text IS NULL OR org_id = $1)" AUDIT_FILTERS};
constexpr Statement kListOrg = {
    "audit_list_org", "SELECT " AUDIT_COLUMNS " FROM audit_log WHERE org_id = $1" AUDIT_FILTERS};

AuditRecord record_from(const pqxx::row& row) {
  AuditRecord r;
  r.id = row[0].as<long long>();
  r.at = read_timestamp(row[1]);
  r.org_id = optional_field<std::string>(row[2]);
  r.actor_user_id = optional_field<std::string>(row[3]);
  r.actor_token_id = optional_field<std::string>(row[4]);
  r.action = row[5].as<std::string>();
  r.target = optional_field<std::string>(row[6]);
  r.ip = optional_field<std::string>(row[7]);
  r.request_id = optional_field<std::string>(row[8]);
  r.details = nlohmann::json::parse(row[9].as<std::string>());
  return r;
}

// A row id as a cursor carries it: a positive bigint in plain decimal.
bool is_row_id(std::string_view id) {
  long long value = 0;
  auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), value);
  return ec == std::errc() && end == id.data() + id.size() && value > 0 && id.front() != '0';
}

// The cursor's time and id as statement parameters; both absent on the first page.
struct After {
  std::optional<std::string> at;
  std::optional<long long> id;
};

After after(const std::optional<std::string>& cursor) {
  if (!cursor) return {};
  Keyset key = decode_cursor(*cursor, is_row_id);
  return {sql_timestamp(key.at), std::stoll(key.id)};
}

std::optional<std::string> optional_timestamp(const std::optional<Timestamp>& t) {
  return t ? std::optional<std::string>(sql_timestamp(*t)) : std::nullopt;
}

void check_limit(int limit) {
  if (limit < 1) throw std::invalid_argument("an audit page holds at least one row");
}

AuditPage page_from(const pqxx::result& rows, int limit) {
  return page_of<AuditRecord>(rows, limit, record_from, [](const AuditRecord& r) {
    return Keyset{r.at, std::to_string(r.id)};
  });
}

}  // namespace

AuditPage AuditStore::list_all(Tx& tx, const std::optional<std::string>& org_id,
                               const AuditFilter& filter, int limit,
                               const std::optional<std::string>& cursor) {
  check_limit(limit);
  auto from = after(cursor);
  return page_from(tx.exec(kListAll, org_id, filter.action, filter.actor_user_id,
                           optional_timestamp(filter.since), optional_timestamp(filter.until),
                           from.at, from.id, limit + 1),
                   limit);
}

AuditPage AuditStore::list_org(Tx& tx, const std::string& org_id, const AuditFilter& filter,
                               int limit, const std::optional<std::string>& cursor) {
  check_limit(limit);
  auto from = after(cursor);
  return page_from(tx.exec(kListOrg, org_id, filter.action, filter.actor_user_id,
                           optional_timestamp(filter.since), optional_timestamp(filter.until),
                           from.at, from.id, limit + 1),
                   limit);
}

}  // namespace gpurent::identity
