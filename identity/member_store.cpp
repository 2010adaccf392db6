// MemberStore: named, parameterised statements over memberships; every one filters by org.
// Changes that could remove an owner lock the org's row first, so two of them in one org
// run one after the other and the owner count they read is the one they leave behind.
#include "identity/member_store.h"

#include "identity/sql_common.h"

#include "core/error.h"
#include "core/id.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace gpurent::identity {
namespace {

#define MEMBER_COLUMNS "m.user_id, u.email, m.role, " RFC3339("m.created_at")

constexpr Statement kListMembersFirst = {
    "member_list_first", "SELECT " MEMBER_COLUMNS ", " EPOCH_MICROS("m.created_at")
                         " FROM memberships m JOIN users u ON u.id = m.user_id"
                         " WHERE m.org_id = $1 ORDER BY m.created_at, m.user_id LIMIT $2"};
constexpr Statement kListMembersAfter = {
    "member_list_after",
    "SELECT " MEMBER_COLUMNS ", " EPOCH_MICROS("m.created_at")
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
MemberRecord record_from(const pqxx::row& row) {
  return {row[0].as<std::string>(), row[1].as<std::string>(), row[2].as<std::string>(),
          row[3].as<std::string>()};
}

Error last_owner() {
  return Error(ErrorCode::kConflict, "An organisation needs at least one owner.",
               {{"reason", "last_owner"}});
}

Error owners_only() {
  return Error(ErrorCode::kForbidden, "Only an owner may grant, change or remove the owner role.");
}

// The member's record with the org row locked, or nullopt when they are not a member.
std::optional<MemberRecord> locked_member(PgPool::Lease& lease, pqxx::work& tx,
                                          const std::string& org_id, const std::string& user_id) {
  lease.exec(tx, kLockOrg, org_id);
  auto rows = lease.exec(tx, kGetMember, org_id, user_id);
  if (rows.empty()) return std::nullopt;
  return record_from(rows[0]);
}

// Throws unless the org keeps another owner once `member` stops being one.
void require_another_owner(PgPool::Lease& lease, pqxx::work& tx, const std::string& org_id,
                           const MemberRecord& member) {
  if (member.role != "owner") return;
  if (lease.exec(tx, kCountOwners, org_id)[0][0].as<long long>() <= 1) throw last_owner();
}

}  // namespace

Page<MemberRecord> MemberStore::list(const std::string& org_id, int limit,
                                     const std::optional<std::string>& cursor) {
  std::optional<KeysetPosition> after;
  if (cursor) after = parse_keyset_cursor(*cursor, id_prefix::kUser);
  return pool_.transact("member_list", [&](PgPool::Lease& lease, pqxx::work& tx) {
    // One row more than asked says whether another page follows.
    auto rows =
        after ? lease.exec(tx, kListMembersAfter, org_id, after->created_at, after->id, limit + 1)
              : lease.exec(tx, kListMembersFirst, org_id, limit + 1);
    return keyset_page<MemberRecord>(rows, limit, 4, record_from,
                                     [](const MemberRecord& m) { return m.user_id; });
  });
}

std::optional<MemberRecord> MemberStore::get(const std::string& org_id,
                                             const std::string& user_id) {
  return pool_.transact("member_get", [&](PgPool::Lease& lease, pqxx::work& tx) {
    auto rows = lease.exec(tx, kGetMember, org_id, user_id);
    std::optional<MemberRecord> out;
    if (!rows.empty()) out = record_from(rows[0]);
    return out;
  });
}

MemberRecord MemberStore::add_by_email(const std::string& org_id, const std::string& email,
                                       const std::string& role, const std::string& actor_user_id,
                                       const AuditContext& ctx, OwnerAuthority authority) {
  if (!is_valid_role(role)) throw Error::invalid_field("role", "is not a role");
  if (role == "owner" && authority != OwnerAuthority::kMayManageOwners) throw owners_only();
  return pool_.transact("member_add", [&](PgPool::Lease& lease, pqxx::work& tx) {
    auto users = lease.exec(tx, kFindUserByEmail, email);
    // Says nothing more: whether the address is unknown or disabled is not the caller's business.
    if (users.empty()) {
      throw Error(ErrorCode::kNotFound,
                  "No user with this email; they need to sign up before they can be added.",
                  {{"field", "email"}});
    }
    auto user_id = users[0][0].as<std::string>();
    auto now = sql_timestamp(clock_.now());
    if (lease.exec(tx, kInsertMember, org_id, user_id, role, now).affected_rows() == 0) {
      throw Error(ErrorCode::kConflict, "This user is already a member of the organisation.",
                  {{"field", "email"}, {"user_id", user_id}});
    }
    nlohmann::json details = {{"role", role}};
    lease.exec(tx, kInsertAuditRow, now, org_id, actor_user_id, "member.add", user_id, ctx.ip,
               ctx.request_id, details.dump());
    return record_from(lease.exec(tx, kGetMember, org_id, user_id)[0]);
  });
}

std::optional<MemberRecord> MemberStore::set_role(
    const std::string& org_id, const std::string& user_id, const std::string& role,
    const std::string& actor_user_id, const AuditContext& ctx, OwnerAuthority authority) {
  if (!is_valid_role(role)) throw Error::invalid_field("role", "is not a role");
  return pool_.transact(
      "member_set_role", [&](PgPool::Lease& lease, pqxx::work& tx) -> std::optional<MemberRecord> {
        auto member = locked_member(lease, tx, org_id, user_id);
        if (!member) return std::nullopt;
        if (authority != OwnerAuthority::kMayManageOwners &&
            (member->role == "owner" || role == "owner")) {
          throw owners_only();
        }
        if (member->role == role) return member;
        if (role != "owner") require_another_owner(lease, tx, org_id, *member);
        lease.exec(tx, kUpdateRole, org_id, user_id, role);
        nlohmann::json details = {{"from", member->role}, {"to", role}};
        lease.exec(tx, kInsertAuditRow, sql_timestamp(clock_.now()), org_id, actor_user_id,
                   "member.role_change", user_id, ctx.ip, ctx.request_id, details.dump());
        member->role = role;
        return member;
      });
}

bool MemberStore::remove(const std::string& org_id, const std::string& user_id,
                         const std::string& actor_user_id, const AuditContext& ctx,
                         OwnerAuthority authority) {
  return pool_.transact("member_remove", [&](PgPool::Lease& lease, pqxx::work& tx) {
    auto member = locked_member(lease, tx, org_id, user_id);
    if (!member) return false;
    if (authority != OwnerAuthority::kMayManageOwners && member->role == "owner") {
      throw owners_only();
    }
    require_another_owner(lease, tx, org_id, *member);
    lease.exec(tx, kDeleteMember, org_id, user_id);
    nlohmann::json details = {{"role", member->role}, {"email", member->email}};
    lease.exec(tx, kInsertAuditRow, sql_timestamp(clock_.now()), org_id, actor_user_id,
               "member.remove", user_id, ctx.ip, ctx.request_id, details.dump());
    return true;
  });
}

}  // namespace gpurent::identity
