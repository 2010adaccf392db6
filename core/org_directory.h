// OrgDirectory: what other modules may ask of an org, inside their own transaction.
// Identity owns orgs and answers (identity::OrgAdminStore); the scheduler and billing never
// read the orgs table themselves, and take this interface in their constructors.
#pragma once

#include "core/db_pool.h"
#include "core/guardrails.h"

#include <string>

namespace gpurent {

class OrgDirectory {
 public:
  virtual ~OrgDirectory() = default;
  virtual bool org_exists(Tx& tx, const std::string& org_id) = 0;
  // The org's guardrails as they stand in the transaction, so a limit lowered meanwhile
  // cannot slip past a booking; no limits for an org that does not exist.
  virtual Guardrails guardrails_of(Tx& tx, const std::string& org_id) = 0;
};

}  // namespace gpurent
