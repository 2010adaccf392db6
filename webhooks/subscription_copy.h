// Which orgs' live webhooks subscribe to which event types, kept in memory while this replica
// hears the webhooks' announcements, so that a change nobody subscribes to (most bookings,
// most rental moves) costs no statement to find that out: a booking asked twice, once for
// its rental.created and once for billing.low_balance (docs/PERFORMANCE.md, "Booking storm").
//
// Each answer is what WebhookStore::wants would say in the caller's transaction, or is asked
// of the store in it when the copy cannot say so (the listener is not connected). A change
// reaches the copy through changed(): on every replica from the announcements
// (migrations/0022: a trigger on webhooks) and on reconnection, and on the replica that made
// it after its commit; the routes that change webhooks answer only once the announcement has
// come back to the replica's listener (Route::waits_for_announcement), so by then the other
// replicas have it too. A copy loaded while a change was announced serves the read that
// loaded it but is not kept.
#pragma once

#include "core/db_pool.h"
#include "core/snapshot_cache.h"
#include "webhooks/webhook_store.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>

namespace gpurent::webhooks {

class SubscriptionCopy {
 public:
  // `listening` says whether announcements are arriving (the listener is connected).
  SubscriptionCopy(WebhookStore& store, std::function<bool()> listening)
      : store_(store), listening_(std::move(listening)) {}
  SubscriptionCopy(const SubscriptionCopy&) = delete;
  SubscriptionCopy& operator=(const SubscriptionCopy&) = delete;

  // Whether a live webhook of the org subscribes to `type` (WebhookStore::wants).
  bool wants(Tx& tx, const std::string& org_id, std::string_view type);
  // Whether any live webhook subscribes to `type`: false spares a rental's move the store's
  // rental_wanted(). True while not listening (it cannot tell).
  bool anyone_wants(Tx& tx, std::string_view type);

  // Webhooks changed: the next read loads them again. Any thread.
  void changed();

  struct Stats {
    std::uint64_t loads = 0;      // reads that loaded the subscriptions (one statement)
    std::uint64_t from_copy = 0;  // answers from memory
    std::uint64_t direct = 0;     // answers the store gave (not listening)
  };
  Stats stats() const;

 private:
  struct Snapshot {
    std::unordered_map<std::string, std::set<std::string, std::less<>>> by_org;
    std::set<std::string, std::less<>> any;  // every type some webhook subscribes to
  };
  std::shared_ptr<const Snapshot> copy(Tx& tx);  // null while not listening

  WebhookStore& store_;
  std::function<bool()> listening_;
  SnapshotCache<Snapshot> cache_;
  std::atomic<std::uint64_t> direct_{0};
};

}  // namespace gpurent::webhooks
