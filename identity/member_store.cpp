// MemberStore: named, parameterised statements over memberships; every one filters by org.
// Changes that could remove an owner lock the org's row first, so two of them in one org
// run one after the other and the owner count they read is the one they leave behind.
#include "identity/member_store.h"

#include "core/error.h"
#include "core/id.h"
#include "core/sql.h"

#include <nlohmann/json.hpp>

namespace gpurent::identity {
namespace {

#define MEMBER_COLUMNS "m.user_id, u.email, m.role, " SQL_MICROS("m.created_at")

constexpr Statement kListMembersFirst = {
    "member_list_first", "SELECT " MEMBER_COLUMNS
                         " FROM memberships m JOIN users u ON u.id = m.user_id"
                         " WHERE m.org_id = $1 ORDER BY m.created_at, m.user_id LIMIT $2"};
constexpr Statement kListMembersAfter = {
    "member_list_after",
    "SELECT " MEMBER_COLUMNS
    " FROM memberships m JOIN users u ON u.id = m.user_id"
    " WHERE m.org_id = $1 AND (m.created_at, m.user_id) > ($2::timestamptz, $3)"
    " ORDER BY m.created_at, m.user_id LIMIT $4"};
constexpr Statement kGetMember = {"member_get",
                                  "SELECT " MEMBER_COLUMNS
                                  " FROM memberships m JOIN users u ON u.id = m.user_id"
                                  " WHERE m.org_id = $1 AND m.user_id = $2"};
constexpr Statement kFindUserByEmail = {
    "member_find_user_by_email",
    "SELECT id FROM users WHERE lower(email) = lower($1) AND disabled_at IS NULL"};
constexpr Statement kInsertMember = {
    "member_insert",
    "INSERT INTO memberships (org_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)"
    " ON CONFLICT DO NOTHING"};
constexpr Statement kLockOrg = {"member_lock_org", "SELECT id FROM orgs WHERE id = $1 FOR UPDATE"};
constexpr Statement kCountOwners = {
    "member_count_owners", "SELECT count(*) FROM memberships WHERE org_id = $1 AND role = 'owner'"};
constexpr Statement kUpdateRole = {
    "member_update_role", "UPDATE memberships SET role = $3 WHERE org_id = $1 AND user_id = $2"};
constexpr Statement kDeleteMember = {"member_delete",
                                     "DELETE FROM memberships WHERE org_id = $1 AND user_id = $2"};
MemberRecord member_from(const pqxx::row& row) {
  return {row[0].as<std::string>(), row[1].as<std::string>(), row[2].as<std::string>(),
          read_timestamp(row[3])};
}

Error last_owner() {
  return Error(ErrorCode::kConflict, "An organisation needs at least one owner.",
               {{"reason", "last_owner"}});
}

Error owners_only() {
  return Error(ErrorCode::kForbidden, "Only an owner may grant, change or remove the owner role.");
}

// The member's record with the org row locked, or nullopt when they are not a member.
std::optional<MemberRecord> locked_member(Tx& tx, const std::string& org_id,
                                          const std::string& user_id) {
  tx.exec(kLockOrg, org_id);
  auto rows = tx.exec(kGetMember, org_id, user_id);
  if (rows.empty()) return std::nullopt;
  return member_from(rows[0]);
}

// Throws unless the org keeps another owner once `member` stops being one.
void require_another_owner(Tx& tx, const std::string& org_id, const MemberRecord& member) {
  if (member.role != "owner") return;
  if (tx.exec(kCountOwners, org_id)[0][0].as<long long>() <= 1) throw last_owner();
}

}  // namespace

gpurent::Page<MemberRecord> MemberStore::list(Tx& tx, const std::string& org_id, int limit,
                                              const std::optional<std::string>& cursor) {
  std::optional<Keyset> after;
  if (cursor) {
    after = decode_cursor(*cursor,
                          [](std::string_view id) { return is_valid_id(id_prefix::kUser, id); });
  }
  // One row more than asked says whether another page follows.
  auto rows =
      after ? tx.exec(kListMembersAfter, org_id, sql_timestamp(after->at), after->id, limit + 1)
            : tx.exec(kListMembersFirst, org_id, limit + 1);
  return page_of<MemberRecord>(rows, limit, member_from, [](const MemberRecord& m) {
    return Keyset{m.joined_at, m.user_id};
  });
}

std::optional<MemberRecord> MemberStore::get(Tx& tx, const std::string& org_id,
                                             const std::string& user_id) {
  auto rows = tx.exec(kGetMember, org_id, user_id);
  if (rows.empty()) return std::nullopt;
  return member_from(rows[0]);
}

MemberRecord MemberStore::add_by_email(Tx& tx, const std::string& org_id, const std::string& email,
                                       const std::string& role, const Actor& actor,
                                       OwnerAuthority authority) {
  if (!is_valid_role(role)) throw Error::invalid_field("role", "is not a role");
  if (role == "owner" && authority != OwnerAuthority::kMayManageOwners) throw owners_only();
  auto users = tx.exec(kFindUserByEmail, email);
  // Says nothing more: whether the address is unknown or disabled is not the caller's business.
  if (users.empty()) {
    throw Error(ErrorCode::kNotFound,
                "No user with this email; they need to sign up before they can be added.",
                {{"field", "email"}});
  }
  auto user_id = users[0][0].as<std::string>();
  auto now = clock_.now();
  if (tx.exec(kInsertMember, org_id, user_id, role, sql_timestamp(now)).affected_rows() == 0) {
    throw Error(ErrorCode::kConflict, "This user is already a member of the organisation.",
                {{"field", "email"}, {"user_id", user_id}});
  }
  write_audit(
      tx, now, actor,
      {.org_id = org_id, .action = "member.add", .target = user_id, .details = {{"role", role}}});
  return member_from(tx.exec(kGetMember, org_id, user_id)[0]);
}

std::optional<MemberRecord> MemberStore::set_role(Tx& tx, const std::string& org_id,
                                                  const std::string& user_id,
                                                  const std::string& role, const Actor& actor,
                                                  OwnerAuthority authority) {
  if (!is_valid_role(role)) throw Error::invalid_field("role", "is not a role");
  auto member = locked_member(tx, org_id, user_id);
  if (!member) return std::nullopt;
  if (authority != OwnerAuthority::kMayManageOwners &&
      (member->role == "owner" || role == "owner")) {
    throw owners_only();
  }
  if (member->role == role) return member;
  if (role != "owner") require_another_owner(tx, org_id, *member);
  tx.exec(kUpdateRole, org_id, user_id, role);
  write_audit(tx, clock_.now(), actor,
              {.org_id = org_id,
               .action = "member.role_change",
               .target = user_id,
               .details = {{"from", member->role}, {"to", role}}});
  member->role = role;
  return member;
}

bool MemberStore::remove(Tx& tx, const std::string& org_id, const std::string& user_id,
                         const Actor& actor, OwnerAuthority authority) {
  auto member = locked_member(tx, org_id, user_id);
  if (!member) return false;
  if (authority != OwnerAuthority::kMayManageOwners && member->role == "owner") {
    throw owners_only();
  }
  require_another_owner(tx, org_id, *member);
  tx.exec(kDeleteMember, org_id, user_id);
  write_audit(tx, clock_.now(), actor,
              {.org_id = org_id,
               .action = "member.remove",
               .target = user_id,
               .details = {{"role", member->role}, {"email", member->email}}});
  return true;
}

}  // namespace gpurent::identity
