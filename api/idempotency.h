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
#include "api/metrics.h"
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

// A keyed request runs in one PgPool::unit with its record: the key's lock, the look for a
// stored response, the handler (whose own transactions join the unit), and the sealed
// response, committed together. No claim outlives its transaction, so no key is ever stuck
// after a crash or an outage.
class IdempotencyGuard {
 public:
  IdempotencyGuard(PgPool& pool, identity::IdempotencyStore& store, IdempotencyOptions options = {})
      : pool_(pool), store_(store), options_(options) {}

  // The route's handler, honouring Idempotency-Key when the route takes it (POST, worker
  // execution, idempotency_key set, credentials required); otherwise the handler itself.
  // It runs behind authentication: the key belongs to the caller it is given.
  Handler wrap(const Route& route);

  // gpurent_idempotent_requests_total{outcome}: keyed requests that ran, were answered
  // from a stored response, or found their key running elsewhere (told to call again).
  void add_metrics(Metrics& metrics) const;

 private:
  Response run(const Handler& inner, const Request& request, const Principal& principal);
  Response running_response() const;
  Response replay(const identity::StoredResponse& stored, const identity::IdempotencyKeyRef& ref,
                  const std::string& hash, const std::string& seal_key) const;
  void keep(Tx& tx, const identity::IdempotencyKeyRef& ref, const std::string& hash,
            const std::string& seal_key, const Response& response);
  void maybe_purge();

  PgPool& pool_;
  identity::IdempotencyStore& store_;
  IdempotencyOptions options_;
  std::atomic<std::int64_t> last_purge_ns_{0};
  mutable std::atomic<std::uint64_t> ran_{0}, replayed_{0}, busy_{0};
};

// Whether a response with this status is kept for replay (see the header comment).
bool is_replayable_status(int status);

}  // namespace gpurent::http
