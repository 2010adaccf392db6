// Tests the burn-in figures made from real captures (fixtures/, provenance in
// fixtures/README.md) and the strict reading of their wire form, as the server reads an agent.
#include "agent_proto/burn_in/figures.h"
#include "agent_proto/burn_in/tests/fixture_text.h"

#include <gtest/gtest.h>

namespace gpurent::burn_in {
namespace figures_test {

using testing::read_fixture;

TEST(BurnInFigures, AnHgxH100sCapturesGiveItsPeerLinksBusBandwidthAndNoProblem) {
  BurnInInputs in{.all_reduce_perf = read_fixture("nccl", "readme-single-node_8xh100-hbm3.txt"),
                  .nvbandwidth = read_fixture("nvbandwidth", "burn-in-sheet_8xh100-hbm3_v0.10.txt"),
                  .dcgmi_diag = read_fixture("dcgmi", "dcgm-124_dcgm-4.4.2_1x2237_pass.txt")};
  auto f = figures_of(in);
  EXPECT_TRUE(f.problems.empty());
  EXPECT_EQ(f.tools, (std::vector<std::string>{"nvbandwidth", "nccl", "dcgmi"}));
  ASSERT_EQ(f.links.size(), 28u);  // every pair of eight GPUs once
  EXPECT_EQ(f.links.front().a, 0);
  EXPECT_EQ(f.links.front().b, 1);
  EXPECT_DOUBLE_EQ(f.links.front().gbps, 395.08);
  // 3 -> 2 measured 395.23 and 2 -> 3 395.08: the pair is as good as its slower direction.
  auto pair23 = std::find_if(f.links.begin(), f.links.end(),
                             [](const LinkFigure& l) { return l.a == 2 && l.b == 3; });
  ASSERT_NE(pair23, f.links.end());
  EXPECT_DOUBLE_EQ(pair23->gbps, 395.08);
  EXPECT_EQ(f.nccl_bus_gbps, 448.212);
  EXPECT_EQ(f.nccl_wrong, 0);
  ASSERT_FALSE(f.diag.empty());
  for (const auto& d : f.diag) EXPECT_NE(d.verdict, DiagVerdict::kFail) << d.test;
}

TEST(BurnInFigures, FaultyGpusAndFailedDcgmTestsAreKept) {
  auto f =
      figures_of({.dcgmi_diag = read_fixture(
                      "dcgmi", "cluster-report_dcgm-3.3.9_4x2237_targeted-power-fail-gpu1.txt"),
                  .gpu_burn = read_fixture("gpu_burn", "gpu-burn-12_16-gpus_faulty.txt")});
  ASSERT_EQ(f.gpus.size(), 16u);
  EXPECT_EQ(f.gpus[0].gflops, 6311);
  EXPECT_EQ(f.gpus[0].burn_ok, false);
  bool failed_on_gpu1 = false;
  for (const auto& d : f.diag) {
    if (d.verdict == DiagVerdict::kFail && d.failing_gpus == std::vector<int>{1})
      failed_on_gpu1 = true;
  }
  EXPECT_TRUE(failed_on_gpu1);
}

TEST(BurnInFigures, AnOutputThatDoesNotParseIsAProblemNamingItsFile) {
  auto f =
      figures_of({.all_reduce_perf = "NCCL failure common.cu:1012 'unhandled cuda error'\n",
                  .gpu_burn = read_fixture("gpu_burn", "gpu-burn-8_1xtesla-k80_no-verdict.txt")});
  ASSERT_EQ(f.problems.size(), 2u);
  EXPECT_TRUE(f.problems[0].starts_with("gpu_burn.txt: the run did not finish")) << f.problems[0];
  EXPECT_TRUE(f.problems[1].starts_with("all_reduce_perf.txt: ")) << f.problems[1];
  EXPECT_EQ(f.tools, std::vector<std::string>{"gpu_burn"});
  EXPECT_FALSE(f.nccl_bus_gbps);
}

TEST(BurnInFigures, TheWireFormReadsBackToTheSameFigures) {
  auto f =
      figures_of({.all_reduce_perf = read_fixture("nccl", "readme-single-node_8xh100-hbm3.txt"),
                  .nvbandwidth = read_fixture("nvbandwidth", "burn-in-sheet_8xh100-hbm3_v0.10.txt"),
                  .dcgmi_diag = read_fixture(
                      "dcgmi", "nccl-tests-264_dcgm-3.3.8_8x2330_gpu-memory-fail-all.txt"),
                  .gpu_burn = read_fixture("gpu_burn", "gpu-burn-12_16-gpus_faulty.txt")});
  auto wire = to_json(f);
  EXPECT_LT(wire.dump().size(), 64u * 1024);  // fits a task result
  EXPECT_EQ(figures_from_json(nlohmann::json::parse(wire.dump())), f);
}

TEST(BurnInFigures, TheServerRefusesWhatAnAgentCouldNotHaveMeasured) {
  auto good = to_json(BurnInFigures{.tools = {"nvbandwidth"}, .links = {{0, 1, 390.5}}});
  ASSERT_NO_THROW(figures_from_json(good));
  auto refused = [&](auto change) {
    auto j = good;
    change(j);
    EXPECT_THROW(figures_from_json(j), ParseError) << j.dump();
  };
  refused([](auto& j) { j["extra"] = 1; });
  refused([](auto& j) { j.erase("links"); });
  refused([](auto& j) { j["links"][0]["gbps"] = -1; });
  refused([](auto& j) { j["links"][0]["a"] = 1; });  // a == b
  refused([](auto& j) { j["links"].push_back({{"a", 0}, {"b", 1}, {"gbps", 1.0}}); });
  refused([](auto& j) { j["links"][0]["b"] = 64; });
  refused([](auto& j) { j["gpus"] = {{{"index", 0}}, {{"index", 0}}}; });
  refused([](auto& j) { j["tools"] = {"rm -rf"}; });
  refused([](auto& j) { j["nccl_wrong"] = -3; });
  refused([](auto& j) { j["nccl_bus_gbps"] = "fast"; });
  refused([](auto& j) {
    j["diag"] = {
        {{"test", "memory"}, {"verdict", "great"}, {"failing_gpus", nlohmann::json::array()}}};
  });
  refused([](auto& j) { j["problems"] = std::vector<std::string>(9, "x"); });
  refused([](auto& j) { j = nlohmann::json::array(); });
}

}  // namespace figures_test
}  // namespace gpurent::burn_in
