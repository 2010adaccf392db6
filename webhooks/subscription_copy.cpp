// SubscriptionCopy: who subscribes to what, from memory while announcements arrive.
#include "webhooks/subscription_copy.h"

namespace gpurent::webhooks {

std::shared_ptr<const SubscriptionCopy::Snapshot> SubscriptionCopy::copy(Tx& tx) {
  if (!listening_()) {
    direct_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  std::uint64_t generation;
  {
    std::lock_guard lock(mutex_);
    if (snapshot_) {
      from_copy_.fetch_add(1, std::memory_order_relaxed);
      return snapshot_;
    }
    generation = generation_;
  }
  // Read after the generation is taken: a change that commits after this statement's
  // snapshot is announced after it, and its changed() makes this copy one not to keep.
  auto built = std::make_shared<Snapshot>();
  for (auto& [org, events] : store_.subscriptions(tx)) {
    auto& types = built->by_org[org];
    for (auto& e : events) {
      built->any.insert(e);
      types.insert(std::move(e));
    }
  }
  loads_.fetch_add(1, std::memory_order_relaxed);
  bool still_listening = listening_();
  std::lock_guard lock(mutex_);
  if (still_listening && generation == generation_) snapshot_ = built;
  return built;
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
  std::lock_guard lock(mutex_);
  ++generation_;
  snapshot_.reset();
}

SubscriptionCopy::Stats SubscriptionCopy::stats() const {
  return {loads_.load(std::memory_order_relaxed), from_copy_.load(std::memory_order_relaxed),
          direct_.load(std::memory_order_relaxed)};
}

}  // namespace gpurent::webhooks
