// SshKeyStore: named, parameterised statements over ssh_keys; every one filters by org.
#include "identity/ssh_key_store.h"

#include "identity/sql_common.h"

#include "core/error.h"
#include "core/id.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace gpurent::identity {
namespace {

#define KEY_COLUMNS                                                                          \
  "id, name, type, bits, fingerprint, public_key, " RFC3339("created_at") ", " EPOCH_MICROS( \
      "created_at")

constexpr Statement kInsertKey = {
    "ssh_key_insert",
    "INSERT INTO ssh_keys (id, org_id, name, type, bits, public_key, fingerprint, created_by,"
    " created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
    " ON CONFLICT DO NOTHING RETURNING " KEY_COLUMNS};
constexpr Statement kListFirst = {"ssh_key_list_first", "SELECT " KEY_COLUMNS
                                                        " FROM ssh_keys WHERE org_id = $1"
                                                        " ORDER BY created_at, id LIMIT $2"};
constexpr Statement kListAfter = {
    "ssh_key_list_after",
    "SELECT " KEY_COLUMNS
    " FROM ssh_keys WHERE org_id = $1"
    " AND (created_at, id) > ($2::timestamptz, $3) ORDER BY created_at, id LIMIT $4"};
constexpr Statement kGetKey = {
    "ssh_key_get", "SELECT " KEY_COLUMNS " FROM ssh_keys WHERE org_id = $1 AND id = $2"};
constexpr Statement kDeleteKey = {
    "ssh_key_delete",
    "DELETE FROM ssh_keys WHERE org_id = $1 AND id = $2 RETURNING name, fingerprint"};
// Column 7 (the creation time in microseconds) is read by list() for its cursor.
SshKeyRecord row_from(const pqxx::row& row) {
  return {row[0].as<std::string>(), row[1].as<std::string>(), row[2].as<std::string>(),
          row[3].as<int>(),         row[4].as<std::string>(), row[5].as<std::string>(),
          row[6].as<std::string>()};
}

}  // namespace

SshKeyRecord SshKeyStore::create(const std::string& org_id, const std::string& name,
                                 const SshPublicKey& key, const std::string& created_by,
                                 const AuditContext& ctx) {
  return pool_.transact("ssh_key_create", [&](PgPool::Lease& lease, pqxx::work& tx) {
    auto now = sql_timestamp(clock_.now());
    auto rows = lease.exec(tx, kInsertKey, new_id(id_prefix::kSshKey), org_id, name, key.type,
                           key.bits, key.canonical(), key.fingerprint, created_by, now);
    if (rows.empty()) {
      throw Error(ErrorCode::kConflict, "This organisation already has this SSH key.",
                  {{"field", "public_key"}, {"fingerprint", key.fingerprint}});
    }
    SshKeyRecord record = row_from(rows[0]);
    nlohmann::json details = {{"name", record.name}, {"fingerprint", record.fingerprint}};
    lease.exec(tx, kInsertAuditRow, now, org_id, created_by, "ssh_key.create", record.id, ctx.ip,
               ctx.request_id, details.dump());
    return record;
  });
}

SshKeyPage SshKeyStore::list(const std::string& org_id, int limit,
                             const std::optional<std::string>& cursor) {
  std::optional<KeysetPosition> after;
  if (cursor) after = parse_keyset_cursor(*cursor, id_prefix::kSshKey);
  return pool_.transact("ssh_key_list", [&](PgPool::Lease& lease, pqxx::work& tx) {
    // One row more than asked says whether another page follows.
    auto rows = after ? lease.exec(tx, kListAfter, org_id, after->created_at, after->id, limit + 1)
                      : lease.exec(tx, kListFirst, org_id, limit + 1);
    return keyset_page<SshKeyRecord>(rows, limit, 7, row_from,
                                     [](const SshKeyRecord& k) { return k.id; });
  });
}

std::optional<SshKeyRecord> SshKeyStore::get(const std::string& org_id, const std::string& id) {
  return pool_.transact("ssh_key_get", [&](PgPool::Lease& lease, pqxx::work& tx) {
    auto rows = lease.exec(tx, kGetKey, org_id, id);
    std::optional<SshKeyRecord> out;
    if (!rows.empty()) out = row_from(rows[0]);
    return out;
  });
}

bool SshKeyStore::remove(const std::string& org_id, const std::string& id,
                         const std::string& actor_user_id, const AuditContext& ctx) {
  return pool_.transact("ssh_key_remove", [&](PgPool::Lease& lease, pqxx::work& tx) {
    auto rows = lease.exec(tx, kDeleteKey, org_id, id);
    if (rows.empty()) return false;
    nlohmann::json details = {{"name", rows[0][0].as<std::string>()},
                              {"fingerprint", rows[0][1].as<std::string>()}};
    lease.exec(tx, kInsertAuditRow, sql_timestamp(clock_.now()), org_id, actor_user_id,
               "ssh_key.delete", id, ctx.ip, ctx.request_id, details.dump());
    return true;
  });
}

}  // namespace gpurent::identity
