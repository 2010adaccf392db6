// Who belongs to an organisation and with which role, in PostgreSQL.
#pragma once

#include "core/audit.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/paging.h"
#include "identity/identity_store.h"

#include <optional>
#include <string>
#include <vector>

namespace gpurent::identity {

struct MemberRecord {
  std::string user_id;
  std::string email;
  std::string role;
  Timestamp joined_at;
};

// Whether the caller may act on owners (change an owner's role, remove an owner, or grant
// "owner"). Only owners may; admins manage everyone else.
enum class OwnerAuthority { kMayManageOwners, kCannotManageOwners };

// Every method runs in the caller's transaction (see gpurent::Tx) and commits nothing.
// Changes write their audit row (member.add, member.role_change, member.remove) as `actor`.
class MemberStore {
 public:
  explicit MemberStore(const Clock& clock) : clock_(clock) {}

  // Members in the order they joined ((created_at, user_id)), at most `limit`, after
  // `cursor` (a next_cursor from an earlier page; invalid_request naming "cursor" else).
  gpurent::Page<MemberRecord> list(Tx& tx, const std::string& org_id, int limit = 500,
                                   const std::optional<std::string>& cursor = std::nullopt);

  std::optional<MemberRecord> get(Tx& tx, const std::string& org_id, const std::string& user_id);

  // Adds an existing user, found by email (case-insensitively), with `role`. Throws
  // Error(kNotFound) when no (enabled) user has this email, Error(kConflict) when they are
  // already a member, Error(kForbidden) when `role` is owner without the authority.
  MemberRecord add_by_email(Tx& tx, const std::string& org_id, const std::string& email,
                            const std::string& role, const Actor& actor,
                            OwnerAuthority authority = OwnerAuthority::kMayManageOwners);

  // The member with the new role; nullopt when the user is not a member of the org.
  // Throws Error(kConflict, details.reason "last_owner") when this would leave the org
  // without an owner, Error(kForbidden) when an owner is involved without the authority.
  std::optional<MemberRecord> set_role(Tx& tx, const std::string& org_id,
                                       const std::string& user_id, const std::string& role,
                                       const Actor& actor,
                                       OwnerAuthority authority = OwnerAuthority::kMayManageOwners);

  // False when the user is not a member of the org (nothing changes then). Throws as
  // set_role does for the last owner and for owners without the authority.
  bool remove(Tx& tx, const std::string& org_id, const std::string& user_id, const Actor& actor,
              OwnerAuthority authority = OwnerAuthority::kMayManageOwners);

 private:
  const Clock& clock_;
};

}  // namespace gpurent::identity
