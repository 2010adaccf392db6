// IdentityStore: named, parameterised statements over the identity tables.
#include "identity/identity_store.h"

#include "core/crypto.h"
#include "core/error.h"
#include "core/id.h"
#include "core/pg_array.h"
#include "core/sql.h"

namespace gpurent::identity {
namespace {

constexpr Statement kInsertOrg = {"identity_insert_org",
                                  "INSERT INTO orgs (id, name, created_at) VALUES ($1, $2, $3)"};
constexpr Statement kInsertUser = {
    "identity_insert_user",
    "INSERT INTO users (id, email, password_hash, is_platform_admin, created_at)"
    " VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING id"};
constexpr Statement kInsertMembership = {
    "identity_insert_membership",
    "INSERT INTO memberships (org_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)"};
constexpr Statement kFindLogin = {
    "identity_find_login",
    "SELECT id, email, is_platform_admin, " SQL_MICROS("created_at") ", password_hash FROM users"
    " WHERE lower(email) = lower($1) AND disabled_at IS NULL"};
constexpr Statement kMemberships = {
    "identity_memberships",
    "SELECT o.id, o.name, m.role FROM memberships m JOIN orgs o ON o.id = m.org_id"
    " WHERE m.user_id = $1 ORDER BY m.created_at, o.id"};
constexpr Statement kRoleIn = {"identity_role_in",
                               "SELECT role FROM memberships WHERE user_id = $1 AND org_id = $2"};
constexpr Statement kInsertSession = {
    "identity_insert_session",
    "INSERT INTO sessions (id_hash, user_id, current_org_id, csrf_token, created_at,"
    " last_seen_at, expires_at, ip) VALUES ($1, $2, $3, $4, $5, $5, $6, $7)"};
constexpr Statement kTouchSession = {
    "identity_touch_session",
    "UPDATE sessions s SET last_seen_at = $2 FROM users u"
    " WHERE s.id_hash = $1 AND u.id = s.user_id AND u.disabled_at IS NULL"
    " AND s.expires_at > $2 AND s.last_seen_at > $2::timestamptz - make_interval(secs => $3)"
    " RETURNING u.id, u.email, u.is_platform_admin, " SQL_MICROS(
        "u.created_at") ", s.current_org_id, s.csrf_token"};
constexpr Statement kResolveSession = {
    "identity_resolve_session",
    "SELECT u.id, u.email, u.is_platform_admin, " SQL_MICROS("u.created_at")
    ", s.current_org_id, s.csrf_token, m.role, " SQL_MICROS("s.expires_at")
    ", " SQL_MICROS("s.last_seen_at")
    " FROM sessions s JOIN users u ON u.id = s.user_id"
    " LEFT JOIN memberships m ON m.org_id = s.current_org_id AND m.user_id = s.user_id"
    " WHERE s.id_hash = $1 AND u.disabled_at IS NULL AND s.expires_at > $2"};
// Two arrays of equal length, hash and time; only moves last_seen_at forward.
constexpr Statement kRecordSessionsSeen = {
    "identity_record_sessions_seen",
    "UPDATE sessions s SET last_seen_at = v.at"
    " FROM unnest($1::text[], $2::timestamptz[]) AS v(id_hash, at)"
    " WHERE s.id_hash = v.id_hash AND s.last_seen_at < v.at"};
constexpr Statement kDeleteSession = {"identity_delete_session",
                                      "DELETE FROM sessions WHERE id_hash = $1"};
constexpr Statement kSetSessionOrg = {"identity_set_session_org",
                                      "UPDATE sessions SET current_org_id = $2 WHERE id_hash = $1"};
std::string random_token(std::size_t bytes) {
  auto raw = crypto::random_bytes(bytes);
  return crypto::to_hex(raw.data(), raw.size());
}

// Columns 0..3: id, email, is_platform_admin, SQL_MICROS(created_at).
User user_from(const pqxx::row& row) {
  return {row[0].as<std::string>(), row[1].as<std::string>(), row[2].as<bool>(),
          read_timestamp(row[3])};
}

Error email_taken() {
  return Error(ErrorCode::kConflict, "An account with this email already exists.",
               {{"field", "email"}});
}

}  // namespace

bool is_valid_role(std::string_view role) {
  for (const char* r : kRoles) {
    if (role == r) return true;
  }
  return false;
}

std::pair<User, Org> IdentityStore::create_user_with_org(Tx& tx, const std::string& email,
                                                         const std::string& password_hash,
                                                         const std::string& org_name,
                                                         const Actor& actor) {
  auto now = clock_.now();
  User user{new_id(id_prefix::kUser), email, false, now};
  Org org{new_id(id_prefix::kOrg), org_name};
  if (tx.exec(kInsertUser, user.id, email, password_hash, false, sql_timestamp(now)).empty()) {
    throw email_taken();
  }
  tx.exec(kInsertOrg, org.id, org.name, sql_timestamp(now));
  tx.exec(kInsertMembership, org.id, user.id, "owner", sql_timestamp(now));
  // Nobody is signed in yet: the new user signed themselves up.
  Actor signed_up = actor;
  signed_up.user_id = user.id;
  write_audit(tx, now, signed_up, {.org_id = org.id, .action = "user.signup", .target = user.id});
  return {user, org};
}

User IdentityStore::create_platform_admin(Tx& tx, const std::string& email,
                                          const std::string& password_hash, const Actor& actor) {
  auto now = clock_.now();
  User user{new_id(id_prefix::kUser), email, true, now};
  if (tx.exec(kInsertUser, user.id, email, password_hash, true, sql_timestamp(now)).empty()) {
    throw email_taken();
  }
  write_audit(tx, now, actor, {.action = "admin.create_platform_admin", .target = user.id});
  return user;
}

std::optional<std::pair<User, std::string>> IdentityStore::find_login(Tx& tx,
                                                                      const std::string& email) {
  auto rows = tx.exec(kFindLogin, email);
  if (rows.empty()) return std::nullopt;
  return std::make_pair(user_from(rows[0]), rows[0][4].as<std::string>());
}

std::vector<Membership> IdentityStore::memberships(Tx& tx, const std::string& user_id) {
  std::vector<Membership> out;
  for (const auto& row : tx.exec(kMemberships, user_id)) {
    out.push_back({{row[0].as<std::string>(), row[1].as<std::string>()}, row[2].as<std::string>()});
  }
  return out;
}

std::optional<std::string> IdentityStore::role_in(Tx& tx, const std::string& user_id,
                                                  const std::string& org_id) {
  auto rows = tx.exec(kRoleIn, user_id, org_id);
  return rows.empty() ? std::nullopt : std::optional<std::string>(rows[0][0].as<std::string>());
}

NewSession IdentityStore::create_session(Tx& tx, const std::string& user_id,
                                         const std::optional<std::string>& current_org_id,
                                         const SessionPolicy& policy, const std::string& ip) {
  NewSession s{random_token(32), random_token(32)};
  auto now = clock_.now();
  tx.exec(kInsertSession, crypto::sha256_hex(s.cookie_value), user_id, current_org_id, s.csrf_token,
          sql_timestamp(now), sql_timestamp(now + policy.absolute), ip);
  return s;
}

std::optional<Session> IdentityStore::find_session(Tx& tx, const std::string& cookie_value,
                                                   const SessionPolicy& policy) {
  std::string id_hash = crypto::sha256_hex(cookie_value);
  auto rows = tx.exec(kTouchSession, id_hash, sql_timestamp(clock_.now()),
                      static_cast<long long>(policy.idle.count()));
  if (rows.empty()) return std::nullopt;
  const auto& row = rows[0];
  Session s;
  s.id_hash = id_hash;
  s.user = user_from(row);
  s.current_org_id = optional_field<std::string>(row[4]);
  s.csrf_token = row[5].as<std::string>();
  return s;
}

std::optional<ResolvedSession> IdentityStore::resolve_session(Tx& tx, const std::string& id_hash,
                                                              Timestamp now) {
  auto rows = tx.exec(kResolveSession, id_hash, sql_timestamp(now));
  if (rows.empty()) return std::nullopt;
  const auto& row = rows[0];
  ResolvedSession r;
  r.session.id_hash = id_hash;
  r.session.user = user_from(row);
  r.session.current_org_id = optional_field<std::string>(row[4]);
  r.session.csrf_token = row[5].as<std::string>();
  r.role = optional_field<std::string>(row[6]);
  r.expires_at = read_timestamp(row[7]);
  r.last_seen_at = read_timestamp(row[8]);
  return r;
}

void IdentityStore::record_sessions_seen(
    Tx& tx, const std::vector<std::pair<std::string, Timestamp>>& seen) {
  if (seen.empty()) return;
  std::vector<std::string> hashes, times;
  for (const auto& [hash, at] : seen) {
    hashes.push_back(hash);
    times.push_back(sql_timestamp(at));
  }
  tx.exec(kRecordSessionsSeen, pg_array_literal(hashes), pg_array_literal(times));
}

void IdentityStore::delete_session(Tx& tx, const std::string& id_hash) {
  tx.exec(kDeleteSession, id_hash);
}

void IdentityStore::set_session_org(Tx& tx, const std::string& id_hash, const std::string& org_id) {
  tx.exec(kSetSessionOrg, id_hash, org_id);
}

void IdentityStore::audit(Tx& tx, const Actor& actor, const AuditEntry& entry) {
  write_audit(tx, clock_.now(), actor, entry);
}

}  // namespace gpurent::identity
