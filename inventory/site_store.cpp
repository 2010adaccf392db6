// SiteStore: named, parameterised statements over sites.
#include "inventory/site_store.h"

#include "core/error.h"
#include "core/id.h"

namespace gpurent::inventory {
namespace {

using identity::sql_timestamp;

#define SITE_COLUMNS \
  "id, name, region, timezone, " RFC3339("created_at") ", " EPOCH_MICROS("created_at")

constexpr Statement kKnownZone = {"site_known_zone",
                                  "SELECT 1 FROM pg_timezone_names WHERE name = $1"};
constexpr Statement kInsert = {"site_insert",
                               "INSERT INTO sites (id, name, region, timezone, created_at)"
                               " VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING"
                               " RETURNING " SITE_COLUMNS};
constexpr Statement kGet = {"site_get", "SELECT " SITE_COLUMNS " FROM sites WHERE id = $1"};
constexpr Statement kListFirst = {
    "site_list_first", "SELECT " SITE_COLUMNS " FROM sites ORDER BY created_at, id LIMIT $1"};
constexpr Statement kListAfter = {"site_list_after",
                                  "SELECT " SITE_COLUMNS
                                  " FROM sites WHERE (created_at, id) > ($1::timestamptz, $2)"
                                  " ORDER BY created_at, id LIMIT $3"};

SiteRecord row_from(const pqxx::row& row) {
  return {row[0].as<std::string>(), row[1].as<std::string>(), row[2].as<std::string>(),
          row[3].as<std::string>(), row[4].as<std::string>()};
}

}  // namespace

SiteRecord SiteStore::create(const std::string& name, const std::string& region,
                             const std::string& timezone, const AdminActor& actor,
                             const AuditContext& ctx) {
  return pool_.transact("site_create", [&](PgPool::Lease& lease, pqxx::work& tx) {
    if (lease.exec(tx, kKnownZone, timezone).empty()) {
      throw Error::invalid_field("timezone", "is not an IANA time zone such as Europe/Moscow");
    }
    auto rows = lease.exec(tx, kInsert, new_id(id_prefix::kSite), name, region, timezone,
                           sql_timestamp(clock_.now()));
    if (rows.empty()) {
      throw Error(ErrorCode::kConflict, "A site with this name already exists.",
                  {{"field", "name"}});
    }
    SiteRecord site = row_from(rows[0]);
    write_admin_audit(lease, tx, clock_, actor, ctx, "site.created", site.id,
                      {{"name", site.name}, {"region", site.region}, {"timezone", site.timezone}});
    return site;
  });
}

identity::Page<SiteRecord> SiteStore::list(int limit, const std::optional<std::string>& cursor) {
  std::optional<identity::KeysetPosition> after;
  if (cursor) after = identity::parse_keyset_cursor(*cursor, id_prefix::kSite);
  return pool_.transact("site_list", [&](PgPool::Lease& lease, pqxx::work& tx) {
    auto rows = after ? lease.exec(tx, kListAfter, after->created_at, after->id, limit + 1)
                      : lease.exec(tx, kListFirst, limit + 1);
    return identity::keyset_page<SiteRecord>(rows, limit, 5, row_from,
                                             [](const SiteRecord& s) { return s.id; });
  });
}

std::optional<SiteRecord> SiteStore::get(const std::string& id) {
  return pool_.transact("site_get", [&](PgPool::Lease& lease, pqxx::work& tx) {
    auto rows = lease.exec(tx, kGet, id);
    return rows.empty() ? std::nullopt : std::optional<SiteRecord>(row_from(rows[0]));
  });
}

}  // namespace gpurent::inventory
