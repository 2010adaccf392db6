// IdempotencyStore: an advisory lock decides who runs a request with a key now; the stored
// row, written in the request's own transaction, tells retries what it came to.
#include "identity/idempotency_store.h"

#include "core/crypto.h"
#include "core/error.h"
#include "core/sql.h"

#include <pqxx/binarystring>

namespace gpurent::identity {
namespace {

// The key's lock: a transaction-level advisory lock in a key space of its own (the two-key
// form, class "idm", apart from the invoice numbers' and the GPUs' locks), keyed by 32 bits
// of the key's hash. Two keys running at the same moment that share those bits make one of
// them wait as if it were a retry; nothing worse.
constexpr int kKeyLockClass = 0x69646d;
constexpr Statement kLock = {"idempotency_lock",
                             "SELECT pg_try_advisory_xact_lock($1::int, $2::int)"};
constexpr Statement kFind = {
    "idempotency_find",
    "SELECT request_hash, status, response FROM idempotency_keys"
    " WHERE scope = $1 AND key_hash = $2 AND state = 'done' AND created_at >= $3"};
// A row older than the TTL ($7), or a claim left running by a version that kept claims in
// transactions of their own, is replaced; a live stored response is not.
constexpr Statement kStore = {
    "idempotency_store",
    "INSERT INTO idempotency_keys AS k (scope, key_hash, org_id, user_id, request_hash, state,"
    " status, response, created_at, running_until)"
    " VALUES ($1, $2, $3, $4, $5, 'done', $6, $8, $9, $9)"
    " ON CONFLICT (scope, key_hash) DO UPDATE SET request_hash = EXCLUDED.request_hash,"
    " state = 'done', status = EXCLUDED.status, response = EXCLUDED.response,"
    " created_at = EXCLUDED.created_at, running_until = EXCLUDED.running_until"
    " WHERE k.created_at < $7 OR k.state = 'running'"
    " RETURNING 1"};
constexpr Statement kPurge = {
    "idempotency_purge",
    "DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(SELECT ctid FROM idempotency_keys"
    " WHERE created_at < $1 LIMIT $2))"};

int lock_id(const IdempotencyKeyRef& key) {
  std::string material(key.scope);
  material.append("\n").append(key.key_hash);
  std::string digest = crypto::sha256_raw(material);
  std::uint32_t bits = 0;
  for (int i = 0; i < 4; ++i) bits = (bits << 8) | static_cast<unsigned char>(digest[i]);
  return static_cast<int>(bits);
}

}  // namespace

bool IdempotencyStore::lock(Tx& tx, const IdempotencyKeyRef& key) {
  return tx.exec(kLock, kKeyLockClass, lock_id(key))[0][0].as<bool>();
}

std::optional<StoredResponse> IdempotencyStore::find(Tx& tx, const IdempotencyKeyRef& key) {
  std::string expired_before = sql_timestamp(clock_.now() - policy_.ttl);
  auto rows = tx.exec(kFind, key.scope, key.key_hash, expired_before);
  if (rows.empty()) return std::nullopt;
  return StoredResponse{.request_hash = rows[0][0].as<std::string>(),
                        .status = rows[0][1].as<int>(),
                        .response = pqxx::binarystring(rows[0][2]).str()};
}

bool IdempotencyStore::store(Tx& tx, const IdempotencyKeyRef& key, const std::string& request_hash,
                             int status, const std::string& sealed_response) {
  Timestamp now = clock_.now();
  std::string expired_before = sql_timestamp(now - policy_.ttl);
  auto r = tx.exec(kStore, key.scope, key.key_hash, key.org_id, key.user_id, request_hash, status,
                   expired_before, pqxx::binarystring(sealed_response), sql_timestamp(now));
  return !r.empty();
}

int IdempotencyStore::purge_expired(Tx& tx, int batch) {
  std::string before = sql_timestamp(clock_.now() - policy_.ttl);
  return static_cast<int>(tx.exec(kPurge, before, batch).affected_rows());
}

}  // namespace gpurent::identity
