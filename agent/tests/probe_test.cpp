// probe() over folders built from agent_proto's captured fixtures: each capture lands in its
// member, a missing one leaves its member out, an unreadable one is named, not fatal.
#include "agent/probe.h"

#include "tests/support/paths.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace gpurent::agent::probe_test {

namespace fs = std::filesystem;
using nlohmann::json;

const agent_proto::KernelLogClock kClock{.year = 2026, .utc_offset = std::chrono::minutes(0)};

fs::path fixture(const std::string& kind, const std::string& name) {
  return fs::path(testing::source_dir()) / "agent_proto/tests/fixtures" / kind / name;
}

class ProbeDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpurent-probe-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void add(const std::string& kind, const std::string& name, const std::string& as) {
    fs::copy_file(fixture(kind, name), dir_ / as);
  }
  ProbeReport run() { return probe(read_probe_dir(dir_), kClock); }

  fs::path dir_;
};

TEST_F(ProbeDir, EveryCaptureLandsInItsMember) {
  add("query-gpu", "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.query-gpu-idle.csv",
      "query.csv");
  add("topo", "nccl-1617_4xH100_NV6.topo-m.txt", "topo.txt");
  add("xid", "nvsentinel-155_xid79.log", "kern.log");
  auto report = run();
  EXPECT_TRUE(report.problems.empty()) << report.problems.front();
  const json& out = report.json;

  ASSERT_EQ(out["gpus"].size(), 1u) << out.dump();
  EXPECT_EQ(out["gpus"][0]["index"], 0);
  EXPECT_EQ(out["gpus"][0]["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(out["gpus"][0]["pci_bus_id"], "00000000:00:09.0");

  EXPECT_EQ(out["topology"]["gpus"], 4);
  ASSERT_EQ(out["topology"]["links"].size(), 4u);
  EXPECT_EQ(out["topology"]["links"][0][0], "X");
  EXPECT_EQ(out["topology"]["links"][0][1], "NV6");

  ASSERT_EQ(out["events"].size(), 1u) << out.dump();
  const json& event = out["events"][0];
  EXPECT_EQ(event["kind"], "xid");
  EXPECT_EQ(event["xid"], 79);
  EXPECT_EQ(event["pci"], "0000:44:00");
  EXPECT_EQ(event["severity"], "critical");
  EXPECT_FALSE(event.contains("at")) << "the line carries no time";
  EXPECT_FALSE(event.contains("pid"));
}

TEST_F(ProbeDir, EventsCarryTheirTimeAndSeverity) {
  add("xid", "hand-made_variants.log", "kern.log");
  const json out = run().json;
  EXPECT_FALSE(out.contains("gpus"));
  EXPECT_FALSE(out.contains("topology"));
  ASSERT_GE(out["events"].size(), 5u) << out.dump();
  const json& first = out["events"][0];  // a syslog line: the clock's year, UTC
  EXPECT_EQ(first["xid"], 79);
  EXPECT_EQ(first["pid"], 1234);
  EXPECT_EQ(first["process"], "python");
  EXPECT_EQ(first["at"], "2026-07-03T22:10:46Z");
  EXPECT_EQ(first["severity"], "critical");
  for (const auto& event : out["events"]) {
    if (event["xid"] == 13) {
      EXPECT_EQ(event["severity"], "info") << "the application's fault";
    }
    if (event["xid"] == 63) {
      EXPECT_EQ(event["severity"], "warning");
    }
  }
}

TEST_F(ProbeDir, MissingFilesLeaveTheirPartsOut) {
  EXPECT_EQ(run().json, json::object());
  add("topo", "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.topo-m", "topo.txt");
  const json out = run().json;
  EXPECT_EQ(out, (json{{"topology", {{"gpus", 1}, {"links", {{"X"}}}}}})) << out.dump();
}

TEST_F(ProbeDir, AnEmptyKernelLogHasNoEvents) {
  std::ofstream(dir_ / "kern.log") << "Jul  3 22:10:46 gpu-node-7 kernel: EXT4-fs: mounted\n";
  EXPECT_EQ(run().json, (json{{"events", json::array()}}));
}

TEST_F(ProbeDir, AnUnreadableCaptureIsNamedAndTheRestStillReported) {
  std::ofstream(dir_ / "topo.txt") << "NVIDIA-SMI has failed because it couldn't communicate\n";
  std::ofstream(dir_ / "query.csv")
      << "Failed to initialize NVML: Driver/library version mismatch\n";
  add("xid", "nvsentinel-155_xid79.log", "kern.log");
  auto report = run();
  EXPECT_FALSE(report.json.contains("topology"));
  EXPECT_FALSE(report.json.contains("gpus"));
  EXPECT_EQ(report.json["events"].size(), 1u);
  ASSERT_EQ(report.problems.size(), 2u);
  EXPECT_NE(report.problems[0].find("query-gpu"), std::string::npos) << report.problems[0];
  EXPECT_NE(report.problems[1].find("topo -m"), std::string::npos) << report.problems[1];
}

TEST(ProbeFixtures, EveryCaptureReadsOrIsNamed) {
  for (const char* kind : {"query-gpu", "topo"}) {
    for (const auto& entry : fs::directory_iterator(fixture(kind, ""))) {
      if (entry.path().extension() == ".md") continue;
      ProbeInputs inputs;
      std::ifstream in(entry.path());
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      (std::string(kind) == "topo" ? inputs.topo_m : inputs.query_csv) = text;
      auto report = probe(inputs, kClock);
      if (text.rfind("ERROR", 0) == 0) {
        // A capture of nvidia-smi refusing the command: named, with its words quoted.
        ASSERT_EQ(report.problems.size(), 1u) << entry.path();
        EXPECT_NE(report.problems[0].find("ERROR"), std::string::npos) << report.problems[0];
      } else {
        EXPECT_TRUE(report.problems.empty()) << entry.path() << ": " << report.problems.front();
      }
    }
  }
}

}  // namespace gpurent::agent::probe_test
