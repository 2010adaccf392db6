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

TEST(BurnInFigures, TensorThroughputMemoryCopiesAndNvlinksFromRealCaptures) {
  auto f = figures_of(
      {.nvbandwidth =
           read_fixture("nvbandwidth", "nvbandwidth-48_8xh20-3e_v0.8_device-local-copy.txt"),
       .dcgmproftester =
           read_fixture("matmul", "dcgm-user-guide_dcgmproftester11_1xa100_worker-prefix.txt"),
       .nvlink_status = read_fixture(
           "nvlink",
           "azhpc-diagnostics-73_v100-sxm2-32gb-multi-gpu_gpu3-links-3-5-inactive_status.txt"),
       .nvlink_errors =
           read_fixture("nvlink", "brev-burn-in-notes_8xa100-sxm4-40gb_per-gpu-loop_errors.txt")});
  EXPECT_TRUE(f.problems.empty()) << f.problems.front();
  EXPECT_EQ(f.tools, (std::vector<std::string>{"nvbandwidth", "dcgmproftester", "nvlink"}));
  ASSERT_EQ(f.gpus.size(), 8u);
  // The median of its ten samples (252861.4 and 252917.0 the middle two), in TFLOP/s.
  EXPECT_DOUBLE_EQ(*f.gpus[0].tensor_tflops, (252861.4 + 252917.0) / 2 / 1000);
  EXPECT_FALSE(f.gpus[1].tensor_tflops);
  EXPECT_DOUBLE_EQ(*f.gpus[0].memory_gbps, 1116.30);
  EXPECT_DOUBLE_EQ(*f.gpus[7].memory_gbps, 1116.30);
  EXPECT_DOUBLE_EQ(*f.gpus[5].memory_gbps, 1116.88);
  // GPU 3's status (links 3 and 5 inactive) and every A100's error counters, all zero.
  ASSERT_EQ(f.nvlink.size(), 8u);
  EXPECT_EQ(f.nvlink[3].gpu, 3);
  EXPECT_EQ(f.nvlink[3].active, 4);
  EXPECT_EQ(f.nvlink[3].inactive, (std::vector<int>{3, 5}));
  EXPECT_EQ(f.nvlink[3].errors, 0);
  EXPECT_EQ(f.nvlink[0].active, 0) << "no status captured for GPU 0";
  auto wire = to_json(f);
  EXPECT_EQ(figures_from_json(nlohmann::json::parse(wire.dump())), f);
}

TEST(BurnInFigures, PeerLinksFromP2pBandwidthLatencyTestWhenNvbandwidthIsAbsent) {
  auto f = figures_of(
      {.p2p_bandwidth = read_fixture("p2p_bandwidth", "burn-in-sheet_8xh100-hbm3_nvswitch.txt")});
  EXPECT_TRUE(f.problems.empty());
  EXPECT_EQ(f.tools, std::vector<std::string>{"p2p_bandwidth"});
  ASSERT_EQ(f.links.size(), 28u);
  // 0 -> 1 wrote 365.30 GB/s and 1 -> 0 375.88: the slower direction; the diagonal (a GPU
  // with itself) is no link.
  EXPECT_EQ(f.links[0].a, 0);
  EXPECT_EQ(f.links[0].b, 1);
  EXPECT_DOUBLE_EQ(f.links[0].gbps, 365.30);
  // A PCIe pair without peer access: the copies through the host.
  auto pcie = figures_of({.p2p_bandwidth = read_fixture(
                              "p2p_bandwidth", "p2p-4090-notes_2xrtx4090_p2p-disabled.txt")});
  ASSERT_EQ(pcie.links.size(), 1u);
  EXPECT_DOUBLE_EQ(pcie.links[0].gbps, 22.18);
  // With nvbandwidth's matrix too, nvbandwidth's links are kept.
  auto both = figures_of(
      {.nvbandwidth = read_fixture("nvbandwidth", "burn-in-sheet_8xh100-hbm3_v0.10.txt"),
       .p2p_bandwidth = read_fixture("p2p_bandwidth", "burn-in-sheet_8xh100-hbm3_nvswitch.txt")});
  EXPECT_DOUBLE_EQ(both.links[0].gbps, 395.08);
}

TEST(BurnInFigures, NvlinkErrorsCountErrorCountersOnly) {
  EXPECT_EQ(nvlink_errors({.link = 0, .counters = {{"replay", 2}, {"recovery", 1}, {"crc", 4}}}),
            7);
  EXPECT_EQ(nvlink_errors({.link = 0,
                           .counters = {{"tx_packets", 900},
                                        {"malformed_packet", 3},
                                        {"link_recovery_successful_events", 5}}}),
            3);
  EXPECT_EQ(nvlink_errors({.link = 0, .counters = {{"crc", INT64_MAX}, {"replay", 5}}}), INT64_MAX)
      << "saturates";
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
  refused([](auto& j) { j["gpus"] = {{{"index", 0}, {"tensor_tflops", -1}}}; });
  refused([](auto& j) { j["gpus"] = {{{"index", 0}, {"memory_gbps", "fast"}}}; });
  auto link_state = [](nlohmann::json n) { return nlohmann::json::array({n}); };
  auto with = [](nlohmann::json n, const char* key, nlohmann::json value) {
    n[key] = std::move(value);
    return n;
  };
  nlohmann::json up = {{"gpu", 0},
                       {"active", 18},
                       {"inactive", nlohmann::json::array()},
                       {"all_down", false},
                       {"errors", 0}};
  ASSERT_NO_THROW(figures_from_json([&] {
    auto j = good;
    j["nvlink"] = link_state(up);
    return j;
  }()));
  refused([&](auto& j) { j["nvlink"] = {up, up}; });  // a GPU twice
  refused([&](auto& j) { j["nvlink"] = link_state(with(up, "active", 65)); });
  refused([&](auto& j) { j["nvlink"] = link_state(with(up, "errors", -1)); });
  refused([&](auto& j) { j["nvlink"] = link_state(with(up, "inactive", {64})); });
  refused([&](auto& j) { j["nvlink"] = link_state(with(up, "all_down", 1)); });
  refused([&](auto& j) { j["nvlink"] = link_state(with(up, "speed", 1)); });
}

}  // namespace figures_test
}  // namespace gpurent::burn_in
