// Reading the audit log: filtered, newest first, paged by a keyset cursor on (at, id).
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "core/paging.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace gpurent::identity {

struct AuditRecord {
  long long id = 0;
  Timestamp at;
  std::optional<std::string> org_id;
  std::optional<std::string> actor_user_id;
  std::optional<std::string> actor_token_id;
  std::string action;
  std::optional<std::string> target;
  std::optional<std::string> ip;
  std::optional<std::string> request_id;
  nlohmann::json details;
};

// Every field narrows the listing; absent fields do not. `since` is inclusive and `until`
// exclusive (a half-open interval, as rental periods are).
struct AuditFilter {
  std::optional<std::string> action;
  std::optional<std::string> actor_user_id;
  std::optional<Timestamp> since;
  std::optional<Timestamp> until;
};

using AuditPage = gpurent::Page<AuditRecord>;

// Runs in the caller's transaction (see gpurent::Tx); audit rows are written by
// gpurent::write_audit, never here.
class AuditStore {
 public:
  // Rows of every org (and platform rows without one), or of `org_id` when given, newest
  // first, at most `limit`, after `cursor` (a next_cursor from an earlier page). Throws
  // invalid_request naming "cursor" when it is not one.
  AuditPage list_all(Tx& tx, const std::optional<std::string>& org_id, const AuditFilter& filter,
                     int limit, const std::optional<std::string>& cursor);

  // Rows of one org only; the org is part of the statement, never an optional filter.
  AuditPage list_org(Tx& tx, const std::string& org_id, const AuditFilter& filter, int limit,
                     const std::optional<std::string>& cursor);
};

}  // namespace gpurent::identity
