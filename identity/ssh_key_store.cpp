// SshKeyStore: named, parameterised statements over ssh_keys; every one filters by org.
#include "identity/ssh_key_store.h"

#include "core/error.h"
#include "core/id.h"
#include "core/sql.h"

#include <nlohmann/json.hpp>

namespace gpurent::identity {
namespace {

#define KEY_COLUMNS "id, name, type, bits, fingerprint, public_key, " SQL_MICROS("created_at")

constexpr Statement kInsertKey = {
    "ssh_key_insert",
    "INSERT INTO ssh_keys (id, org_id, name, type, bits, public_key, fingerprint, created_by,"
    " created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
    " ON CONFLICT DO NOTHING RETURNING " KEY_COLUMNS};
constexpr Statement kListKeysFirst = {"ssh_key_list_first", "SELECT " KEY_COLUMNS
                                                            " FROM ssh_keys WHERE org_id = $1"
                                                            " ORDER BY created_at, id LIMIT $2"};
constexpr Statement kListKeysAfter = {
    "ssh_key_list_after",
    "SELECT " KEY_COLUMNS
    " FROM ssh_keys WHERE org_id = $1"
    " AND (created_at, id) > ($2::timestamptz, $3) ORDER BY created_at, id LIMIT $4"};
constexpr Statement kGetKey = {
    "ssh_key_get", "SELECT " KEY_COLUMNS " FROM ssh_keys WHERE org_id = $1 AND id = $2"};
constexpr Statement kDeleteKey = {
    "ssh_key_delete",
    "DELETE FROM ssh_keys WHERE org_id = $1 AND id = $2 RETURNING name, fingerprint"};

SshKeyRecord key_from(const pqxx::row& row) {
  return {row[0].as<std::string>(), row[1].as<std::string>(), row[2].as<std::string>(),
          row[3].as<int>(),         row[4].as<std::string>(), row[5].as<std::string>(),
          read_timestamp(row[6])};
}

}  // namespace

SshKeyRecord SshKeyStore::create(Tx& tx, const std::string& org_id, const std::string& name,
                                 const SshPublicKey& key, const Actor& actor) {
  auto now = clock_.now();
  auto rows = tx.exec(kInsertKey, new_id(id_prefix::kSshKey), org_id, name, key.type, key.bits,
                      key.canonical(), key.fingerprint, actor.user_id, sql_timestamp(now));
  if (rows.empty()) {
    throw Error(ErrorCode::kConflict, "This organisation already has this SSH key.",
                {{"field", "public_key"}, {"fingerprint", key.fingerprint}});
  }
  SshKeyRecord record = key_from(rows[0]);
  write_audit(tx, now, actor,
              {.org_id = org_id,
               .action = "ssh_key.create",
               .target = record.id,
               .details = {{"name", record.name}, {"fingerprint", record.fingerprint}}});
  return record;
}

SshKeyPage SshKeyStore::list(Tx& tx, const std::string& org_id, int limit,
                             const std::optional<std::string>& cursor) {
  std::optional<Keyset> after;
  if (cursor) {
    after = decode_cursor(*cursor,
                          [](std::string_view id) { return is_valid_id(id_prefix::kSshKey, id); });
  }
  // One row more than asked says whether another page follows.
  auto rows = after
                  ? tx.exec(kListKeysAfter, org_id, sql_timestamp(after->at), after->id, limit + 1)
                  : tx.exec(kListKeysFirst, org_id, limit + 1);
  return page_of<SshKeyRecord>(rows, limit, key_from, [](const SshKeyRecord& k) {
    return Keyset{k.created_at, k.id};
  });
}

std::optional<SshKeyRecord> SshKeyStore::get(Tx& tx, const std::string& org_id,
                                             const std::string& id) {
  auto rows = tx.exec(kGetKey, org_id, id);
  if (rows.empty()) return std::nullopt;
  return key_from(rows[0]);
}

bool SshKeyStore::remove(Tx& tx, const std::string& org_id, const std::string& id,
                         const Actor& actor) {
  auto rows = tx.exec(kDeleteKey, org_id, id);
  if (rows.empty()) return false;
  write_audit(tx, clock_.now(), actor,
              {.org_id = org_id,
               .action = "ssh_key.delete",
               .target = id,
               .details = {{"name", rows[0][0].as<std::string>()},
                           {"fingerprint", rows[0][1].as<std::string>()}}});
  return true;
}

}  // namespace gpurent::identity
