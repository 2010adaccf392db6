// Table tests of the burn-in verdict (inventory/burn_in_rules.h): which figures fail, against
// which bar, and what the operator and the tenant are told.
#include "inventory/burn_in_rules.h"

#include <gtest/gtest.h>

namespace gpurent::inventory {
namespace {

using burn_in::BurnInFigures;
using burn_in::DiagVerdict;

// Eight GPUs of an HGX H100 as a healthy one measures them, every pair NVLinked.
BurnInFigures healthy_hgx() {
  BurnInFigures f{.tools = {"gpu_burn", "nvbandwidth", "nccl", "dcgmproftester", "nvlink"},
                  .nccl_bus_gbps = 448.2};
  for (int i = 0; i < 8; ++i) {
    f.gpus.push_back({i, 50000.0 + i * 10, true, 660.0 - i, 1519.0});
    f.nvlink.push_back({.gpu = i, .active = 18, .errors = 0});
  }
  for (int a = 0; a < 8; ++a) {
    for (int b = a + 1; b < 8; ++b) f.links.push_back({a, b, 395.0});
  }
  return f;
}

const BurnInNominal kHgx{.link_gbps = 450, .all_pairs_nvlinked = true};

std::vector<std::string> failed_subjects(const BurnInVerdict& v) {
  std::vector<std::string> out;
  for (const auto& f : v.findings) {
    if (f.failed) out.push_back(f.check + ":" + f.subject);
  }
  return out;
}

TEST(BurnInRules, EachFigureIsHeldToItsBar) {
  struct Row {
    const char* name;
    std::function<void(BurnInFigures&)> change;
    BurnInMedians medians;
    std::vector<std::string> fails;
  };
  const std::vector<Row> rows{
      {"healthy", [](auto&) {}, {}, {}},
      {"healthy against the fleet",
       [](auto&) {},
       {.gflops = 50100, .link_gbps = 396, .nccl_bus_gbps = 450},
       {}},
      {"one GPU at half speed, below its siblings",
       [](auto& f) { f.gpus[3].gflops = 25000; },
       {},
       {"gpu_throughput:gpu3"}},
      {"just above 0.8 of the node's median passes",
       [](auto& f) { f.gpus[3].gflops = 40100; },
       {},
       {}},
      {"a whole node slow, below the fleet",
       [](auto& f) {
         for (auto& g : f.gpus) *g.gflops /= 2;
       },
       {.gflops = 50000},
       {"gpu_throughput:gpu0", "gpu_throughput:gpu1", "gpu_throughput:gpu2", "gpu_throughput:gpu3",
        "gpu_throughput:gpu4", "gpu_throughput:gpu5", "gpu_throughput:gpu6",
        "gpu_throughput:gpu7"}},
      {"gpu_burn FAULTY", [](auto& f) { f.gpus[5].burn_ok = false; }, {}, {"gpu_burn:gpu5"}},
      {"one NVLink down falls to PCIe speed",
       [](auto& f) {
         for (auto& l : f.links) {
           if (l.a == 1 && l.b == 2) l.gbps = 24.5;
         }
       },
       {},
       {"peer_bandwidth:gpu1-gpu2"}},
      {"every link at 0.6 of nominal: the node's median does not excuse it",
       [](auto& f) {
         for (auto& l : f.links) l.gbps = 270;
       },
       {},
       [] {
         std::vector<std::string> all;
         for (int a = 0; a < 8; ++a)
           for (int b = a + 1; b < 8; ++b)
             all.push_back("peer_bandwidth:gpu" + std::to_string(a) + "-gpu" + std::to_string(b));
         return all;
       }()},
      {"NCCL bus bandwidth below nominal",
       [](auto& f) { f.nccl_bus_gbps = 200; },
       {},
       {"nccl_bus_bandwidth:node"}},
      {"NCCL below the fleet's median",
       [](auto& f) { f.nccl_bus_gbps = 340; },
       {.nccl_bus_gbps = 450},
       {"nccl_bus_bandwidth:node"}},
      {"NCCL wrong values", [](auto& f) { f.nccl_wrong = 12; }, {}, {"nccl_correctness:node"}},
      {"DCGM failed",
       [](auto& f) {
         f.diag.push_back({"Targeted Power", DiagVerdict::kFail, {1}});
       },
       {},
       {"dcgm:Targeted Power"}},
      {"DCGM warned: reported, not failed",
       [](auto& f) {
         f.diag.push_back({"memory", DiagVerdict::kWarn, {}});
       },
       {},
       {}},
      {"one GPU's tensor GEMM at 40%",
       [](auto& f) { f.gpus[3].tensor_tflops = 264; },
       {},
       {"gpu_tensor_throughput:gpu3"}},
      {"the node's memory copies at half the fleet's",
       [](auto& f) {
         for (auto& g : f.gpus) *g.memory_gbps /= 2;
       },
       {.memory_gbps = 1519},
       {"gpu_memory_bandwidth:gpu0", "gpu_memory_bandwidth:gpu1", "gpu_memory_bandwidth:gpu2",
        "gpu_memory_bandwidth:gpu3", "gpu_memory_bandwidth:gpu4", "gpu_memory_bandwidth:gpu5",
        "gpu_memory_bandwidth:gpu6", "gpu_memory_bandwidth:gpu7"}},
      {"tensor and memory at the fleet's medians pass",
       [](auto&) {},
       {.tensor_tflops = 655, .memory_gbps = 1500},
       {}},
      {"one GPU's NVLinks inactive",
       [](auto& f) {
         f.nvlink[1].active = 0;
         for (int l = 0; l < 18; ++l) f.nvlink[1].inactive.push_back(l);
       },
       {},
       {"nvlink:gpu1"}},
      {"the driver says all of a GPU's links are down",
       [](auto& f) {
         f.nvlink[6].active = 0;
         f.nvlink[6].all_down = true;
       },
       {},
       {"nvlink:gpu6"}},
      {"two links down on one GPU",
       [](auto& f) {
         f.nvlink[2].active = 16;
         f.nvlink[2].inactive = {4, 9};
       },
       {},
       {"nvlink:gpu2"}},
      {"a bridged pair: the same links never up on every GPU passes",
       [](auto& f) {
         for (auto& n : f.nvlink) {
           n.active = 12;
           n.inactive = {12, 13, 14, 15, 16, 17};
         }
       },
       {},
       {}},
      {"NVLink error counters warn, not fail", [](auto& f) { f.nvlink[4].errors = 37; }, {}, {}},
      {"an output that did not parse",
       [](auto& f) { f.problems.push_back("nvbandwidth.txt: no test case"); },
       {},
       {"tool_output:node"}},
  };
  for (const auto& row : rows) {
    auto f = healthy_hgx();
    row.change(f);
    auto v = judge_burn_in(f, kHgx, row.medians);
    EXPECT_EQ(failed_subjects(v), row.fails) << row.name;
    EXPECT_EQ(v.passed, row.fails.empty()) << row.name;
  }
}

TEST(BurnInRules, NvlinkErrorsAndLostLinksAreNamed) {
  auto f = healthy_hgx();
  f.nvlink[4].errors = 37;
  f.nvlink[2].active = 16;
  f.nvlink[2].inactive = {4, 9};
  auto v = judge_burn_in(f, kHgx, {});
  ASSERT_GE(v.findings.size(), 2u);
  EXPECT_EQ(v.findings[0].detail,
            "gpu2 NVLink 16 of 18 links up (inactive: 4 9), while its siblings have 18");
  EXPECT_TRUE(v.findings[1].warning);
  EXPECT_EQ(v.findings[1].detail,
            "gpu4 NVLink error counters (replay, recovery, CRC…) at 37 since the driver loaded");
}

TEST(BurnInRules, PcieBoxesLinksAreReportedButHeldToNoNominal) {
  BurnInFigures f{.tools = {"nvbandwidth"}, .links = {{0, 1, 24.0}, {0, 2, 52.0}, {1, 2, 25.0}}};
  auto v = judge_burn_in(f, {.link_gbps = std::nullopt, .all_pairs_nvlinked = false}, {});
  EXPECT_TRUE(v.passed);
  EXPECT_EQ(v.findings.size(), 3u);
  EXPECT_FALSE(v.findings[0].expected);
}

TEST(BurnInRules, TheSummaryNamesTheFailingFigureAndItsBar) {
  auto f = healthy_hgx();
  f.gpus[3].gflops = 20000;
  auto v = judge_burn_in(f, kHgx, {.gflops = 60000});
  EXPECT_FALSE(v.passed);
  // The higher bar of the two: the fleet's median (60000) over the node's own (50030).
  EXPECT_EQ(v.summary(),
            "gpu3 matmul 20000 Gflop/s, below 48000 (0.8 of the fleet's median 60000)");
  ASSERT_FALSE(v.findings.empty());
  EXPECT_TRUE(v.findings.front().failed);  // failures first
  EXPECT_EQ(v.findings.front().expected, 48000);
}

TEST(BurnInRules, NothingMeasuredPassesWithAWarning) {
  auto v = judge_burn_in({}, kHgx, {});
  EXPECT_TRUE(v.passed);
  ASSERT_EQ(v.findings.size(), 1u);
  EXPECT_TRUE(v.findings[0].warning);
  EXPECT_EQ(v.findings[0].check, "measured");
}

TEST(BurnInRules, MemoryErrorsThatAppearedDuringTheBurnInFailOrWarn) {
  using nlohmann::json;
  const json before = json::array({{{"index", 0}, {"ecc_volatile_dbe", 1}, {"ecc_volatile_sbe", 0}},
                                   {{"index", 1}, {"ecc_volatile_dbe", 0}, {"ecc_volatile_sbe", 4}},
                                   {{"index", 2}, {"ecc_volatile_dbe", 0}}});
  struct Row {
    const char* name;
    json after;
    bool passed;
    std::vector<std::string> findings;  // check:subject:verdict
  };
  const std::vector<Row> rows{
      {"unchanged counters", before, true, {}},
      {"an uncorrectable error appeared on gpu2",
       json::array({before[0], before[1], {{"index", 2}, {"ecc_volatile_dbe", 2}}}),
       false,
       {"ecc:gpu2:fail"}},
      {"one from before the burn-in is not its fault", before, true, {}},
      {"corrected errors appeared on gpu1: a warning",
       json::array({before[0],
                    {{"index", 1}, {"ecc_volatile_dbe", 0}, {"ecc_volatile_sbe", 9}},
                    before[2]}),
       true,
       {"ecc:gpu1:warn"}},
      {"a failed row remap",
       json::array({before[0],
                    before[1],
                    {{"index", 2}, {"ecc_volatile_dbe", 0}, {"remapped_rows_failure", true}}}),
       false,
       {"ecc:gpu2:fail"}},
      {"a GPU missing afterwards is not judged", json::array({before[0]}), true, {}},
      {"no telemetry afterwards", json(), true, {}},
  };
  for (const auto& row : rows) {
    BurnInVerdict v;
    add_ecc_findings(v, before, row.after);
    std::vector<std::string> got;
    for (const auto& f : v.findings) {
      got.push_back(f.check + ":" + f.subject + ":" +
                    (f.failed    ? "fail"
                     : f.warning ? "warn"
                                 : "pass"));
    }
    EXPECT_EQ(got, row.findings) << row.name;
    EXPECT_EQ(v.passed, row.passed) << row.name;
  }
  BurnInVerdict v;
  add_ecc_findings(v, before,
                   json::array({before[0], before[1], {{"index", 2}, {"ecc_volatile_dbe", 2}}}));
  EXPECT_EQ(v.summary(), "gpu2 had 2 uncorrectable memory errors during the burn-in");
}

TEST(BurnInRules, MedianOfOddEvenAndNone) {
  EXPECT_EQ(median_of({3, 1, 2}), 2);
  EXPECT_EQ(median_of({4, 1, 3, 2}), 2.5);
  EXPECT_FALSE(median_of({}));
}

}  // namespace
}  // namespace gpurent::inventory
