// Idempotency keys in PostgreSQL: who claimed a key for which request, and the sealed
// response once the request is done. The HTTP layer (api/idempotency.h) decides what to
// seal and when to wait; this store only makes claims atomic across replicas.
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

struct IdempotencyClaim {
  enum class Kind {
    kStarted,   // this caller owns the key now and must complete() or release() it
    kDone,      // an earlier request with the same hash finished: replay `response`
    kRunning,   // an earlier request with the same hash is still running
    kMismatch,  // the key was used for another request
  };
  Kind kind = Kind::kStarted;
  int status = 0;
  std::string response;  // sealed, for kDone
};

struct IdempotencyPolicy {
  std::chrono::seconds ttl{24 * 3600};  // a key is remembered this long
  // A running claim older than this was abandoned (its process died) and may be taken
  // over by a retry of the same request.
  std::chrono::seconds lease{60};
};

// Every method runs in the caller's transaction (see gpurent::Tx) and commits nothing; each
// is a use case of its own for the HTTP layer, which commits it at once so other replicas
// see the claim.
class IdempotencyStore {
 public:
  explicit IdempotencyStore(const Clock& clock, IdempotencyPolicy policy = {})
      : clock_(clock), policy_(policy) {}

  // Claims the key for a request whose hash is `request_hash`, or reports what holds it.
  // Concurrent claims of one key from any number of replicas give exactly one kStarted.
  IdempotencyClaim claim(Tx& tx, const IdempotencyKeyRef& key, const std::string& request_hash);

  // Stores the finished request's status and sealed response. False when the claim was
  // lost meanwhile (taken over after the lease, or purged).
  bool complete(Tx& tx, const IdempotencyKeyRef& key, const std::string& request_hash, int status,
                const std::string& sealed_response);

  // Gives up a claim without a stored response (the request failed in a way a retry
  // should repeat), so the next retry runs again.
  void release(Tx& tx, const IdempotencyKeyRef& key, const std::string& request_hash);

  // Deletes keys older than the TTL, at most `batch` of them; returns how many.
  int purge_expired(Tx& tx, int batch = 1000);

  const IdempotencyPolicy& policy() const { return policy_; }

 private:
  const Clock& clock_;
  IdempotencyPolicy policy_;
};

}  // namespace gpurent::identity
