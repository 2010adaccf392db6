// Sites: the data centres nodes live in, each with the time zone its rental days follow.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "identity/sql_common.h"
#include "inventory/admin_audit.h"
#include "inventory/records.h"

#include <optional>
#include <string>

namespace gpurent::inventory {

class SiteStore {
 public:
  SiteStore(PgPool& pool, const Clock& clock) : pool_(pool), clock_(clock) {}

  // Checks the time zone against PostgreSQL's IANA database (400 naming `timezone`) and the
  // name for uniqueness, ignoring case (409), then inserts with a `site.created` audit row.
  SiteRecord create(const std::string& name, const std::string& region, const std::string& timezone,
                    const AdminActor& actor, const AuditContext& ctx);

  // Sites in (created_at, id) order after `cursor`.
  identity::Page<SiteRecord> list(int limit, const std::optional<std::string>& cursor);
  std::optional<SiteRecord> get(const std::string& id);

 private:
  PgPool& pool_;
  const Clock& clock_;
};

}  // namespace gpurent::inventory
