#include "scheduler/in_flight_claims.h"

#include <algorithm>

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
  // The candidates come in node-id order (CapacityIndex's): each claimed node is found by a
  // binary search, so a booking pays for the few claims, not for the fleet.
  auto by_id = [](const NodeCandidate* c, const std::string& id) { return c->node_id < id; };
  std::sort(in_force.begin(), in_force.end(),
            [](const Claim& a, const Claim& b) { return a.node_id < b.node_id; });
  std::vector<std::shared_ptr<const NodeCandidate>> copies;
  for (std::size_t i = 0; i < in_force.size();) {
    const std::string& node_id = in_force[i].node_id;
    std::size_t end = i;
    while (end < in_force.size() && in_force[end].node_id == node_id) ++end;
    auto at = std::lower_bound(candidates.begin(), candidates.end(), node_id, by_id);
    if (at != candidates.end() && (*at)->node_id == node_id) {
      auto copy = std::make_shared<NodeCandidate>(**at);
      for (std::size_t k = i; k < end; ++k) {
        const Claim& c = in_force[k];
        for (auto& gpu : copy->gpus) {
          if (std::find(c.gpu_indices.begin(), c.gpu_indices.end(), gpu.index) !=
              c.gpu_indices.end()) {
            gpu.busy.push_back(c.occupies);
          }
        }
      }
      *at = copy.get();
      copies.push_back(std::move(copy));
    }
    i = end;
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
