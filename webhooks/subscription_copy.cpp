// SubscriptionCopy: who subscribes to what, from memory while announcements arrive.
#include "webhooks/subscription_copy.h"

namespace gpurent::webhooks {

std::shared_ptr<const SubscriptionCopy::Snapshot> SubscriptionCopy::copy(Tx& tx) {
  if (!listening_()) {
    direct_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  return cache_.get_with(
      [&] {
        Snapshot built;
        for (auto& [org, events] : store_.subscriptions(tx)) {
          auto& types = built.by_org[org];
          for (auto& e : events) {
            built.any.insert(e);
            types.insert(std::move(e));
          }
        }
        return built;
      },
      listening_);
}

bool SubscriptionCopy::wants(Tx& tx, const std::string& org_id, std::string_view type) {
  auto c = copy(tx);
  if (!c) return store_.wants(tx, org_id, type);
  auto it = c->by_org.find(org_id);
  return it != c->by_org.end() && it->second.find(type) != it->second.end();
}

bool SubscriptionCopy::anyone_wants(Tx& tx, std::string_view type) {
  auto c = copy(tx);
  return !c || c->any.find(type) != c->any.end();
}

void SubscriptionCopy::changed() {
  cache_.invalidate();
}

SubscriptionCopy::Stats SubscriptionCopy::stats() const {
  return {cache_.misses(), cache_.hits(), direct_.load(std::memory_order_relaxed)};
}

}  // namespace gpurent::webhooks
