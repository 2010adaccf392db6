// API tokens and panel sessions resolved once and then served from memory, so that an
// authenticated request costs a hash lookup rather than database round trips.
//
// It stays true on every replica: whatever changes what a credential may do (revocation,
// expiry, logout, a role change, removal from the org, an org switch, admin demotion, a
// guardrail) announces itself on the gpurent_credentials channel in the change's own
// transaction (migration 0005's triggers, so changes made by hand count too), and each
// replica drops everything it holds on the announcement and whenever its listener
// (re)connects. The cache is trusted only while the listener is caught up (connected, with
// nothing unread and nothing being delivered): otherwise a request resolves from the
// database, as it did before the cache, and nothing is stored. So a change committed before
// a request arrives is seen by it as soon as PostgreSQL has sent the announcement. Only
// live credentials are kept, never unknown secrets, and at most `capacity` of them.
//
// A miss costs one statement, outside any transaction (PgPool::read). Uses are written
// behind: a credential's last_used_at / last_seen_at is recorded at most once a
// `record_every` per credential, batched by a background thread every `flush_every`, and
// everything still pending is written when the cache stops.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "core/periodic_worker.h"
#include "identity/identity_store.h"
#include "identity/token_store.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpurent::http {

class CredentialCache {
 public:
  struct Options {
    std::size_t capacity = 100'000;  // entries of each kind; a full cache starts over
    std::chrono::seconds record_every{60};
    std::chrono::milliseconds flush_every{1000};
  };

  // `caught_up` says whether every announcement that has reached the process has been
  // delivered to invalidate() (NotifyListener::caught_up).
  CredentialCache(PgPool& pool, identity::IdentityStore& sessions, identity::TokenStore& tokens,
                  const Clock& clock, std::function<bool()> caught_up, Options options);
  CredentialCache(PgPool& pool, identity::IdentityStore& sessions, identity::TokenStore& tokens,
                  const Clock& clock, std::function<bool()> caught_up)
      : CredentialCache(pool, sessions, tokens, clock, std::move(caught_up), Options{}) {}
  ~CredentialCache();  // stop()
  CredentialCache(const CredentialCache&) = delete;
  CredentialCache& operator=(const CredentialCache&) = delete;

  // The live token whose secret hashes to `secret_hash`, or nullptr; records its use. One
  // not in memory is looked up (one statement), or, where blocking is forbidden
  // (core/blocking.h), WouldBlock is thrown before anything is counted; so for session().
  std::shared_ptr<const identity::ResolvedToken> token(const std::string& secret_hash);
  // The session whose cookie hashes to `id_hash`, live at now under `policy` (absolute and
  // idle expiry), or nullptr; records it as seen now.
  std::shared_ptr<const identity::ResolvedSession> session(const std::string& id_hash,
                                                           const identity::SessionPolicy& policy);

  // Drops everything held (not the uses waiting to be written).
  void invalidate();

  // Starts the write-behind thread. Once.
  void start();
  // Stops it and writes every pending use. Idempotent.
  void stop();
  // Writes the uses due now (the thread's work; tests call it directly).
  void flush(bool everything = false);

  std::uint64_t hits() const { return hits_.load(); }
  std::uint64_t misses() const { return misses_.load(); }
  std::uint64_t invalidations() const { return invalidations_.load(); }
  // Tokens and sessions held now.
  std::size_t entries() const;
  // The write-behind's ticks (runs, failures, last success), for /metrics.
  const JobStats& write_behind_stats() const { return flusher_.stats(); }

 private:
  // Times in microseconds since the epoch, as the clock reads them.
  struct TokenEntry {
    std::shared_ptr<const identity::ResolvedToken> value;
    std::atomic<std::int64_t> used_us{0};      // the latest use seen here
    std::atomic<std::int64_t> recorded_us{0};  // the latest use queued for writing
  };
  struct SessionEntry {
    std::shared_ptr<const identity::ResolvedSession> value;
    std::atomic<std::int64_t> used_us{0};
    std::atomic<std::int64_t> recorded_us{0};
  };
  using Uses = std::unordered_map<std::string, Timestamp>;

  // Marks a use at `now_us`; queues it for writing when the last queued one is older than
  // record_every.
  void note_use(Uses& pending, std::atomic<std::int64_t>& used_us,
                std::atomic<std::int64_t>& recorded_us, const std::string& hash,
                std::int64_t now_us);
  std::int64_t pending_seen_us(const std::string& id_hash);
  // Under the exclusive lock: stores a freshly loaded entry, but only when nothing was
  // announced since the load began and announcements can arrive; a full map starts over.
  template <typename Entry>
  void keep(std::unordered_map<std::string, std::unique_ptr<Entry>>& map, const std::string& hash,
            std::unique_ptr<Entry> entry, std::uint64_t generation) {
    if (generation_.load() != generation || !caught_up_()) return;
    if (map.size() >= options_.capacity) map.clear();
    map[hash] = std::move(entry);
  }
  PgPool& pool_;
  identity::IdentityStore& sessions_;
  identity::TokenStore& tokens_;
  const Clock& clock_;
  std::function<bool()> caught_up_;
  const Options options_;

  // Bumped by every invalidation: a load that started before one must not store what it
  // read, which may already be stale.
  std::atomic<std::uint64_t> generation_{0};
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<TokenEntry>> tokens_by_hash_;
  std::unordered_map<std::string, std::unique_ptr<SessionEntry>> sessions_by_hash_;

  std::mutex pending_mutex_;
  Uses pending_token_uses_;
  Uses pending_sessions_seen_;

  std::atomic<std::uint64_t> hits_{0}, misses_{0}, invalidations_{0};

  std::atomic<bool> stopped_{false};  // the last flush is written once
  // Last: stopped before what its ticks use is destroyed.
  PeriodicWorker flusher_;
};

}  // namespace gpurent::http
