// Sites: the data centres nodes live in, each with the time zone its rental days follow.
#pragma once

#include "core/audit.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/paging.h"
#include "inventory/records.h"

#include <optional>
#include <string>

namespace gpurent::inventory {

class SiteStore {
 public:
  explicit SiteStore(const Clock& clock) : clock_(clock) {}

  // Checks the time zone against PostgreSQL's IANA database (invalid_request naming
  // `timezone`) and the name for uniqueness, ignoring case (conflict), then inserts with a
  // `site.created` audit row.
  SiteRecord create(Tx& tx, const std::string& name, const std::string& region,
                    const std::string& timezone, const Actor& actor);

  // Sites in (created_at, id) order after `cursor` (invalid_request naming `cursor` for one
  // that is not from this list).
  Page<SiteRecord> list(Tx& tx, int limit, const std::optional<std::string>& cursor);
  std::optional<SiteRecord> get(Tx& tx, const std::string& id);

 private:
  const Clock& clock_;
};

}  // namespace gpurent::inventory
