// The built `gpurent-agent burn-in --from DIR`: one JSON object on stdout and exit 0 for a
// folder of real captures; exit 2 and a line naming the file for one that does not parse.
#include "agent_proto/burn_in/tests/fixture_text.h"
#include "core/subprocess.h"
#include "tests/support/paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace gpurent::burn_in {
namespace burn_in_command_test {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::fixture_dir;

fs::path fresh_dir(const std::string& name) {
  fs::path dir =
      fs::temp_directory_path() / ("gpurent-burn-in-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(BurnInCommand, PrintsEveryToolsResults) {
  auto dir = fresh_dir("all");
  fs::copy_file(fixture_dir("nccl") / "readme-single-node_8xh100-hbm3.txt",
                dir / "all_reduce_perf.txt");
  fs::copy_file(fixture_dir("nvbandwidth") / "burn-in-sheet_8xh100-hbm3_v0.10.txt",
                dir / "nvbandwidth.txt");
  fs::copy_file(
      fixture_dir("dcgmi") / "cluster-report_dcgm-3.3.9_4x2237_targeted-power-fail-gpu1.txt",
      dir / "dcgmi_diag.txt");
  fs::copy_file(fixture_dir("gpu_burn") / "gpu-burn-12_16-gpus_faulty.txt", dir / "gpu_burn.txt");

  auto r = run_subprocess({gpurent::testing::agent_path(), "burn-in", "--from", dir.string()});
  fs::remove_all(dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json out = json::parse(r.output);  // nothing but the object
  EXPECT_EQ(out["nccl_all_reduce"]["avg_bus_bandwidth_gbps"], 448.212);
  EXPECT_EQ(out["nccl_all_reduce"]["rows"].size(), 4u);
  EXPECT_EQ(out["nccl_all_reduce"]["rows"][0]["out_of_place"]["busbw"], 419.49);
  EXPECT_EQ(out["nccl_all_reduce"]["rows"][0]["in_place"]["busbw"], 420.42);
  EXPECT_EQ(out["nccl_all_reduce"]["out_of_bounds_values"], 0);
  EXPECT_EQ(out["nvbandwidth"]["test_cases"].size(), 5u);
  EXPECT_EQ(out["nvbandwidth"]["test_cases"][4]["name"], "host_to_device_memcpy_ce");
  EXPECT_EQ(out["nvbandwidth"]["test_cases"][4]["sum"], 442.87);
  EXPECT_TRUE(out["nvbandwidth"]["test_cases"][0]["matrices"][0]["cells"][0][0].is_null());
  EXPECT_EQ(out["dcgmi_diag"]["passed"], false);
  bool found = false;
  for (const auto& t : out["dcgmi_diag"]["tests"]) {
    if (t["name"] == "Targeted Power") {
      found = true;
      EXPECT_EQ(t["verdict"], "fail");
      EXPECT_EQ(t["failing_gpus"], json::array({1}));
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(out["gpu_burn"]["gpus"].size(), 16u);
  EXPECT_EQ(out["gpu_burn"]["gpus"][0]["verdict"], "FAULTY");
  EXPECT_EQ(out["gpu_burn"]["gpus"][0]["gflops"], 6311.0);
}

TEST(BurnInCommand, PrintsTheTensorProbeAndTheNvlinkCaptures) {
  auto dir = fresh_dir("nvlink");
  fs::copy_file(fixture_dir("matmul") / "dcgm-user-guide_dcgmproftester11_1xa100_worker-prefix.txt",
                dir / "dcgmproftester.txt");
  fs::copy_file(
      fixture_dir("nvlink") /
          "azhpc-diagnostics-73_v100-sxm2-32gb-multi-gpu_gpu3-links-3-5-inactive_status.txt",
      dir / "nvlink_status.txt");
  fs::copy_file(
      fixture_dir("nvlink") / "brev-burn-in-notes_8xa100-sxm4-40gb_per-gpu-loop_errors.txt",
      dir / "nvlink_errors.txt");
  fs::copy_file(fixture_dir("p2p_bandwidth") / "p2p-4090-notes_2xrtx4090_p2p-disabled.txt",
                dir / "p2p_bandwidth.txt");
  auto r = run_subprocess({gpurent::testing::agent_path(), "burn-in", "--from", dir.string()});
  fs::remove_all(dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json out = json::parse(r.output);
  EXPECT_EQ(out.size(), 4u);
  EXPECT_EQ(out["p2p_bandwidth"]["devices"].size(), 2u);
  EXPECT_EQ(out["p2p_bandwidth"]["matrices"][1]["cells"][0][1], 22.18)
      << out["p2p_bandwidth"]["matrices"][1]["title"];
  EXPECT_EQ(out["dcgmproftester"]["test_id"], 1004);
  EXPECT_EQ(out["dcgmproftester"]["metric"], "TensorEngineActive");
  EXPECT_EQ(out["dcgmproftester"]["workers"][0]["gflops"][0], 250362.2);
  EXPECT_EQ(out["nvlink_status"][0]["gpu"], 3);
  EXPECT_TRUE(out["nvlink_status"][0]["links"][3]["gbps"].is_null());
  EXPECT_EQ(out["nvlink_status"][0]["links"][4]["gbps"], 25.781);
  EXPECT_EQ(out["nvlink_errors"].size(), 8u);
  EXPECT_EQ(out["nvlink_errors"][7]["links"][0]["counters"]["crc"], 0);
}

TEST(BurnInCommand, OnlyTheCapturesPresentAreReported) {
  auto dir = fresh_dir("one");
  fs::copy_file(fixture_dir("gpu_burn") / "gpu-burn-124_1xrtx-a2000_ok.txt", dir / "gpu_burn.txt");
  auto r = run_subprocess({gpurent::testing::agent_path(), "burn-in", "--from", dir.string()});
  fs::remove_all(dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json out = json::parse(r.output);
  EXPECT_EQ(out.size(), 1u);
  EXPECT_EQ(out["gpu_burn"]["gpus"][0]["verdict"], "OK");
}

TEST(BurnInCommand, AnUnparsableCaptureIsExit2NamingTheFile) {
  auto dir = fresh_dir("bad");
  std::ofstream(dir / "all_reduce_perf.txt") << "test: Test CUDA failure common.cu:941\n";
  fs::copy_file(fixture_dir("gpu_burn") / "gpu-burn-124_1xrtx-a2000_ok.txt", dir / "gpu_burn.txt");
  auto r = run_subprocess({gpurent::testing::agent_path(), "burn-in", "--from", dir.string()});
  fs::remove_all(dir);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("all_reduce_perf.txt:"), std::string::npos) << r.output;
}

TEST(BurnInCommand, AnEmptyOrMissingFolderIsExit2) {
  auto dir = fresh_dir("empty");
  auto empty = run_subprocess({gpurent::testing::agent_path(), "burn-in", "--from", dir.string()});
  fs::remove_all(dir);
  EXPECT_EQ(empty.exit_code, 2) << empty.output;
  EXPECT_NE(empty.output.find("nothing to report"), std::string::npos) << empty.output;
  auto missing = run_subprocess(
      {gpurent::testing::agent_path(), "burn-in", "--from", (dir / "nope").string()});
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  auto no_flag = run_subprocess({gpurent::testing::agent_path(), "burn-in"});
  EXPECT_EQ(no_flag.exit_code, 2) << no_flag.output;
}

}  // namespace burn_in_command_test
}  // namespace gpurent::burn_in
