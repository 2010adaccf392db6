// AuditStore: named, parameterised statements over audit_log; absent filters are NULL
// parameters, so one statement serves every combination.
#include "identity/audit_store.h"

#include "identity/sql_common.h"

#include "core/error.h"

#include <charconv>
#include <stdexcept>

namespace gpurent::identity {
namespace {

#define AUDIT_AT RFC3339("at")
#define AUDIT_COLUMNS                                                        \
  "id, " AUDIT_AT                                                            \
  ", org_id, actor_user_id, actor_token_id, action, target, ip, request_id," \
  " details::text"
// $2..$7: action, actor, since, until, cursor (the last id of the previous page), limit.
#define AUDIT_FILTERS                                                                   \
  " AND ($2::text IS NULL OR action = $2) AND ($3::text IS NULL OR actor_user_id = $3)" \
  " AND ($4::timestamptz IS NULL OR at >= $4) AND ($5::timestamptz IS NULL OR at < $5)" \
  " AND ($6::bigint IS NULL OR id < $6) ORDER BY id DESC LIMIT $7"

constexpr Statement kListAll = {
    "audit_list_all", "SELECT " AUDIT_COLUMNS
                      " FROM audit_log WHERE ($1::text IS NULL OR org_id = $1)" AUDIT_FILTERS};
constexpr Statement kListOrg = {
    "audit_list_org", "SELECT " AUDIT_COLUMNS " FROM audit_log WHERE org_id = $1" AUDIT_FILTERS};

std::optional<std::string> optional_text(const pqxx::field& f) {
  return f.is_null() ? std::nullopt : std::optional<std::string>(f.as<std::string>());
}

AuditRecord record_from(const pqxx::row& row) {
  AuditRecord r;
  r.id = row[0].as<long long>();
  r.at = row[1].as<std::string>();
  r.org_id = optional_text(row[2]);
  r.actor_user_id = optional_text(row[3]);
  r.actor_token_id = optional_text(row[4]);
  r.action = row[5].as<std::string>();
  r.target = optional_text(row[6]);
  r.ip = optional_text(row[7]);
  r.request_id = optional_text(row[8]);
  r.details = nlohmann::json::parse(row[9].as<std::string>());
  return r;
}

// A cursor is the decimal id of the last row on the previous page.
std::optional<long long> parse_cursor(const std::optional<std::string>& cursor) {
  if (!cursor) return std::nullopt;
  long long id = 0;
  const char* end = cursor->data() + cursor->size();
  auto [ptr, ec] = std::from_chars(cursor->data(), end, id);
  if (cursor->empty() || (*cursor)[0] == '-' || ec != std::errc() || ptr != end || id < 1) {
    throw Error::invalid_field("cursor", "is not a cursor from this list");
  }
  return id;
}

std::optional<std::string> optional_timestamp(const std::optional<Timestamp>& t) {
  return t ? std::optional<std::string>(sql_timestamp(*t)) : std::nullopt;
}

void check_limit(int limit) {
  if (limit < 1) throw std::invalid_argument("an audit page holds at least one row");
}

AuditPage page_from(const pqxx::result& rows, int limit) {
  // One row more than asked says whether another page follows.
  AuditPage page;
  for (const auto& row : rows) {
    if (static_cast<int>(page.items.size()) == limit) {
      page.next_cursor = std::to_string(page.items.back().id);
      break;
    }
    page.items.push_back(record_from(row));
  }
  return page;
}

}  // namespace

AuditPage AuditStore::list_all(const std::optional<std::string>& org_id, const AuditFilter& filter,
                               int limit, const std::optional<std::string>& cursor) {
  check_limit(limit);
  auto after = parse_cursor(cursor);
  return pool_.transact("audit_list_all", [&](PgPool::Lease& lease, pqxx::work& tx) {
    auto rows = lease.exec(tx, kListAll, org_id, filter.action, filter.actor_user_id,
                           optional_timestamp(filter.since), optional_timestamp(filter.until),
                           after, limit + 1);
    return page_from(rows, limit);
  });
}

AuditPage AuditStore::list_org(const std::string& org_id, const AuditFilter& filter, int limit,
                               const std::optional<std::string>& cursor) {
  check_limit(limit);
  auto after = parse_cursor(cursor);
  return pool_.transact("audit_list_org", [&](PgPool::Lease& lease, pqxx::work& tx) {
    auto rows = lease.exec(tx, kListOrg, org_id, filter.action, filter.actor_user_id,
                           optional_timestamp(filter.since), optional_timestamp(filter.until),
                           after, limit + 1);
    return page_from(rows, limit);
  });
}

}  // namespace gpurent::identity
