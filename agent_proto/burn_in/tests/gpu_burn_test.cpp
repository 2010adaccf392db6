// Tests the gpu_burn parser on real outputs (fixtures/gpu_burn, provenance in
// fixtures/README.md) and on hand-made edges: repainted progress lines, dead workers, garbage.
#include "agent_proto/burn_in/gpu_burn.h"
#include "agent_proto/burn_in/tests/fixture_text.h"

#include <gtest/gtest.h>

namespace gpurent::burn_in {
namespace gpu_burn_test {

using testing::read_fixture;

TEST(GpuBurnFixtures, SixteenFaultyGpus) {
  auto r = parse_gpu_burn(read_fixture("gpu_burn", "gpu-burn-12_16-gpus_faulty.txt"));
  ASSERT_EQ(r.gpus.size(), 16u);
  EXPECT_TRUE(r.finished);
  EXPECT_EQ(r.progress_percent, 100.0);
  for (const auto& g : r.gpus) EXPECT_EQ(g.verdict, BurnVerdict::kFaulty) << g.index;
  EXPECT_EQ(r.gpus[0].gflops, 6311);
  EXPECT_EQ(r.gpus[0].errors, 0);
  EXPECT_EQ(r.gpus[1].errors, -524288000);
  EXPECT_EQ(r.gpus[15].gflops, 6439);
  EXPECT_EQ(r.gpus[15].temperature_c, 52);
  EXPECT_FALSE(r.gpus[1].died);
}

TEST(GpuBurnFixtures, OneGpuWithAndWithoutAVerdict) {
  auto k80 = parse_gpu_burn(read_fixture("gpu_burn", "gpu-burn-8_1xtesla-k80_no-verdict.txt"));
  ASSERT_EQ(k80.gpus.size(), 1u);
  EXPECT_FALSE(k80.finished);
  EXPECT_EQ(k80.gpus[0].name, "Tesla K80");
  EXPECT_EQ(k80.gpus[0].gflops, 2273);  // the last progress line's
  EXPECT_EQ(k80.gpus[0].temperature_c, 66);
  EXPECT_EQ(k80.gpus[0].verdict, std::nullopt);

  auto a500 = parse_gpu_burn(read_fixture("gpu_burn", "gpu-burn-124_1xrtx-a500_progress-only.txt"));
  EXPECT_EQ(a500.gpus.at(0).name, "NVIDIA RTX A500 Embedded GPU");
  EXPECT_EQ(a500.gpus.at(0).gflops, 3519);
  EXPECT_FALSE(a500.finished);

  auto a2000 = parse_gpu_burn(read_fixture("gpu_burn", "gpu-burn-124_1xrtx-a2000_ok.txt"));
  ASSERT_EQ(a2000.gpus.size(), 1u);
  EXPECT_TRUE(a2000.finished);
  EXPECT_EQ(a2000.gpus[0].verdict, BurnVerdict::kOk);
  EXPECT_EQ(a2000.gpus[0].gflops, std::nullopt);  // it printed no progress line
  EXPECT_EQ(a2000.gpus[0].name, "NVIDIA RTX A2000 Embedded GPU");
}

TEST(GpuBurnFixtures, TwoGpusPassing) {
  struct Case {
    std::string file;
    std::string name;
    double last_gflops_gpu1;
    int temperature_gpu0;
  };
  for (const auto& c : std::vector<Case>{
           {"gpu-burn-readme_2xtesla-k80_doubles.txt", "Tesla K80", 786, 74},
           {"gpu-burn-notes_2xtesla-m4_doubles.txt", "Tesla M4", 65, 53},
       }) {
    auto r = parse_gpu_burn(read_fixture("gpu_burn", c.file));
    ASSERT_EQ(r.gpus.size(), 2u) << c.file;
    EXPECT_TRUE(r.finished) << c.file;
    EXPECT_EQ(r.progress_percent, 100.0) << c.file;
    EXPECT_EQ(r.gpus[1].name, c.name) << c.file;
    EXPECT_EQ(r.gpus[1].gflops, c.last_gflops_gpu1) << c.file;
    EXPECT_EQ(r.gpus[0].temperature_c, c.temperature_gpu0) << c.file;
    for (const auto& g : r.gpus) {
      EXPECT_EQ(g.verdict, BurnVerdict::kOk) << c.file;
      EXPECT_EQ(g.errors, 0) << c.file;
    }
  }
}

// Synthetic: two GPUs, repaints with '\r', a dead worker, mixed verdicts.
TEST(GpuBurnEdges, RepaintsDeathsAndMixedVerdicts) {
  auto r = parse_gpu_burn(
      "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-x)\n"
      "10.0%  proc'd: 1 (100 Gflop/s) - 1 (90 Gflop/s)   errors: 0 - 0   temps: 40 C - 41 C \r"
      "20.0%  proc'd: 2 (110 Gflop/s) - -1 (0 Gflop/s)   errors: 0 - 1594499040  (DIED!)   "
      "temps: 42 C - 43 C \n"
      "Tested 2 GPUs:\n\tGPU 0: OK\n\tGPU 1: FAULTY\n");
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.progress_percent, 20.0);
  EXPECT_EQ(r.gpus[0].gflops, 110);
  EXPECT_EQ(r.gpus[1].gflops, 0);
  EXPECT_TRUE(r.gpus[1].died);
  EXPECT_EQ(r.gpus[1].temperature_c, 43);
  EXPECT_EQ(r.gpus[0].verdict, BurnVerdict::kOk);
  EXPECT_EQ(r.gpus[1].verdict, BurnVerdict::kFaulty);
  EXPECT_EQ(r.gpus[0].name, "NVIDIA H100 80GB HBM3");
}

TEST(GpuBurnErrors, GarbageIsRefused) {
  for (const std::string& text : std::vector<std::string>{
           "",
           "Couldn't init a GPU test: Error in \"init\": CUBLAS_STATUS_NOT_INITIALIZED\n",
           "GPU 0: OK\n",  // a verdict without the summary line is a name line at best
           "10.0%  proc'd: 1 (fast Gflop/s)   errors: 0   temps: 40 C\n",
           "10.0%  proc'd: 1 (100   errors: 0   temps: 40 C\n",
           "10.0%  proc'd: 1 (-5 Gflop/s)   errors: 0   temps: 40 C\n",
       }) {
    EXPECT_THROW(parse_gpu_burn(text), ParseError) << text;
  }
}

TEST(GpuBurnErrors, LimitsBoundTheWork) {
  std::string wide = "50.0%  proc'd:";
  for (std::size_t i = 0; i <= kMaxBurnGpus; ++i) wide += " 1 (1 Gflop/s) -";
  EXPECT_THROW(parse_gpu_burn(wide), ParseError);
  EXPECT_THROW(parse_gpu_burn("Tested 1 GPUs:\nGPU 100000: OK\n"), ParseError);
  EXPECT_THROW(parse_gpu_burn(std::string(kMaxToolOutputBytes + 1, '\r')), ParseError);
}

}  // namespace gpu_burn_test
}  // namespace gpurent::burn_in
