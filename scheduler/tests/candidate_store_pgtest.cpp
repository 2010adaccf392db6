// CandidateStore against a real PostgreSQL: which nodes are candidates, their GPUs' health and
// busy periods, link matrices from gpu_links or the declared shape, recent failures, and one
// statement per load whatever the fleet's size.
#include "scheduler/candidate_store.h"

#include "core/sql.h"
#include "scheduler/tests/scheduler_fixture.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace gpurent::scheduler {
namespace candidate_store_pgtest {

class CandidateStoreTest : public SchedulerTest {
 protected:
  std::vector<NodeCandidate> load(const std::string& model, const Period& window) {
    return read([&](Tx& tx) { return candidates_.load(tx, model, window); });
  }

  const NodeCandidate* find(const std::vector<NodeCandidate>& cs, const std::string& node_id) {
    for (const auto& c : cs) {
      if (c.node_id == node_id) return &c;
    }
    ADD_FAILURE() << node_id << " is not a candidate";
    return nullptr;
  }

  std::vector<std::string> ids(const std::vector<NodeCandidate>& cs) {
    std::vector<std::string> out;
    for (const auto& c : cs) out.push_back(c.node_id);
    return out;
  }

  static std::vector<Period> sorted(std::vector<Period> ps) {
    std::sort(ps.begin(), ps.end(),
              [](const Period& a, const Period& b) { return a.start < b.start; });
    return ps;
  }

  // Moves a rental to a final state at a given time, as the lifecycle would have.
  void finish(const std::string& rental_id, const std::string& state, Timestamp when) {
    exec("UPDATE rentals SET state = '" + state + "', state_changed_at = '" + sql_timestamp(when) +
         "' WHERE id = '" + rental_id + "'");
  }
};

TEST_F(CandidateStoreTest, OnlyAvailableHealthyNodesOfTheModelAreCandidates) {
  std::string ok1 = node("h-1");
  std::string ok2 = node("h-2");
  std::string enrolling = node("h-3");
  std::string draining = node("h-4");
  std::string warning = node("h-5");
  std::string unknown = node("h-6");
  std::string a100 = node("a-1", "A100-SXM4-80GB");
  exec("UPDATE nodes SET state = 'enrolling' WHERE id = '" + enrolling + "'");
  exec("UPDATE nodes SET state = 'draining' WHERE id = '" + draining + "'");
  exec("UPDATE nodes SET health = 'warning' WHERE id = '" + warning + "'");
  exec("UPDATE nodes SET health = 'unknown' WHERE id = '" + unknown + "'");

  auto h100 = load("H100-SXM5-80GB", hours(0, 24));
  std::vector<std::string> expected{ok1, ok2};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(ids(h100), expected) << "by node id";
  for (const auto& c : h100) {
    EXPECT_EQ(c.gpu_model, "H100-SXM5-80GB");
    ASSERT_EQ(c.gpus.size(), 8u);
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(c.gpus[i].index, i);
      EXPECT_TRUE(c.gpus[i].healthy);
      EXPECT_TRUE(c.gpus[i].busy.empty());
    }
    EXPECT_EQ(c.links.gpus, 8);
    EXPECT_TRUE(c.links.all_nvlink({0, 1, 2, 3, 4, 5, 6, 7}));
    EXPECT_EQ(c.recent_failures, 0);
  }
  EXPECT_EQ(ids(load("A100-SXM4-80GB", hours(0, 24))), std::vector<std::string>{a100});
  EXPECT_TRUE(load("L4-24GB", hours(0, 24)).empty());
  EXPECT_TRUE(load("no-such-model", hours(0, 24)).empty());
}

TEST_F(CandidateStoreTest, GpusCarryTheirHealthAndTheAllocationsInTheWindow) {
  std::string n = node("h-1");
  std::string other = node("h-2");
  exec("UPDATE gpus SET health = 'critical' WHERE node_id = '" + n + "' AND idx = 3");
  exec("UPDATE gpus SET health = 'warning' WHERE node_id = '" + n + "' AND idx = 5");
  exec("UPDATE gpus SET health = 'unknown' WHERE node_id = '" + n + "' AND idx = 6");
  book(a_, n, {0, 1}, hours(0, 24));    // occupies [0, 26)
  book(b_, n, {1}, hours(30, 54));      // occupies [30, 56)
  book(a_, n, {2}, hours(200, 224));    // outside the window
  book(a_, other, {0}, hours(10, 20));  // another node's

  auto cs = load("H100-SXM5-80GB", hours(10, 40));
  const NodeCandidate* c = find(cs, n);
  ASSERT_TRUE(c);
  ASSERT_EQ(c->gpus.size(), 8u);
  EXPECT_EQ(c->gpus[0].busy, std::vector<Period>{hours(0, 26)});
  EXPECT_EQ(sorted(c->gpus[1].busy), (std::vector<Period>{hours(0, 26), hours(30, 56)}));
  EXPECT_TRUE(c->gpus[2].busy.empty());
  EXPECT_TRUE(c->gpus[0].healthy);
  EXPECT_FALSE(c->gpus[3].healthy);
  EXPECT_FALSE(c->gpus[5].healthy);
  EXPECT_TRUE(c->gpus[6].healthy) << "a GPU not yet reported is vouched for by its node";
  const NodeCandidate* o = find(cs, other);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->gpus[0].busy, std::vector<Period>{hours(10, 22)});

  // Half-open: a window between two allocations touches both and overlaps neither.
  auto between = load("H100-SXM5-80GB", hours(26, 30));
  c = find(between, n);
  ASSERT_TRUE(c);
  for (const auto& g : c->gpus) EXPECT_TRUE(g.busy.empty()) << "GPU " << g.index;
}

TEST_F(CandidateStoreTest, LinksComeFromGpuLinksOrTheDeclaredShape) {
  std::string reported = node("h-1");
  std::string nvswitch = node("h-2");
  std::string pairs = node("p-1", "H100-PCIe-80GB", 4, "nvlink-pairs");
  std::string pcie = node("l-1", "L4-24GB", 2);
  // An agent's matrix differs from the declared one: one pair over PCIe, one pair missing.
  exec("UPDATE gpu_links SET kind = 'PIX' WHERE node_id = '" + reported +
       "' AND gpu_a = 0 AND gpu_b = 1");
  exec("DELETE FROM gpu_links WHERE node_id = '" + reported + "' AND gpu_a = 2 AND gpu_b = 3");
  // Nodes whose matrix was never written: derived from the declared interconnect.
  for (const auto& id : {nvswitch, pairs, pcie}) {
    exec("DELETE FROM gpu_links WHERE node_id = '" + id + "'");
  }

  auto h100 = load("H100-SXM5-80GB", hours(0, 24));
  const NodeCandidate* r = find(h100, reported);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->links.links[0][1], "PIX");
  EXPECT_EQ(r->links.links[1][0], "PIX");
  EXPECT_EQ(r->links.links[2][3], "SYS");
  EXPECT_EQ(r->links.links[3][2], "SYS");
  EXPECT_EQ(r->links.links[4][5], "NV18");
  EXPECT_EQ(r->links.links[6][6], "X");
  EXPECT_FALSE(r->links.all_nvlink({0, 1}));
  EXPECT_TRUE(r->links.all_nvlink({4, 5, 6, 7}));

  const NodeCandidate* s = find(h100, nvswitch);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->links, topology::declared_matrix(topology::Interconnect::kNvswitch, 8, "NV18"));

  auto bridged = load("H100-PCIe-80GB", hours(0, 24));
  ASSERT_EQ(bridged.size(), 1u);
  EXPECT_EQ(bridged[0].links,
            topology::declared_matrix(topology::Interconnect::kNvlinkPairs, 4, "NV4"));
  EXPECT_TRUE(bridged[0].links.all_nvlink({2, 3}));
  EXPECT_FALSE(bridged[0].links.all_nvlink({1, 2}));

  auto l4 = load("L4-24GB", hours(0, 24));
  ASSERT_EQ(l4.size(), 1u);
  EXPECT_EQ(l4[0].links, topology::declared_matrix(topology::Interconnect::kPcie, 2, ""));
}

TEST_F(CandidateStoreTest, RecentFailuresAreFailedAndInterruptedRentalsOfTheLast30Days) {
  std::string n = node("h-1");
  std::string other = node("h-2");
  Timestamp start = at(1000);
  auto days_before = [&](int d) { return start - std::chrono::hours(24 * d); };
  finish(book(a_, n, {0}, hours(0, 24)), "failed", days_before(5));
  finish(book(a_, n, {1}, hours(0, 24)), "interrupted", days_before(29));
  finish(book(a_, n, {2}, hours(0, 24)), "failed", days_before(31));                // too long ago
  finish(book(a_, n, {3}, hours(0, 24)), "ended", days_before(1));                  // not a failure
  finish(book(a_, n, {4}, hours(0, 24)), "cancelled", days_before(1));              // not a failure
  finish(book(a_, n, {5}, hours(0, 24)), "failed", start + std::chrono::hours(1));  // after
  finish(book(a_, other, {0}, hours(0, 24)), "failed", days_before(2));

  auto cs = load("H100-SXM5-80GB", {start, start + std::chrono::hours(24)});
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_EQ(find(cs, n)->recent_failures, 2);
  EXPECT_EQ(find(cs, other)->recent_failures, 1);
}

// The booking path's database cost does not grow with the fleet: one statement (and its
// PREPARE, once per connection) loads every candidate.
TEST_F(CandidateStoreTest, OneStatementLoadsTheWholeFleet) {
  PgPool pool({.url = db_.url(), .size = 1});
  auto load_counting = [&](const Period& window) {
    auto before = pool.stats().round_trips_total;
    auto cs = pool.read("candidates",
                        [&](Tx& tx) { return candidates_.load(tx, "H100-SXM5-80GB", window); });
    return std::make_pair(cs.size(), pool.stats().round_trips_total - before);
  };
  for (int i = 0; i < 3; ++i) {
    std::string n = node("h-" + std::to_string(i));
    book(a_, n, {0, 1}, hours(0, 24));
  }
  EXPECT_EQ(load_counting(hours(0, 24)), std::make_pair(std::size_t{3}, std::uint64_t{2}))
      << "PREPARE and the statement";
  EXPECT_EQ(load_counting(hours(0, 24)), std::make_pair(std::size_t{3}, std::uint64_t{1}));
  for (int i = 3; i < 12; ++i) {
    std::string n = node("h-" + std::to_string(i));
    book(a_, n, {i % 8}, hours(0, 24));
    book(b_, n, {(i + 1) % 8}, hours(10, 30));
  }
  EXPECT_EQ(load_counting(hours(0, 48)), std::make_pair(std::size_t{12}, std::uint64_t{1}));
  // Inside a booking's transaction: BEGIN, the statement, COMMIT.
  auto before = pool.stats().round_trips_total;
  pool.transact(
      "book", [&](Tx& tx) { return candidates_.load(tx, "H100-SXM5-80GB", hours(0, 48)).size(); });
  EXPECT_EQ(pool.stats().round_trips_total - before, 3u);
}

}  // namespace candidate_store_pgtest
}  // namespace gpurent::scheduler
