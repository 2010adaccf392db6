// Tests placement: which GPU sets each interconnect allows and prefers (declared shapes, a
// hand-built DGX-1 mesh and real `nvidia-smi topo -m` captures), and the order of the nodes
// (tightness, calendar adjacency, failures, id).
#include "scheduler/placement.h"
#include "tests/support/paths.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <compare>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace gpurent::scheduler {
namespace placement_test {

using topology::Interconnect;
using topology::Matrix;
using Set = std::optional<std::vector<int>>;

const Set kRefused = std::nullopt;
constexpr LinkNeed kNvlink = LinkNeed::kNvlink;
constexpr LinkNeed kAny = LinkNeed::kAny;
const std::string kModel = "H100-SXM5-80GB";

// ---- Matrices ----

Matrix nvswitch(int gpus = 8, const std::string& kind = "NV18") {
  return topology::declared_matrix(Interconnect::kNvswitch, gpus, kind);
}

// PCIe cards bridged two by two: (0,1), (2,3), ... are NV4, the rest NODE or SYS.
Matrix bridged_pairs(int gpus = 8) {
  return topology::declared_matrix(Interconnect::kNvlinkPairs, gpus, "NV4");
}

Matrix from_cells(const std::vector<std::vector<std::string>>& cells) {
  return {static_cast<int>(cells.size()), cells};
}

// A DGX-1 (V100) hybrid cube mesh, as its `nvidia-smi topo -m` shows it: two quads, GPUs 0-3
// on one CPU and 4-7 on the other; inside a quad every pair is NVLinked (NV1 or NV2), and each
// GPU has one more NVLink to its twin in the other quad (0-4, 1-5, 2-6, 3-7); the other
// cross-quad pairs are SYS. Every GPU has four NVLink neighbours (six links), so the only
// fully NVLinked 4-GPU sets are the two quads.
Matrix hybrid_cube_mesh() {
  return from_cells({
      {"X", "NV1", "NV1", "NV2", "NV2", "SYS", "SYS", "SYS"},
      {"NV1", "X", "NV2", "NV1", "SYS", "NV2", "SYS", "SYS"},
      {"NV1", "NV2", "X", "NV2", "SYS", "SYS", "NV1", "SYS"},
      {"NV2", "NV1", "NV2", "X", "SYS", "SYS", "SYS", "NV1"},
      {"NV2", "SYS", "SYS", "SYS", "X", "NV1", "NV1", "NV2"},
      {"SYS", "NV2", "SYS", "SYS", "NV1", "X", "NV2", "NV1"},
      {"SYS", "SYS", "NV1", "SYS", "NV1", "NV2", "X", "NV2"},
      {"SYS", "SYS", "SYS", "NV1", "NV2", "NV1", "NV2", "X"},
  });
}

// Captured output (agent_proto/tests/fixtures/topo/README.md says where each comes from).
Matrix fixture(const std::string& name) {
  auto path = std::filesystem::path(gpurent::testing::source_dir()) /
              "agent_proto/tests/fixtures/topo" / name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "missing fixture " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return topology::parse_topo_m(text.str());
}

const char* const kH100Nv6 = "nccl-1617_4xH100_NV6.topo-m.txt";
const char* const kA10gPhb = "nccl-1298_aws-g5.48xlarge_8xA10G_PHB.topo-m.txt";
const char* const kPxbPixSys = "nccl-667_4gpu_PXB_PIX_SYS.topo-m.txt";

// "n" + std::to_string(...) draws a false GCC 12 warning at -O3; appending does not.
std::string numbered(std::string prefix, int n) {
  prefix += std::to_string(n);
  return prefix;
}

std::vector<int> range(int from, int to) {
  std::vector<int> out;
  for (int i = from; i < to; ++i) out.push_back(i);
  return out;
}

std::vector<int> without(std::vector<int> gpus, const std::vector<int>& taken) {
  std::erase_if(gpus, [&](int g) { return std::ranges::find(taken, g) != taken.end(); });
  return gpus;
}

// ---- Nodes and periods ----

const Timestamp kDay0 = std::chrono::sys_days{std::chrono::year{2026} / 12 / 1};

Timestamp at(int hour) {
  return kDay0 + std::chrono::hours(hour);
}

Period hours(int from, int to) {
  return {at(from), at(to)};
}

// The period every request below occupies unless it says otherwise: day 1.
const Period kDay1 = hours(24, 48);

NodeCandidate make_node(std::string id, Matrix links, int failures = 0) {
  NodeCandidate node{std::move(id), kModel, std::move(links), {}, failures};
  for (int i = 0; i < node.links.gpus; ++i) node.gpus.push_back({i, true, {}});
  return node;
}

void add_busy(NodeCandidate& node, const std::vector<int>& gpus, Period period) {
  for (int g : gpus) node.gpus[g].busy.push_back(period);
}

PlacementRequest request(int count, LinkNeed need = kNvlink, Period occupies = kDay1) {
  return {kModel, count, need, occupies};
}

std::vector<std::string> node_ids(const std::vector<Placement>& placements) {
  std::vector<std::string> out;
  for (const auto& p : placements) out.push_back(p.node_id);
  return out;
}

// ---- Table of GPU-set cases ----

struct SetCase {
  std::string label;
  std::vector<int> free;
  int count;
  LinkNeed need;
  std::vector<int> expected;  // kNoSet: refused
};

const std::vector<int> kNoSet{};

void expect_cases(const Matrix& links, const std::vector<SetCase>& cases) {
  for (const auto& c : cases) {
    Set expected = c.expected.empty() ? kRefused : Set(c.expected);
    EXPECT_EQ(choose_gpu_set(links, c.free, c.count, c.need), expected) << c.label;
  }
}

// ---- Bridged pairs ----

TEST(ChooseGpuSet, BridgedPairsGiveNvlinkRequestsOnlyAWhollyFreePair) {
  auto links = bridged_pairs();
  expect_cases(links,
               {
                   {"all free: the first pair", range(0, 8), 2, kNvlink, {0, 1}},
                   {"GPUs 0 and 3 busy: an intact pair", {1, 2, 4, 5, 6, 7}, 2, kNvlink, {4, 5}},
                   {"only 2-3 intact", {0, 2, 3, 5, 6}, 2, kNvlink, {2, 3}},
                   {"every pair broken", {0, 2, 4, 6}, 2, kNvlink, kNoSet},
                   {"every pair broken, odd GPUs", {1, 2, 5, 7}, 2, kNvlink, kNoSet},
                   {"no four GPUs are pairwise NVLinked", range(0, 8), 4, kNvlink, kNoSet},
                   {"nor eight", range(0, 8), 8, kNvlink, kNoSet},
               });
}

TEST(ChooseGpuSet, BridgedPairsGiveOneGpuFromABrokenPairFirst) {
  auto links = bridged_pairs();
  expect_cases(links,
               {
                   {"0 alone keeps 2-3 intact", {0, 2, 3}, 1, kNvlink, {0}},
                   {"3 alone keeps 0-1 intact (not the lowest index)", {0, 1, 3}, 1, kNvlink, {3}},
                   {"GPU 0 busy: its partner goes first", range(1, 8), 1, kNvlink, {1}},
                   {"all intact: every choice breaks a pair, lowest", range(0, 8), 1, kNvlink, {0}},
                   {"any interconnect, same rule", {4, 5, 7}, 1, kAny, {7}},
               });
}

TEST(ChooseGpuSet, BridgedPairsWithAnyInterconnectKeepPairsAndSockets) {
  auto links = bridged_pairs();
  expect_cases(
      links,
      {
          {"two: the bridged pair beats PCIe", {0, 2, 3}, 2, kAny, {2, 3}},
          {"three: a pair plus a GPU of its socket", range(0, 8), 3, kAny, {0, 1, 2}},
          {"four: two pairs on one socket (NODE over SYS)", range(0, 8), 4, kAny, {0, 1, 2, 3}},
          {"four: two intact pairs even across sockets", {0, 1, 3, 4, 5, 7}, 4, kAny, {0, 1, 4, 5}},
          {"four: the socket whose pairs are intact", {0, 2, 3, 4, 5, 6, 7}, 4, kAny, {4, 5, 6, 7}},
          {"eight: the whole node", range(0, 8), 8, kAny, range(0, 8)},
      });
}

// ---- NVSwitch ----

TEST(ChooseGpuSet, NvswitchMakesAnySubsetNvlinkConnected) {
  auto links = nvswitch();
  for (std::uint32_t mask = 0; mask < 256; ++mask) {
    std::vector<int> free;
    for (int i = 0; i < 8; ++i) {
      if (mask & (1u << i)) free.push_back(i);
    }
    for (int count = 1; count <= 8; ++count) {
      auto set = choose_gpu_set(links, free, count, kNvlink);
      if (count > static_cast<int>(free.size())) {
        EXPECT_EQ(set, kRefused) << "mask " << mask << " count " << count;
        continue;
      }
      // Every pair is NV18, so every set ties: the lowest free GPUs.
      std::vector<int> lowest(free.begin(), free.begin() + count);
      EXPECT_EQ(set, lowest) << "mask " << mask << " count " << count;
    }
  }
}

// The GPU pairs of an HGX/DGX H100 board as `topo -m` prints them: every one NV18 through the
// NVSwitches (the repository holds no 8-GPU capture; the declared matrix is that table).
TEST(ChooseGpuSet, EightH100NvswitchTakesAnyFreeGpus) {
  auto links = nvswitch(8, "NV18");
  expect_cases(
      links, {
                 {"whole node", range(0, 8), 8, kNvlink, range(0, 8)},
                 {"four around a busy GPU 3", without(range(0, 8), {3}), 4, kNvlink, {0, 1, 2, 4}},
                 {"scattered free GPUs", {1, 3, 6, 7}, 4, kNvlink, {1, 3, 6, 7}},
                 {"more than are free", {1, 3, 6, 7}, 5, kNvlink, kNoSet},
             });
}

// ---- Real captures ----

TEST(ChooseGpuSet, RealFourH100Nv6Capture) {
  auto links = fixture(kH100Nv6);
  ASSERT_EQ(links.gpus, 4);
  expect_cases(links, {
                          {"whole node", range(0, 4), 4, kNvlink, range(0, 4)},
                          {"three around a busy GPU 1", {0, 2, 3}, 3, kNvlink, {0, 2, 3}},
                          {"two", {1, 2, 3}, 2, kNvlink, {1, 2}},
                          {"four with one busy", {0, 2, 3}, 4, kNvlink, kNoSet},
                          {"more than the node", range(0, 4), 5, kNvlink, kNoSet},
                      });
}

TEST(ChooseGpuSet, RealA10gPcieCaptureServesAnyInterconnectOnly) {
  auto links = fixture(kA10gPhb);
  ASSERT_EQ(links.gpus, 8);
  expect_cases(links, {
                          {"two need NVLink: none here", range(0, 8), 2, kNvlink, kNoSet},
                          {"one needs no link", range(0, 8), 1, kNvlink, {0}},
                          {"two, any: all PHB, lowest", range(0, 8), 2, kAny, {0, 1}},
                          {"four, any, around busy GPUs", {1, 2, 4, 6, 7}, 4, kAny, {1, 2, 4, 6}},
                          {"eight, any", range(0, 8), 8, kAny, range(0, 8)},
                      });
}

TEST(ChooseGpuSet, RealPcieSwitchTreePrefersShorterPaths) {
  auto links = fixture(kPxbPixSys);  // 0-1 PXB, 2-3 PIX, across SYS
  ASSERT_EQ(links.gpus, 4);
  expect_cases(links, {
                          {"two: PIX beats PXB", range(0, 4), 2, kAny, {2, 3}},
                          {"two: PXB beats SYS", {0, 1, 2}, 2, kAny, {0, 1}},
                          {"three: the PIX pair plus one", range(0, 4), 3, kAny, {0, 2, 3}},
                          {"one: leaves the PIX pair whole", range(0, 4), 1, kAny, {0}},
                          {"one: from the broken PIX pair", {0, 1, 3}, 1, kAny, {3}},
                          {"NVLink needed: refused", range(0, 4), 2, kNvlink, kNoSet},
                      });
}

// ---- NVLink meshes ----

TEST(ChooseGpuSet, HybridCubeMeshGivesFourGpusOnlyAsAFullyConnectedQuad) {
  auto links = hybrid_cube_mesh();
  // The shape the test relies on: of the 70 4-GPU sets, exactly the two quads are cliques.
  int cliques = 0;
  for (std::uint32_t mask = 0; mask < 256; ++mask) {
    if (std::popcount(mask) != 4) continue;
    std::vector<int> set;
    for (int i = 0; i < 8; ++i) {
      if (mask & (1u << i)) set.push_back(i);
    }
    cliques += links.all_nvlink(set) ? 1 : 0;
  }
  ASSERT_EQ(cliques, 2);

  auto all_free = choose_gpu_set(links, range(0, 8), 4, kNvlink);
  ASSERT_TRUE(all_free);
  EXPECT_TRUE(links.all_nvlink(*all_free));
  EXPECT_EQ(all_free, (std::vector<int>{0, 1, 2, 3}));

  expect_cases(
      links,
      {
          {"GPU 2 busy: the other quad", without(range(0, 8), {2}), 4, kNvlink, {4, 5, 6, 7}},
          {"one GPU busy in each quad: six free, no quad", {0, 1, 3, 4, 6, 7}, 4, kNvlink, kNoSet},
          // Triangles 0-1-3 (NV1+NV2+NV1) and 4-6-7 (NV1+NV2+NV2) remain.
          {"three: the better-linked triangle", {0, 1, 3, 4, 6, 7}, 3, kNvlink, {4, 6, 7}},
      });
}

TEST(ChooseGpuSet, HybridCubeMeshGivesTwoGpusADoubleLink) {
  auto links = hybrid_cube_mesh();
  auto set = choose_gpu_set(links, range(0, 8), 2, kNvlink);
  ASSERT_TRUE(set);
  EXPECT_EQ(topology::nvlink_count(links.links[(*set)[0]][(*set)[1]]), 2);
  EXPECT_EQ(set, (std::vector<int>{0, 3}));
  // Without GPU 3 the NV2 pairs left are 0-4 and 1-2; they tie, the lower one wins.
  EXPECT_EQ(choose_gpu_set(links, {0, 1, 2, 4}, 2, kNvlink), (std::vector<int>{0, 4}));
}

TEST(ChooseGpuSet, MoreBondedLinksWin) {
  // Every pair NVLinked, with different bond widths.
  auto links = from_cells({
      {"X", "NV2", "NV4", "NV4"},
      {"NV2", "X", "NV4", "NV12"},
      {"NV4", "NV4", "X", "NV18"},
      {"NV4", "NV12", "NV18", "X"},
  });
  expect_cases(links, {
                          {"NV18 first", range(0, 4), 2, kNvlink, {2, 3}},
                          {"then NV12", {0, 1, 3}, 2, kNvlink, {1, 3}},
                          {"then NV4", {0, 1, 2}, 2, kNvlink, {0, 2}},
                          {"NV2 is still NVLink", {0, 1}, 2, kNvlink, {0, 1}},
                          {"three: the widest sum", range(0, 4), 3, kNvlink, {1, 2, 3}},
                      });
}

// ---- Edges ----

TEST(ChooseGpuSet, RefusesZeroCountsAndMoreGpusThanFree) {
  auto links = nvswitch();
  EXPECT_EQ(choose_gpu_set(links, range(0, 8), 0, kNvlink), kRefused);
  EXPECT_EQ(choose_gpu_set(links, range(0, 8), -1, kAny), kRefused);
  EXPECT_EQ(choose_gpu_set(links, range(0, 8), 9, kAny), kRefused);
  EXPECT_EQ(choose_gpu_set(links, {}, 1, kAny), kRefused);
}

TEST(ChooseGpuSet, IgnoresIndicesOutsideTheMatrixAndRepeats) {
  auto links = nvswitch(4);
  EXPECT_EQ(choose_gpu_set(links, {7, -1, 2, 2, 3}, 2, kNvlink), (std::vector<int>{2, 3}));
  EXPECT_EQ(choose_gpu_set(links, {7, 2, 2}, 2, kNvlink), kRefused);
}

TEST(ChooseGpuSet, RefusesARaggedMatrix) {
  Matrix ragged{3, {{"X", "NV4", "NV4"}, {"NV4", "X"}, {"NV4", "NV4", "X"}}};
  EXPECT_EQ(choose_gpu_set(ragged, range(0, 3), 1, kAny), kRefused);
  Matrix short_of_rows{3, {{"X", "NV4", "NV4"}}};
  EXPECT_EQ(choose_gpu_set(short_of_rows, range(0, 3), 1, kAny), kRefused);
}

// ---- The search against its definition ----

// The rule written out directly: a set's worth is (sum of NVLink bond counts, sum of PCIe
// closeness PIX 5 .. SYS 1) over its pairs, compared in that order; then the same worth of the
// free GPUs it leaves; then the lowest indices.
struct Worth {
  long nvlinks = 0;
  long pcie = 0;
  auto operator<=>(const Worth&) const = default;
};

Worth worth(const Matrix& m, const std::vector<int>& gpus) {
  Worth w;
  for (std::size_t a = 0; a < gpus.size(); ++a) {
    for (std::size_t b = a + 1; b < gpus.size(); ++b) {
      const auto& kind = m.links[gpus[a]][gpus[b]];
      if (int n = topology::nvlink_count(kind); n > 0) {
        w.nvlinks += n;
      } else {
        w.pcie += kind == "PIX"    ? 5
                  : kind == "PXB"  ? 4
                  : kind == "PHB"  ? 3
                  : kind == "NODE" ? 2
                                   : 1;
      }
    }
  }
  return w;
}

Set brute_force(const Matrix& m, const std::vector<int>& free, int count, LinkNeed need) {
  Set best;
  std::pair<Worth, Worth> best_worth;
  const auto n = static_cast<int>(free.size());
  for (std::uint32_t mask = 0; mask < (1u << n); ++mask) {  // ascending masks: not lex order
    if (std::popcount(mask) != count) continue;
    std::vector<int> set, rest;
    for (int i = 0; i < n; ++i) ((mask & (1u << i)) ? set : rest).push_back(free[i]);
    if (need == kNvlink && !m.all_nvlink(set)) continue;
    std::pair<Worth, Worth> w{worth(m, set), worth(m, rest)};
    if (!best || w > best_worth || (w == best_worth && set < *best)) {
      best = set;
      best_worth = w;
    }
  }
  return best;
}

TEST(ChooseGpuSet, MatchesTheRuleOnRandomNodesUpToTenGpus) {
  const std::vector<std::string> kinds{"NV1", "NV2", "NV4",  "NV12", "NV18", "PIX",
                                       "PXB", "PHB", "NODE", "SYS",  "SOC"};
  std::mt19937 rng(20261201);
  for (int round = 0; round < 400; ++round) {
    const int gpus = 2 + static_cast<int>(rng() % 9);
    // Mostly NVLink, so that NVLink-only requests often have something to find.
    const int nvlink_share = static_cast<int>(rng() % 100);
    Matrix m{gpus, std::vector(gpus, std::vector<std::string>(gpus, "X"))};
    for (int i = 0; i < gpus; ++i) {
      for (int j = i + 1; j < gpus; ++j) {
        bool nv = static_cast<int>(rng() % 100) < nvlink_share;
        const auto& kind = nv ? kinds[rng() % 5] : kinds[5 + rng() % 6];
        m.links[i][j] = m.links[j][i] = kind;
      }
    }
    std::vector<int> free;
    for (int i = 0; i < gpus; ++i) {
      if (rng() % 4 != 0) free.push_back(i);
    }
    for (int count = 1; count <= static_cast<int>(free.size()); ++count) {
      for (LinkNeed need : {kNvlink, kAny}) {
        EXPECT_EQ(choose_gpu_set(m, free, count, need), brute_force(m, free, count, need))
            << "round " << round << " count " << count << " nvlink " << (need == kNvlink) << "\n"
            << topology::to_json(m).dump();
      }
    }
  }
}

// ---- Large nodes (beyond exhaustive search) ----

TEST(ChooseGpuSet, LargeNvswitchNodeTakesTheLowestFreeGpus) {
  auto links = nvswitch(64);
  EXPECT_EQ(choose_gpu_set(links, range(0, 64), 32, kNvlink), range(0, 32));
  EXPECT_EQ(choose_gpu_set(links, range(0, 64), 64, kNvlink), range(0, 64));
  EXPECT_EQ(choose_gpu_set(links, without(range(0, 64), {0, 5}), 4, kNvlink),
            (std::vector<int>{1, 2, 3, 4}));
}

TEST(ChooseGpuSet, LargeBridgedNodeStillFindsIntactPairs) {
  auto links = bridged_pairs(64);
  // NVLink: sparse, so still exhaustive.
  EXPECT_EQ(choose_gpu_set(links, without(range(0, 64), {0, 3}), 2, kNvlink),
            (std::vector<int>{4, 5}));
  EXPECT_EQ(choose_gpu_set(links, without(range(0, 64), {0, 3}), 1, kNvlink),
            (std::vector<int>{1}));
  // Any interconnect, 8 of 62: C(62, 8) sets, so grown greedily; four intact pairs of one
  // socket are still found.
  EXPECT_EQ(choose_gpu_set(links, without(range(0, 64), {1, 3}), 8, kAny), range(4, 12));
}

// Four 16-GPU NVSwitch islands, SYS between them; inside each island the pairs of even GPUs
// are NV12 and the rest NV18, so the matrix is neither uniform nor sparse.
Matrix islands() {
  // Cells copy these strings: assigning literals inside the loops draws a false GCC 12
  // warning at -O3 (as in agent_proto/topology.cpp).
  const std::string self = "X", even = "NV12", other = "NV18", across = "SYS";
  Matrix m{64, std::vector(64, std::vector<std::string>(64, across))};
  for (int i = 0; i < 64; ++i) {
    for (int j = 0; j < 64; ++j) {
      if (i == j) {
        m.links[i][j] = self;
      } else if (i / 16 == j / 16) {
        m.links[i][j] = (i % 2 == 0 && j % 2 == 0) ? even : other;
      }
    }
  }
  return m;
}

TEST(ChooseGpuSet, LargeIslandNodeKeepsNvlinkSetsInsideOneIsland) {
  auto links = islands();
  auto whole = choose_gpu_set(links, without(range(0, 64), {0}), 16, kNvlink);
  EXPECT_EQ(whole, range(16, 32));  // island 0 has only 15 free

  for (int count : {2, 5, 8, 12}) {
    auto set = choose_gpu_set(links, without(range(0, 64), {1, 17, 40}), count, kNvlink);
    ASSERT_TRUE(set) << count;
    EXPECT_EQ(static_cast<int>(set->size()), count);
    EXPECT_TRUE(links.all_nvlink(*set)) << count;
    EXPECT_TRUE(std::ranges::is_sorted(*set));
    for (int g : *set) EXPECT_TRUE(g != 1 && g != 17 && g != 40) << g;
  }
  EXPECT_EQ(choose_gpu_set(links, range(0, 64), 17, kNvlink), kRefused);
}

// ---- place(): fit and order ----

TEST(Place, WholeNodeRequestsAreNotStarvedByOneGpuRequests) {
  std::vector<NodeCandidate> nodes{make_node("a-empty", nvswitch()),
                                   make_node("b-partly-used", nvswitch())};
  add_busy(nodes[1], range(0, 5), hours(0, 100));

  // Three single-GPU rentals in a row, each booked where place() puts it first.
  for (int i = 0; i < 3; ++i) {
    auto choices = place(request(1), nodes);
    ASSERT_FALSE(choices.empty());
    EXPECT_EQ(choices[0].node_id, "b-partly-used") << "rental " << i;
    ASSERT_EQ(choices[0].gpu_indices.size(), 1u);
    add_busy(nodes[1], choices[0].gpu_indices, kDay1);
  }
  auto whole = place(request(8), nodes);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].node_id, "a-empty");
  EXPECT_EQ(whole[0].gpu_indices, range(0, 8));
}

TEST(Place, BusyPeriodsAreHalfOpen) {
  auto node = make_node("n", nvswitch());
  add_busy(node, {0}, hours(0, 24));   // ends as the rental starts: touching
  add_busy(node, {1}, hours(48, 72));  // starts as the rental ends: touching
  add_busy(node, {2}, hours(0, 25));   // overlaps the first hour
  add_busy(node, {3}, hours(47, 49));  // overlaps the last hour
  add_busy(node, {4}, kDay1);          // the same period
  add_busy(node, {5}, hours(30, 31));  // inside it
  add_busy(node, {6}, hours(0, 100));  // around it
  // One microsecond is an overlap.
  node.gpus[7].busy.push_back({at(0), at(24) + std::chrono::microseconds(1)});

  auto three = place(request(3), {node});
  ASSERT_EQ(three.size(), 0u) << "only GPUs 0 and 1 are free";
  auto two = place(request(2), {node});
  ASSERT_EQ(two.size(), 1u);
  EXPECT_EQ(two[0].gpu_indices, (std::vector<int>{0, 1}));
}

TEST(Place, UnhealthyGpusAreNeverChosen) {
  auto switched = make_node("switched", nvswitch());
  switched.gpus[0].healthy = false;
  auto one = place(request(1), {switched});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].gpu_indices, (std::vector<int>{1}));
  EXPECT_TRUE(place(request(8), {switched}).empty());
  auto seven = place(request(7), {switched});
  ASSERT_EQ(seven.size(), 1u);
  EXPECT_EQ(seven[0].gpu_indices, range(1, 8));

  auto bridged = make_node("bridged", bridged_pairs());
  bridged.gpus[1].healthy = false;
  auto pair = place(request(2), {bridged});
  ASSERT_EQ(pair.size(), 1u);
  EXPECT_EQ(pair[0].gpu_indices, (std::vector<int>{2, 3}));
}

TEST(Place, BridgedPairsNodeIsSkippedWhenNoPairIsWhollyFree) {
  auto broken = make_node("a-broken", bridged_pairs());  // tighter, but no intact pair
  add_busy(broken, {0, 2, 4, 6}, kDay1);
  auto intact = make_node("b-one-pair", bridged_pairs());
  add_busy(intact, {0, 2, 4}, kDay1);
  auto choices = place(request(2), {broken, intact});
  ASSERT_EQ(choices.size(), 1u);
  EXPECT_EQ(choices[0].node_id, "b-one-pair");
  EXPECT_EQ(choices[0].gpu_indices, (std::vector<int>{6, 7}));
  EXPECT_TRUE(place(request(2), {broken}).empty());
  // With any interconnect the broken node fits, and it is the tighter.
  EXPECT_EQ(node_ids(place(request(2, kAny), {broken, intact})),
            (std::vector<std::string>{"a-broken", "b-one-pair"}));
}

TEST(Place, PcieNodeServesAnyInterconnectButNotNvlink) {
  auto node = make_node("g5", fixture(kA10gPhb));
  EXPECT_TRUE(place(request(2), {node}).empty());
  auto any = place(request(2, kAny), {node});
  ASSERT_EQ(any.size(), 1u);
  EXPECT_EQ(any[0].gpu_indices, (std::vector<int>{0, 1}));
  auto one = place(request(1), {node});
  ASSERT_EQ(one.size(), 1u);
}

TEST(Place, OrdersByTightnessThenGapsThenFailuresThenId) {
  auto single = [](std::string id, int failures) {
    return make_node(std::move(id), topology::declared_matrix(Interconnect::kPcie, 1, ""),
                     failures);
  };
  std::vector<NodeCandidate> nodes;
  nodes.push_back(make_node("a-loose", topology::declared_matrix(Interconnect::kPcie, 2, "")));
  nodes.push_back(single("b-one-gap", 0));
  add_busy(nodes.back(), {0}, hours(0, 20));
  nodes.push_back(single("d-touching-failed", 2));
  add_busy(nodes.back(), {0}, hours(48, 60));
  nodes.push_back(single("e-touching-failed", 2));
  add_busy(nodes.back(), {0}, hours(0, 24));
  nodes.push_back(single("f-two-gaps", 0));
  add_busy(nodes.back(), {0}, hours(0, 20));
  add_busy(nodes.back(), {0}, hours(50, 60));
  nodes.push_back(single("z-clean", 0));

  // Failures before id (z before d); gaps before failures (d, e before b); tightness before
  // everything (a last with no gaps and no failures).
  EXPECT_EQ(node_ids(place(request(1), nodes)),
            (std::vector<std::string>{"z-clean", "d-touching-failed", "e-touching-failed",
                                      "b-one-gap", "f-two-gaps", "a-loose"}));
}

// Gaps, one node per case; ids run against the expected gap count (z: none, m: one, a: two),
// so a node counted in the wrong class lands out of place.
TEST(Place, CalendarAdjacencyCountsIdleGapsPerGpuAndSide) {
  auto single = [](std::string id) {
    return make_node(std::move(id), topology::declared_matrix(Interconnect::kPcie, 1, ""));
  };
  std::vector<NodeCandidate> nodes;
  auto add = [&](std::string id, std::vector<Period> busy) {
    nodes.push_back(single(std::move(id)));
    nodes.back().gpus[0].busy = std::move(busy);
  };
  add("z1-nothing-in-the-window", {});
  add("z2-touching-before", {hours(10, 24)});
  add("z3-touching-after", {hours(48, 50)});
  add("z4-touching-both", {hours(48, 50), hours(10, 24)});
  add("z5-nearest-before-touches", {hours(0, 5), hours(10, 24)});
  add("m1-gap-before", {hours(10, 23)});
  add("m2-gap-after", {hours(49, 50)});
  add("m3-touching-before-gap-after", {hours(10, 24), hours(60, 70)});
  add("a1-gaps-both-sides", {hours(60, 70), hours(0, 1)});

  std::vector<std::string> expected{"z1-nothing-in-the-window",
                                    "z2-touching-before",
                                    "z3-touching-after",
                                    "z4-touching-both",
                                    "z5-nearest-before-touches",
                                    "m1-gap-before",
                                    "m2-gap-after",
                                    "m3-touching-before-gap-after",
                                    "a1-gaps-both-sides"};
  std::ranges::reverse(nodes);
  EXPECT_EQ(node_ids(place(request(1), nodes, {.max_choices = 20})), expected);
}

TEST(Place, CalendarAdjacencySumsOverTheRentalsGpus) {
  Matrix pair = from_cells({{"X", "NV4"}, {"NV4", "X"}});
  auto both_touch = make_node("b-both-touch", pair);
  add_busy(both_touch, {0, 1}, hours(0, 24));
  auto one_touches = make_node("a-one-touches", pair);
  add_busy(one_touches, {0}, hours(0, 24));
  add_busy(one_touches, {1}, hours(0, 12));
  EXPECT_EQ(node_ids(place(request(2), {one_touches, both_touch})),
            (std::vector<std::string>{"b-both-touch", "a-one-touches"}));
}

TEST(Place, LooserNodesFillTheRemainingChoicesInOrder) {
  std::vector<NodeCandidate> nodes;
  auto add = [&](std::string id, int busy_gpus) {
    nodes.push_back(make_node(std::move(id), nvswitch()));
    add_busy(nodes.back(), range(0, busy_gpus), kDay1);
  };
  add("spare5", 2);
  add("spare1-b", 6);
  add("spare0", 7);
  add("spare1-a", 6);
  add("spare7", 0);
  auto two = place(request(1), nodes, {.max_choices = 2});
  EXPECT_EQ(node_ids(two), (std::vector<std::string>{"spare0", "spare1-a"}));
  auto all = place(request(1), nodes, {.max_choices = 10});
  EXPECT_EQ(node_ids(all),
            (std::vector<std::string>{"spare0", "spare1-a", "spare1-b", "spare5", "spare7"}));
  EXPECT_EQ(all[0].gpu_indices, (std::vector<int>{7}));
}

TEST(Place, OrderDoesNotDependOnCandidateOrder) {
  std::mt19937 rng(7);
  std::vector<NodeCandidate> nodes;
  for (int i = 0; i < 40; ++i) {
    Matrix links = i % 3 == 0   ? nvswitch()
                   : i % 3 == 1 ? bridged_pairs()
                                : topology::declared_matrix(Interconnect::kPcie, 4, "");
    nodes.push_back(make_node(numbered("node-", i), links, static_cast<int>(rng() % 3)));
    for (auto& gpu : nodes.back().gpus) {
      int from = static_cast<int>(rng() % 72);
      if (rng() % 2 == 0) gpu.busy.push_back(hours(from, from + 1 + static_cast<int>(rng() % 24)));
    }
  }
  for (int count : {1, 2, 4}) {
    for (LinkNeed need : {kNvlink, kAny}) {
      auto expected = place(request(count, need), nodes, {.max_choices = 40});
      ASSERT_FALSE(expected.empty());
      for (int shuffle = 0; shuffle < 10; ++shuffle) {
        auto shuffled = nodes;
        std::ranges::shuffle(shuffled, rng);
        auto got = place(request(count, need), shuffled, {.max_choices = 40});
        ASSERT_EQ(got.size(), expected.size());
        for (std::size_t i = 0; i < got.size(); ++i) {
          EXPECT_EQ(got[i].node_id, expected[i].node_id) << count << " #" << i;
          EXPECT_EQ(got[i].gpu_indices, expected[i].gpu_indices) << count << " #" << i;
        }
      }
    }
  }
}

// A list in node-id order (a capacity copy's) lets placement stop once the answer is settled
// (every later node could at best tie and loses on its id); shuffled, it reads every node.
// Both must give the same answer, whatever the mix of idle nodes, gaps and failures.
TEST(Place, StoppingEarlyOnAnIdOrderedFleetGivesTheFullAnswer) {
  std::mt19937 rng(11);
  std::vector<NodeCandidate> nodes;
  for (int i = 0; i < 300; ++i) {
    nodes.push_back(make_node(numbered("node-", 1000 + i), nvswitch(),
                              rng() % 5 == 0 ? static_cast<int>(rng() % 3) : 0));
    for (auto& gpu : nodes.back().gpus) {
      if (rng() % 4 != 0) continue;
      int from = static_cast<int>(rng() % 72);
      gpu.busy.push_back(hours(from, from + 1 + static_cast<int>(rng() % 24)));
    }
  }
  std::vector<const NodeCandidate*> in_order;
  for (const auto& n : nodes) in_order.push_back(&n);
  for (int count : {1, 2, 8}) {
    for (int wanted : {1, 3, 16}) {
      auto shuffled = in_order;
      std::ranges::shuffle(shuffled, rng);
      auto early = place_held(request(count, kAny), in_order, {.max_choices = wanted});
      auto full = place_held(request(count, kAny), shuffled, {.max_choices = wanted});
      ASSERT_EQ(early.size(), full.size()) << count << " of " << wanted;
      for (std::size_t i = 0; i < early.size(); ++i) {
        EXPECT_EQ(early[i].node_id, full[i].node_id) << count << " #" << i;
        EXPECT_EQ(early[i].gpu_indices, full[i].gpu_indices) << count << " #" << i;
      }
    }
  }
}

TEST(Place, ReturnsAtMostMaxChoices) {
  std::vector<NodeCandidate> nodes;
  for (int i = 0; i < 12; ++i) nodes.push_back(make_node(numbered("n", 10 + i), nvswitch()));
  EXPECT_EQ(place(request(1), nodes).size(), 8u);  // the default
  EXPECT_EQ(node_ids(place(request(1), nodes, {.max_choices = 3})),
            (std::vector<std::string>{"n10", "n11", "n12"}));
  EXPECT_EQ(place(request(1), nodes, {.max_choices = 100}).size(), 12u);
  EXPECT_TRUE(place(request(1), nodes, {.max_choices = 0}).empty());
  EXPECT_TRUE(place(request(1), nodes, {.max_choices = -1}).empty());
}

TEST(Place, EmptyWhenNothingCanFit) {
  std::vector<NodeCandidate> nodes{make_node("n", nvswitch())};
  EXPECT_TRUE(place(request(1), {}).empty());
  EXPECT_TRUE(place(request(9), nodes).empty());
  EXPECT_TRUE(place(request(0), nodes).empty());
  EXPECT_TRUE(place(request(65), nodes).empty());
  auto other_model = request(1);
  other_model.gpu_model = "A100-SXM4-80GB";
  EXPECT_TRUE(place(other_model, nodes).empty());
}

TEST(Place, SkipsNodesWhoseMatrixCannotBeRead) {
  auto ragged = make_node("a-ragged", nvswitch(3));
  ragged.links.links[1].pop_back();
  auto short_of_rows = make_node("b-short", nvswitch(3));
  short_of_rows.links.links.pop_back();
  auto good = make_node("c-good", nvswitch(4));
  EXPECT_EQ(node_ids(place(request(2, kAny), {ragged, short_of_rows, good})),
            (std::vector<std::string>{"c-good"}));
}

TEST(Place, NeverChoosesAGpuTheMatrixDoesNotCover) {
  auto node = make_node("n", nvswitch(2));
  node.gpus.push_back({2, true, {}});  // listed, but the matrix has two GPUs
  node.gpus.push_back({-1, true, {}});
  EXPECT_TRUE(place(request(3), {node}).empty());
  auto two = place(request(2), {node});
  ASSERT_EQ(two.size(), 1u);
  EXPECT_EQ(two[0].gpu_indices, (std::vector<int>{0, 1}));
}

TEST(Place, RealCapturesAsNodes) {
  auto h100 = make_node("h100-nv6", fixture(kH100Nv6));
  add_busy(h100, {2}, kDay1);
  auto choices = place(request(3), {h100});
  ASSERT_EQ(choices.size(), 1u);
  EXPECT_EQ(choices[0].gpu_indices, (std::vector<int>{0, 1, 3}));

  auto mesh = make_node("dgx1", hybrid_cube_mesh());
  add_busy(mesh, {5}, kDay1);
  auto quad = place(request(4), {mesh});
  ASSERT_EQ(quad.size(), 1u);
  EXPECT_EQ(quad[0].gpu_indices, (std::vector<int>{0, 1, 2, 3}));
}

// fits_any is place()'s fit without the ranking: on random fleets (shapes, busy periods,
// unhealthy GPUs, another model) the two always agree.
TEST(FitsAny, AgreesWithPlaceOnRandomFleets) {
  std::mt19937 rng(20261130);
  const std::vector<Matrix> shapes{nvswitch(), bridged_pairs(), hybrid_cube_mesh(),
                                   nvswitch(4, "NV6")};
  int agreed_fits = 0;
  for (int round = 0; round < 300; ++round) {
    std::vector<NodeCandidate> nodes;
    for (int n = 0; n < 1 + static_cast<int>(rng() % 4); ++n) {
      auto node = make_node("n" + std::to_string(n), shapes[rng() % shapes.size()]);
      if (rng() % 7 == 0) node.gpu_model = "A100-SXM4-80GB";
      for (auto& g : node.gpus) {
        if (rng() % 9 == 0) g.healthy = false;
        if (rng() % 3 == 0) {
          int from = static_cast<int>(rng() % 72);
          g.busy.push_back(hours(from, from + 1 + static_cast<int>(rng() % 30)));
        }
      }
      nodes.push_back(std::move(node));
    }
    std::vector<const NodeCandidate*> pointers;
    for (const auto& n : nodes) pointers.push_back(&n);
    auto req = request(1 + static_cast<int>(rng() % 8), rng() % 2 ? kNvlink : LinkNeed::kAny);
    bool placed = !place(req, nodes, {.max_choices = 1}).empty();
    ASSERT_EQ(fits_any(req, pointers), placed) << "round " << round;
    agreed_fits += placed;
  }
  EXPECT_GT(agreed_fits, 30) << "the rounds must include fits, not only refusals";
  EXPECT_LT(agreed_fits, 270) << "and refusals";
}

}  // namespace placement_test
}  // namespace gpurent::scheduler
