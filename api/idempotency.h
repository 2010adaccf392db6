// The Idempotency-Key header (API.md "Conventions"): a POST retried with the same key and
// body gets the first response again, with another body 422 idempotency_key_reused, and
// while the first still runs the retry waits for it or gets 409 conflict. The work runs
// once, across replicas, because the claim is a row in PostgreSQL.
//
// Keys belong to the caller (org and user): another user's key never matches. Responses
// are sealed (AES-256-GCM) under a key derived from the client's Idempotency-Key, which
// the database stores only as a hash, so a database reader cannot read the secrets some
// responses carry. Outcomes that depend on the moment or the credential rather than the
// request (401, 403, 409, 429, 5xx) are not kept: the next retry runs again.
#pragma once

#include "api/auth.h"
#include "api/router.h"
#include "core/db_pool.h"
#include "identity/idempotency_store.h"

#include <atomic>
#include <chrono>

namespace gpurent::http {

struct IdempotencyOptions {
  // How long a retry waits for the first request with its key before 409 conflict. It
  // waits off the workers (Response::call_again): the server calls the guard again.
  std::chrono::milliseconds wait{5000};
  // How often a replica deletes expired keys (at most).
  std::chrono::seconds purge_every{60};
};

// Each step on the key (claim, complete, release, purge) is a transaction of its own,
// committed at once so other replicas see it, and none is part of the handler's.
class IdempotencyGuard {
 public:
  IdempotencyGuard(PgPool& pool, identity::IdempotencyStore& store, IdempotencyOptions options = {})
      : pool_(pool), store_(store), options_(options) {}

  // The route's handler, honouring Idempotency-Key when the route takes it (POST, worker
  // execution, idempotency_key set, credentials required); otherwise the handler itself.
  // It runs behind authentication: the key belongs to the caller it is given.
  Handler wrap(const Route& route);

 private:
  Response run(const Handler& inner, const Request& request, const Principal& principal);
  void release_quietly(const identity::IdempotencyKeyRef& ref, const std::string& hash);
  void maybe_purge();

  PgPool& pool_;
  identity::IdempotencyStore& store_;
  IdempotencyOptions options_;
  std::atomic<std::int64_t> last_purge_ns_{0};
};

// Whether a response with this status is kept for replay (see the header comment).
bool is_replayable_status(int status);

}  // namespace gpurent::http
