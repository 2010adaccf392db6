// The built `gpurent-agent probe --from DIR`: one JSON object on stdout, exit status 0.
#include "core/subprocess.h"
#include "tests/support/paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>

namespace gpurent::agent::probe_command_test {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(ProbeCommand, PrintsWhatTheCapturesHold) {
  fs::path dir = fs::temp_directory_path() / ("gpurent-probe-cmd-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path fixtures = fs::path(testing::source_dir()) / "agent_proto/tests/fixtures";
  fs::copy_file(fixtures / "query-gpu/linux-x86_64__nvidia-h200__590.48.01.query-gpu-idle.csv",
                dir / "query.csv");
  fs::copy_file(fixtures / "topo/nccl-667_4gpu_PXB_PIX_SYS.topo-m.txt", dir / "topo.txt");
  fs::copy_file(fixtures / "xid/hand-made_variants.log", dir / "kern.log");

  auto r = run_subprocess({testing::agent_path(), "probe", "--from", dir.string()});
  fs::remove_all(dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json out = json::parse(r.output);  // nothing but the object: no log lines
  EXPECT_EQ(out["gpus"].size(), 1u);
  EXPECT_EQ(out["topology"]["gpus"], 4);
  ASSERT_FALSE(out["events"].empty());
  EXPECT_EQ(out["events"][0]["kind"], "xid");
  EXPECT_TRUE(out["events"][0].contains("severity"));
}

TEST(ProbeCommand, AFolderWithoutCapturesPrintsAnEmptyObject) {
  fs::path dir = fs::temp_directory_path() / ("gpurent-probe-none-" + std::to_string(getpid()));
  fs::create_directories(dir);
  auto r = run_subprocess({testing::agent_path(), "probe", "--from", dir.string()});
  fs::remove_all(dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json::parse(r.output), json::object());
}

TEST(ProbeCommand, AnUnknownCommandIsAUsageError) {
  auto r = run_subprocess({testing::agent_path(), "frobnicate"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

}  // namespace gpurent::agent::probe_command_test
