// CredentialCache: hit under a shared lock, load with one statement on a miss, drop all on
// an announcement, write uses behind on a thread of its own.
#include "api/credential_cache.h"

#include "core/blocking.h"
#include "core/log.h"

#include <algorithm>

namespace gpurent::http {
namespace {

std::int64_t micros(Timestamp t) {
  return t.time_since_epoch().count();
}

Timestamp from_micros(std::int64_t us) {
  return Timestamp(std::chrono::microseconds(us));
}

void raise_to(std::atomic<std::int64_t>& value, std::int64_t to) {
  auto current = value.load();
  while (current < to && !value.compare_exchange_weak(current, to)) {
  }
}

void merge(std::unordered_map<std::string, Timestamp>& into,
           std::unordered_map<std::string, Timestamp>&& from) {
  for (auto& [hash, at] : from) {
    auto [it, inserted] = into.emplace(hash, at);
    if (!inserted) it->second = std::max(it->second, at);
  }
}

std::vector<std::pair<std::string, Timestamp>> as_list(
    const std::unordered_map<std::string, Timestamp>& uses) {
  return {uses.begin(), uses.end()};
}

}  // namespace

CredentialCache::CredentialCache(PgPool& pool, identity::IdentityStore& sessions,
                                 identity::TokenStore& tokens, const Clock& clock,
                                 std::function<bool()> caught_up, Options options)
    : pool_(pool),
      sessions_(sessions),
      tokens_(tokens),
      clock_(clock),
      caught_up_(std::move(caught_up)),
      options_(options),
      // flush() logs its own failures and keeps what it could not write for the next round.
      flusher_("recording credential uses", options.flush_every, [this] { flush(); },
               {.tick_at_start = false}) {}

CredentialCache::~CredentialCache() {
  stop();
}

void CredentialCache::note_use(Uses& pending, std::atomic<std::int64_t>& used_us,
                               std::atomic<std::int64_t>& recorded_us, const std::string& hash,
                               std::int64_t now_us) {
  raise_to(used_us, now_us);
  auto recorded = recorded_us.load();
  auto every = std::chrono::duration_cast<std::chrono::microseconds>(options_.record_every);
  if (now_us - recorded < every.count()) return;
  // One of several concurrent users queues it.
  if (!recorded_us.compare_exchange_strong(recorded, now_us)) return;
  std::lock_guard lock(pending_mutex_);
  auto [it, inserted] = pending.emplace(hash, from_micros(now_us));
  if (!inserted) it->second = std::max(it->second, from_micros(now_us));
}

std::shared_ptr<const identity::ResolvedToken> CredentialCache::token(
    const std::string& secret_hash) {
  Timestamp now = clock_.now();
  if (caught_up_()) {
    std::shared_lock lock(mutex_);
    auto it = tokens_by_hash_.find(secret_hash);
    if (it != tokens_by_hash_.end()) {
      TokenEntry& e = *it->second;
      if (!e.value->expires_at || now < *e.value->expires_at) {
        ++hits_;
        note_use(pending_token_uses_, e.used_us, e.recorded_us, secret_hash, micros(now));
        return e.value;
      }
    }
  }
  may_block();  // a lookup reads the database: not on a network thread (core/blocking.h)
  ++misses_;
  auto generation = generation_.load();
  auto loaded =
      pool_.read("token_resolve", [&](Tx& tx) { return tokens_.resolve(tx, secret_hash, now); });
  std::unique_lock lock(mutex_);
  if (!loaded) {
    tokens_by_hash_.erase(secret_hash);
    return nullptr;
  }
  auto entry = std::make_unique<TokenEntry>();
  entry->value = std::make_shared<const identity::ResolvedToken>(std::move(*loaded));
  auto value = entry->value;
  note_use(pending_token_uses_, entry->used_us, entry->recorded_us, secret_hash, micros(now));
  keep(tokens_by_hash_, secret_hash, std::move(entry), generation);
  return value;
}

std::int64_t CredentialCache::pending_seen_us(const std::string& id_hash) {
  std::lock_guard lock(pending_mutex_);
  auto it = pending_sessions_seen_.find(id_hash);
  return it == pending_sessions_seen_.end() ? 0 : micros(it->second);
}

std::shared_ptr<const identity::ResolvedSession> CredentialCache::session(
    const std::string& id_hash, const identity::SessionPolicy& policy) {
  Timestamp now = clock_.now();
  auto idle_us = std::chrono::duration_cast<std::chrono::microseconds>(policy.idle).count();
  std::int64_t seen_here_us = 0;  // a use this replica knows of, perhaps not yet written
  if (caught_up_()) {
    std::shared_lock lock(mutex_);
    auto it = sessions_by_hash_.find(id_hash);
    if (it != sessions_by_hash_.end()) {
      SessionEntry& e = *it->second;
      seen_here_us = e.used_us.load();
      if (now < e.value->expires_at && micros(now) - seen_here_us < idle_us) {
        ++hits_;
        note_use(pending_sessions_seen_, e.used_us, e.recorded_us, id_hash, micros(now));
        return e.value;
      }
      // Idle here: another replica may have seen it since; the database decides.
    }
  }
  may_block();  // a lookup reads the database: not on a network thread (core/blocking.h)
  ++misses_;
  auto generation = generation_.load();
  auto loaded = pool_.read("identity_resolve_session",
                           [&](Tx& tx) { return sessions_.resolve_session(tx, id_hash, now); });
  std::int64_t last_seen_us =
      loaded ? std::max({micros(loaded->last_seen_at), seen_here_us, pending_seen_us(id_hash)}) : 0;
  std::unique_lock lock(mutex_);
  if (!loaded || micros(now) - last_seen_us >= idle_us) {
    sessions_by_hash_.erase(id_hash);
    return nullptr;
  }
  auto entry = std::make_unique<SessionEntry>();
  entry->value = std::make_shared<const identity::ResolvedSession>(std::move(*loaded));
  auto value = entry->value;
  note_use(pending_sessions_seen_, entry->used_us, entry->recorded_us, id_hash, micros(now));
  keep(sessions_by_hash_, id_hash, std::move(entry), generation);
  return value;
}

std::size_t CredentialCache::entries() const {
  std::shared_lock lock(mutex_);
  return tokens_by_hash_.size() + sessions_by_hash_.size();
}

void CredentialCache::invalidate() {
  std::unique_lock lock(mutex_);
  ++generation_;
  ++invalidations_;
  // Uses seen here but not yet queued would be forgotten with their entries.
  {
    std::lock_guard pending(pending_mutex_);
    for (auto& [hash, e] : tokens_by_hash_) {
      if (e->used_us > e->recorded_us) pending_token_uses_[hash] = from_micros(e->used_us);
    }
    for (auto& [hash, e] : sessions_by_hash_) {
      if (e->used_us > e->recorded_us) pending_sessions_seen_[hash] = from_micros(e->used_us);
    }
  }
  tokens_by_hash_.clear();
  sessions_by_hash_.clear();
}

void CredentialCache::flush(bool everything) {
  if (everything) {
    std::shared_lock lock(mutex_);
    std::lock_guard pending(pending_mutex_);
    for (auto& [hash, e] : tokens_by_hash_) {
      if (e->used_us > e->recorded_us) pending_token_uses_[hash] = from_micros(e->used_us);
    }
    for (auto& [hash, e] : sessions_by_hash_) {
      if (e->used_us > e->recorded_us) pending_sessions_seen_[hash] = from_micros(e->used_us);
    }
  }
  Uses token_uses, sessions_seen;
  {
    std::lock_guard lock(pending_mutex_);
    token_uses.swap(pending_token_uses_);
    sessions_seen.swap(pending_sessions_seen_);
  }
  // Each kind in a transaction of its own, and none when there is nothing to write: a
  // kind written before the other fails is not written again.
  try {
    if (!token_uses.empty()) {
      pool_.transact("token_record_uses",
                     [&](Tx& tx) { tokens_.record_uses(tx, as_list(token_uses)); });
      token_uses.clear();
    }
    if (!sessions_seen.empty()) {
      pool_.transact("identity_record_sessions_seen",
                     [&](Tx& tx) { sessions_.record_sessions_seen(tx, as_list(sessions_seen)); });
      sessions_seen.clear();
    }
  } catch (const std::exception& e) {
    // Kept for the next round: the database may be back by then.
    log::warn("recording credential uses failed: {}", e.what());
    std::lock_guard lock(pending_mutex_);
    merge(pending_token_uses_, std::move(token_uses));
    merge(pending_sessions_seen_, std::move(sessions_seen));
  }
}

void CredentialCache::start() {
  flusher_.start();
}

void CredentialCache::stop() {
  if (stopped_.exchange(true)) return;
  flusher_.stop();
  flush(/*everything=*/true);
}

}  // namespace gpurent::http
