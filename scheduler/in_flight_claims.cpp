#include "scheduler/in_flight_claims.h"

#include <algorithm>
#include <unordered_map>

namespace gpurent::scheduler {

InFlightClaims::Claim InFlightClaims::claim(const Placement& placement, const Period& occupies,
                                            Clock::time_point now) {
  std::lock_guard lock(mutex_);
  Claim c{++next_id_, placement.node_id, placement.gpu_indices, occupies, now + lifetime_};
  expire(now);
  claims_.push_back(c);
  return c;
}

void InFlightClaims::release(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  std::erase_if(claims_, [&](const Claim& c) { return c.id == id; });
}

std::vector<std::shared_ptr<const NodeCandidate>> InFlightClaims::apply(
    std::vector<const NodeCandidate*>& candidates, Clock::time_point now) {
  std::vector<Claim> in_force;
  {
    std::lock_guard lock(mutex_);
    expire(now);
    if (claims_.empty()) return {};
    in_force = claims_;
  }
  std::unordered_map<std::string, std::vector<const Claim*>> by_node;
  for (const auto& c : in_force) by_node[c.node_id].push_back(&c);
  std::vector<std::shared_ptr<const NodeCandidate>> copies;
  for (auto& candidate : candidates) {
    auto found = by_node.find(candidate->node_id);
    if (found == by_node.end()) continue;
    auto copy = std::make_shared<NodeCandidate>(*candidate);
    for (const Claim* c : found->second) {
      for (auto& gpu : copy->gpus) {
        if (std::find(c->gpu_indices.begin(), c->gpu_indices.end(), gpu.index) !=
            c->gpu_indices.end()) {
          gpu.busy.push_back(c->occupies);
        }
      }
    }
    candidate = copy.get();
    copies.push_back(std::move(copy));
  }
  return copies;
}

std::size_t InFlightClaims::size() const {
  std::lock_guard lock(mutex_);
  return claims_.size();
}

void InFlightClaims::expire(Clock::time_point now) {
  std::erase_if(claims_, [&](const Claim& c) { return c.expires <= now; });
}

}  // namespace gpurent::scheduler
