// SiteStore: named, parameterised statements over sites.
#include "inventory/site_store.h"

#include "core/error.h"
#include "core/id.h"
#include "core/sql.h"

namespace gpurent::inventory {
namespace {

#define SITE_COLUMNS "id, name, region, timezone, " SQL_MICROS("created_at")

constexpr Statement kKnownZone = {"site_known_zone",
                                  "SELECT 1 FROM pg_timezone_names WHERE name = $1"};
constexpr Statement kInsertSite = {"site_insert",
                                   "INSERT INTO sites (id, name, region, timezone, created_at)"
                                   " VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING"
                                   " RETURNING " SITE_COLUMNS};
constexpr Statement kGetSite = {"site_get", "SELECT " SITE_COLUMNS " FROM sites WHERE id = $1"};
constexpr Statement kListSitesFirst = {
    "site_list_first", "SELECT " SITE_COLUMNS " FROM sites ORDER BY created_at, id LIMIT $1"};
constexpr Statement kListSitesAfter = {"site_list_after",
                                       "SELECT " SITE_COLUMNS
                                       " FROM sites WHERE (created_at, id) > ($1::timestamptz, $2)"
                                       " ORDER BY created_at, id LIMIT $3"};

SiteRecord site_from(const pqxx::row& row) {
  return {row[0].as<std::string>(), row[1].as<std::string>(), row[2].as<std::string>(),
          row[3].as<std::string>(), read_timestamp(row[4])};
}

}  // namespace

SiteRecord SiteStore::create(Tx& tx, const std::string& name, const std::string& region,
                             const std::string& timezone, const Actor& actor) {
  if (tx.exec(kKnownZone, timezone).empty()) {
    throw Error::invalid_field("timezone", "is not an IANA time zone such as Europe/Moscow");
  }
  auto now = clock_.now();
  auto rows =
      tx.exec(kInsertSite, new_id(id_prefix::kSite), name, region, timezone, sql_timestamp(now));
  if (rows.empty()) {
    throw Error(ErrorCode::kConflict, "A site with this name already exists.", {{"field", "name"}});
  }
  SiteRecord site = site_from(rows[0]);
  write_audit(
      tx, now, actor,
      {.org_id = std::nullopt,
       .action = "site.created",
       .target = site.id,
       .details = {{"name", site.name}, {"region", site.region}, {"timezone", site.timezone}}});
  return site;
}

Page<SiteRecord> SiteStore::list(Tx& tx, int limit, const std::optional<std::string>& cursor) {
  std::optional<Keyset> after;
  if (cursor) {
    after = decode_cursor(*cursor,
                          [](std::string_view id) { return is_valid_id(id_prefix::kSite, id); });
  }
  auto rows = after ? tx.exec(kListSitesAfter, sql_timestamp(after->at), after->id, limit + 1)
                    : tx.exec(kListSitesFirst, limit + 1);
  return page_of<SiteRecord>(rows, limit, site_from, [](const SiteRecord& s) {
    return Keyset{s.created_at, s.id};
  });
}

std::optional<SiteRecord> SiteStore::get(Tx& tx, const std::string& id) {
  auto rows = tx.exec(kGetSite, id);
  return rows.empty() ? std::nullopt : std::optional<SiteRecord>(site_from(rows[0]));
}

}  // namespace gpurent::inventory
