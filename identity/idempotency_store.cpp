// IdempotencyStore: one INSERT … ON CONFLICT decides who runs a request; the row's state
// tells retries whether to replay, wait or refuse.
#include "identity/idempotency_store.h"

#include "core/error.h"
#include "core/sql.h"

#include <pqxx/binarystring>

namespace gpurent::identity {
namespace {

// Takes the key when it is free, expired ($8: created before the TTL), or abandoned by a
// run of the same request ($7 is now: its lease ran out). A conflicting live row is left
// alone and nothing is returned.
constexpr Statement kClaim = {
    "idempotency_claim",
    "INSERT INTO idempotency_keys AS k (scope, key_hash, org_id, user_id, request_hash, state,"
    " created_at, running_until) VALUES ($1, $2, $3, $4, $5, 'running', $6, $7)"
    " ON CONFLICT (scope, key_hash) DO UPDATE SET request_hash = EXCLUDED.request_hash,"
    " state = 'running', status = NULL, response = NULL, created_at = EXCLUDED.created_at,"
    " running_until = EXCLUDED.running_until"
    " WHERE k.created_at < $8"
    "    OR (k.state = 'running' AND k.running_until < $6"
    "        AND k.request_hash = EXCLUDED.request_hash)"
    " RETURNING 1"};
constexpr Statement kRead = {"idempotency_read",
                             "SELECT request_hash, state, status, response FROM idempotency_keys"
                             " WHERE scope = $1 AND key_hash = $2 AND created_at >= $3"};
constexpr Statement kComplete = {
    "idempotency_complete",
    "UPDATE idempotency_keys SET state = 'done', status = $4, response = $5"
    " WHERE scope = $1 AND key_hash = $2 AND request_hash = $3 AND state = 'running'"};
constexpr Statement kRelease = {
    "idempotency_release",
    "DELETE FROM idempotency_keys"
    " WHERE scope = $1 AND key_hash = $2 AND request_hash = $3 AND state = 'running'"};
constexpr Statement kPurge = {
    "idempotency_purge",
    "DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(SELECT ctid FROM idempotency_keys"
    " WHERE created_at < $1 LIMIT $2))"};

}  // namespace

IdempotencyClaim IdempotencyStore::claim(Tx& tx, const IdempotencyKeyRef& key,
                                         const std::string& request_hash) {
  Timestamp now = clock_.now();
  std::string now_s = sql_timestamp(now);
  std::string lease_end = sql_timestamp(now + policy_.lease);
  std::string expired_before = sql_timestamp(now - policy_.ttl);
  // A row can vanish between the INSERT and the SELECT (purged, or released by a failed
  // run); the next round then claims it. Each statement of a READ COMMITTED transaction
  // sees what others committed before it started, so a round sees the row gone.
  for (int round = 0;; ++round) {
    auto inserted = tx.exec(kClaim, key.scope, key.key_hash, key.org_id, key.user_id, request_hash,
                            now_s, lease_end, expired_before);
    if (!inserted.empty()) return IdempotencyClaim{.kind = IdempotencyClaim::Kind::kStarted};
    auto rows = tx.exec(kRead, key.scope, key.key_hash, expired_before);
    if (!rows.empty()) {
      const auto& row = rows[0];
      IdempotencyClaim c;
      if (row[0].as<std::string>() != request_hash) {
        c.kind = IdempotencyClaim::Kind::kMismatch;
      } else if (row[1].as<std::string>() == "running") {
        c.kind = IdempotencyClaim::Kind::kRunning;
      } else {
        c.kind = IdempotencyClaim::Kind::kDone;
        c.status = row[2].as<int>();
        c.response = pqxx::binarystring(row[3]).str();
      }
      return c;
    }
    if (round >= 3) {
      throw Error(ErrorCode::kConflict, "The Idempotency-Key is being reused concurrently.");
    }
  }
}

bool IdempotencyStore::complete(Tx& tx, const IdempotencyKeyRef& key,
                                const std::string& request_hash, int status,
                                const std::string& sealed_response) {
  auto r = tx.exec(kComplete, key.scope, key.key_hash, request_hash, status,
                   pqxx::binarystring(sealed_response));
  return r.affected_rows() == 1;
}

void IdempotencyStore::release(Tx& tx, const IdempotencyKeyRef& key,
                               const std::string& request_hash) {
  tx.exec(kRelease, key.scope, key.key_hash, request_hash);
}

int IdempotencyStore::purge_expired(Tx& tx, int batch) {
  std::string before = sql_timestamp(clock_.now() - policy_.ttl);
  return static_cast<int>(tx.exec(kPurge, before, batch).affected_rows());
}

}  // namespace gpurent::identity
