// Organisations as platform admins see them: every tenant, with member counts and the
// guardrails only admins set.
#pragma once

#include "core/audit.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/org_directory.h"
#include "core/paging.h"
#include "identity/identity_store.h"
#include "identity/token_store.h"

#include <optional>
#include <string>
#include <vector>

namespace gpurent::identity {

struct OrgRecord {
  std::string id;  // "org_…"
  std::string name;
  Timestamp created_at;
  Guardrails guardrails;  // absent limits are no limit
  long long member_count = 0;
};

using OrgPage = gpurent::Page<OrgRecord>;

// One limit in a partial update: `change` false leaves it; true sets it to `value`, where
// an empty value clears the limit.
template <typename T>
struct LimitChange {
  bool change = false;
  std::optional<T> value;
};

struct GuardrailsChange {
  LimitChange<int> max_concurrent_gpus;
  LimitChange<int> max_days;
  LimitChange<std::int64_t> spend_limit_minor;

  bool empty() const {
    return !max_concurrent_gpus.change && !max_days.change && !spend_limit_minor.change;
  }
};

// Every method runs in the caller's transaction (see gpurent::Tx) and commits nothing.
// It is also where other modules read an org's guardrails (gpurent::OrgDirectory).
class OrgAdminStore : public OrgDirectory {
 public:
  explicit OrgAdminStore(const Clock& clock) : clock_(clock) {}

  bool org_exists(Tx& tx, const std::string& org_id) override {
    return get(tx, org_id).has_value();
  }
  Guardrails guardrails_of(Tx& tx, const std::string& org_id) override;

  // Orgs in (created_at, id) order, at most `limit`, after `cursor` (a next_cursor from an
  // earlier page). Throws invalid_request naming "cursor" when it is not one.
  OrgPage list(Tx& tx, int limit, const std::optional<std::string>& cursor);

  std::optional<OrgRecord> get(Tx& tx, const std::string& org_id);

  // Applies `change` and writes an `org.guardrails_set` audit row (before and after) as
  // `actor`; the org's row is locked while it is read and written. Nullopt when there is no
  // such org (nothing is written then).
  std::optional<OrgRecord> set_guardrails(Tx& tx, const std::string& org_id,
                                          const GuardrailsChange& change, const Actor& actor);

 private:
  const Clock& clock_;
};

}  // namespace gpurent::identity
