// Tests the claims bookings in flight on one replica make: what placement sees of them, and
// how long they last.
#include "scheduler/in_flight_claims.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpurent::scheduler {
namespace in_flight_claims_test {

using std::chrono::hours;
using std::chrono::seconds;

const Timestamp kDay = Timestamp{} + hours(24 * 20000);

NodeCandidate node(std::string id, int gpus) {
  NodeCandidate n;
  n.node_id = std::move(id);
  n.gpu_model = "H100-SXM5-80GB";
  n.links.gpus = gpus;
  n.links.links.assign(gpus, std::vector<std::string>(gpus, "NV18"));
  for (int i = 0; i < gpus; ++i) {
    n.links.links[i][i] = "X";
    n.gpus.push_back({i, true, {}});
  }
  return n;
}

std::vector<int> placed_gpus(const std::vector<const NodeCandidate*>& candidates, int count) {
  PlacementRequest req{.gpu_model = "H100-SXM5-80GB",
                       .gpu_count = count,
                       .link_need = LinkNeed::kAny,
                       .occupies = {kDay, kDay + hours(24)}};
  auto choices = place_held(req, candidates, {.max_choices = 1});
  return choices.empty() ? std::vector<int>{} : choices.front().gpu_indices;
}

TEST(InFlightClaims, ABookingInFlightMakesTheNextChooseTheNextGpuOfTheSameNode) {
  NodeCandidate a = node("node-a", 8);
  std::vector<const NodeCandidate*> seen{&a};
  InFlightClaims claims;
  auto now = InFlightClaims::Clock::now();
  auto first = placed_gpus(seen, 1);
  ASSERT_EQ(first.size(), 1u);
  claims.claim({"node-a", first}, {kDay, kDay + hours(24)}, now);

  auto kept = claims.apply(seen, now);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_NE(seen[0], &a) << "the claimed node is a copy";
  EXPECT_TRUE(a.gpus[first[0]].busy.empty()) << "the shared copy is untouched";
  auto second = placed_gpus(seen, 1);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(second, first);
}

TEST(InFlightClaims, OnlyOverlappingPeriodsAndNamedGpusAreBusy) {
  NodeCandidate a = node("node-a", 8), b = node("node-b", 8);
  std::vector<const NodeCandidate*> seen{&a, &b};
  InFlightClaims claims;
  auto now = InFlightClaims::Clock::now();
  // Another day on node-a: no overlap with the request's day.
  claims.claim({"node-a", {0, 1, 2, 3, 4, 5, 6, 7}}, {kDay + hours(48), kDay + hours(72)}, now);
  claims.claim({"node-b", {2}}, {kDay, kDay + hours(24)}, now);
  auto kept = claims.apply(seen, now);
  EXPECT_EQ(kept.size(), 2u);
  EXPECT_EQ(seen[1]->gpus[2].busy.size(), 1u);
  EXPECT_TRUE(seen[1]->gpus[3].busy.empty());
  EXPECT_EQ(placed_gpus({seen[0]}, 8).size(), 8u) << "a claim of another day leaves the day free";
}

TEST(InFlightClaims, ReleasedOrExpiredClaimsAreGone) {
  NodeCandidate a = node("node-a", 8);
  InFlightClaims claims(seconds(2));
  auto now = InFlightClaims::Clock::now();
  auto c1 = claims.claim({"node-a", {0}}, {kDay, kDay + hours(24)}, now);
  claims.claim({"node-a", {0}}, {kDay, kDay + hours(24)}, now + seconds(1));
  EXPECT_EQ(claims.size(), 2u);
  claims.release(c1.id);
  EXPECT_EQ(claims.size(), 1u) << "one of two alike claims given up";
  claims.release(c1.id);
  EXPECT_EQ(claims.size(), 1u) << "released twice, the other stays";

  std::vector<const NodeCandidate*> seen{&a};
  EXPECT_EQ(claims.apply(seen, now + seconds(2)).size(), 1u) << "the second lasts to now + 3 s";
  seen = {&a};
  EXPECT_TRUE(claims.apply(seen, now + seconds(3)).empty());
  EXPECT_EQ(seen[0], &a) << "nothing claimed: the candidates stay the shared ones";
  EXPECT_EQ(claims.size(), 0u);
}

}  // namespace in_flight_claims_test
}  // namespace gpurent::scheduler
