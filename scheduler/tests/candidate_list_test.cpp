// CandidateList without a database: a list brought up to date equals the plain merge it
// replaces, for random changes at every size; it shares every chunk the changes do not touch.
#include "scheduler/candidate_list.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>

namespace gpurent::scheduler {
namespace candidate_list_test {

using Node = CandidateList::Node;

Node node(int n, int version = 0) {
  char id[16];
  std::snprintf(id, sizeof id, "nod_%06d", n);
  auto c = std::make_shared<NodeCandidate>();
  c->node_id = id;
  c->site_id = "v" + std::to_string(version);  // tells a reloaded node from the one it replaced
  return c;
}

std::vector<Node> nodes(int from, int to) {
  std::vector<Node> out;
  for (int n = from; n < to; ++n) out.push_back(node(n));
  return out;
}

std::vector<std::string> ids_and_versions(const CandidateList& list) {
  std::vector<std::string> out;
  for (const auto& c : list) out.push_back(c->node_id + "/" + c->site_id);
  return out;
}

// What the copy did before chunks: drop the changed, merge the reloaded, in id order.
std::vector<std::string> plain_merge(const std::vector<Node>& base,
                                     const std::vector<std::string>& changed,
                                     const std::vector<Node>& reloaded) {
  std::set<std::string> gone(changed.begin(), changed.end());
  std::vector<Node> out;
  for (const auto& c : base) {
    if (!gone.contains(c->node_id)) out.push_back(c);
  }
  out.insert(out.end(), reloaded.begin(), reloaded.end());
  std::stable_sort(out.begin(), out.end(),
                   [](const Node& a, const Node& b) { return a->node_id < b->node_id; });
  std::vector<std::string> text;
  for (const auto& c : out) text.push_back(c->node_id + "/" + c->site_id);
  return text;
}

TEST(CandidateList, IteratesAndIndexesInIdOrderAtEverySize) {
  for (int size : {0, 1, 127, 128, 255, 256, 257, 1000, 10'000}) {
    SCOPED_TRACE(size);
    CandidateList list(nodes(0, size));
    ASSERT_EQ(list.size(), static_cast<std::size_t>(size));
    std::size_t i = 0;
    for (const auto& c : list) {
      ASSERT_EQ(c->node_id, node(static_cast<int>(i))->node_id);
      ASSERT_EQ(list[i]->node_id, c->node_id);
      ++i;
    }
    EXPECT_EQ(i, list.size());
    // Chunks between one and two of kChunk, so a reload rebuilds little.
    if (size >= 2 * static_cast<int>(CandidateList::kChunk)) {
      EXPECT_GE(list.chunks(), static_cast<std::size_t>(size) / (2 * CandidateList::kChunk));
      EXPECT_LE(list.chunks(), static_cast<std::size_t>(size) / CandidateList::kChunk);
    }
  }
}

TEST(CandidateList, AReloadEqualsThePlainMergeForRandomChanges) {
  std::mt19937 rng(20261204);
  for (int round = 0; round < 300; ++round) {
    const int universe = std::uniform_int_distribution<int>(0, 2'000)(rng);
    std::vector<Node> base;
    for (int n = 0; n < universe; ++n) {
      if (rng() % 3 != 0) base.push_back(node(n));
    }
    CandidateList list(base);
    // Some ids changed: each still a candidate (reloaded, new version) or not any more; some
    // of them new to the list, and some beyond either end of it.
    std::set<int> picked;
    const int changes = std::uniform_int_distribution<int>(0, 40)(rng);
    for (int k = 0; k < changes; ++k) {
      picked.insert(std::uniform_int_distribution<int>(-5, universe + 5)(rng) + 5);
    }
    std::vector<std::string> changed;
    std::vector<Node> reloaded;
    for (int n : picked) {
      changed.push_back(node(n)->node_id);
      if (rng() % 2) reloaded.push_back(node(n, round + 1));
    }
    std::size_t rebuilt = 0;
    CandidateList after = list.replaced(changed, reloaded, &rebuilt);
    ASSERT_EQ(ids_and_versions(after), plain_merge(base, changed, reloaded)) << "round " << round;
    ASSERT_EQ(after.size(), plain_merge(base, changed, reloaded).size());
    EXPECT_LE(rebuilt, after.chunks());
    // The list it came from is as it was: copies being read are never changed.
    ASSERT_EQ(ids_and_versions(list), plain_merge(base, {}, {}));
  }
}

TEST(CandidateList, ABookingsReloadAtTenThousandNodesRebuildsOneChunk) {
  CandidateList list(nodes(0, 10'000));
  std::size_t rebuilt = 0;
  CandidateList after = list.replaced({node(4'321)->node_id}, {node(4'321, 1)}, &rebuilt);
  EXPECT_EQ(rebuilt, 1u);
  EXPECT_EQ(after.chunks(), list.chunks());
  EXPECT_EQ(after[4'321]->site_id, "v1");
  EXPECT_EQ(list[4'321]->site_id, "v0");
  // A node gone and none reloaded, then every node of a chunk gone: chunks shrink or go.
  CandidateList fewer = after.replaced({node(0)->node_id}, {}, &rebuilt);
  EXPECT_EQ(fewer.size(), 9'999u);
  EXPECT_EQ(rebuilt, 1u);
  std::vector<std::string> first_chunk;
  for (int n = 1; n < 400; ++n) first_chunk.push_back(node(n)->node_id);
  CandidateList emptied = fewer.replaced(first_chunk, {});
  EXPECT_EQ(emptied.size(), 9'600u);
  EXPECT_EQ(emptied[0]->node_id, node(400)->node_id);
  // Many new nodes in one place split into chunks of the usual size.
  std::vector<Node> added;
  std::vector<std::string> added_ids;
  for (int n = 10'000; n < 12'000; ++n) {
    added.push_back(node(n));
    added_ids.push_back(node(n)->node_id);
  }
  CandidateList grown = list.replaced(added_ids, added, &rebuilt);
  EXPECT_EQ(grown.size(), 12'000u);
  EXPECT_LE(grown.chunks(), list.chunks() + 2'000 / CandidateList::kChunk + 1);
}

}  // namespace candidate_list_test
}  // namespace gpurent::scheduler
