// Idempotency keys in PostgreSQL: the sealed response of each finished keyed request, and
// the lock that lets one request with a key run at a time across replicas. The HTTP layer
// (api/idempotency.h) decides what to seal and when to wait.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"

#include <chrono>
#include <optional>
#include <string>

namespace gpurent::identity {

// One caller's key. `scope` names the caller ("<org or ->/<user>"); `key_hash` is the
// SHA-256 of the client's key, which is never stored.
struct IdempotencyKeyRef {
  std::string scope;
  std::string key_hash;
  std::optional<std::string> org_id;
  std::string user_id;
};

// A finished request's stored outcome.
struct StoredResponse {
  std::string request_hash;
  int status = 0;
  std::string response;  // sealed
};

struct IdempotencyPolicy {
  std::chrono::seconds ttl{24 * 3600};  // a key is remembered this long
};

// Every method runs in the caller's transaction (see gpurent::Tx) and commits nothing. The
// HTTP layer runs a keyed request's work and these steps in one transaction (PgPool::unit),
// so a stored response exists exactly when the work it describes committed.
class IdempotencyStore {
 public:
  explicit IdempotencyStore(const Clock& clock, IdempotencyPolicy policy = {})
      : clock_(clock), policy_(policy) {}

  // Takes the key's lock until the transaction ends; false, at once, when another
  // transaction holds it (a request with this key is running now, on any replica). Taken
  // before find(), so what find() sees cannot change until the transaction ends.
  bool lock(Tx& tx, const IdempotencyKeyRef& key);

  // The response stored for the key within the TTL, or nullopt (never stored, expired).
  std::optional<StoredResponse> find(Tx& tx, const IdempotencyKeyRef& key);

  // Stores a finished request's status and sealed response, replacing an expired one.
  // False when an unexpired one is there already (another transaction stored it without
  // the lock: never, while every writer takes it).
  bool store(Tx& tx, const IdempotencyKeyRef& key, const std::string& request_hash, int status,
             const std::string& sealed_response);

  // Deletes keys older than the TTL, at most `batch` of them; returns how many.
  int purge_expired(Tx& tx, int batch = 1000);

  const IdempotencyPolicy& policy() const { return policy_; }

 private:
  const Clock& clock_;
  IdempotencyPolicy policy_;
};

}  // namespace gpurent::identity
