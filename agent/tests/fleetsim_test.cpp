// gpurent-fleetsim's pure parts: its flags, the enrolment file, the round-trip percentiles.
#include "agent/fleetsim/fleet_options.h"
#include "agent/fleetsim/fleet_stats.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpurent::agent::fleetsim::fleetsim_test {

using std::chrono::milliseconds;

constexpr const char* kNodeA = "nod_fleet00000000000000001";
constexpr const char* kNodeB = "nod_fleet00000000000000002";

TEST(FleetArgs, TakesTheFleetShapeAndDefaults) {
  auto parsed = parse_fleet_args({"--server", "https://127.0.0.1:8443", "--state-dir=/tmp/f",
                                  "--ca", "ca.crt", "--agents", "10000", "--heartbeat", "10s",
                                  "--ramp", "2m", "--io-threads", "2", "--gpus", "4"});
  ASSERT_TRUE(parsed.options) << parsed.error;
  const auto& o = *parsed.options;
  EXPECT_EQ(o.server, (ServerUrl{"127.0.0.1", 8443}));
  EXPECT_EQ(o.state_dir, "/tmp/f");
  EXPECT_EQ(o.ca_file, "ca.crt");
  EXPECT_EQ(o.agents, 10000);
  EXPECT_EQ(o.heartbeat, milliseconds(10000));
  EXPECT_EQ(o.ramp, milliseconds(120000));
  EXPECT_EQ(o.io_threads, 2);
  EXPECT_EQ(o.node.gpus, 4);
  EXPECT_EQ(o.status_interval, milliseconds(10000));
  EXPECT_FALSE(o.enroll_from);
  EXPECT_FALSE(o.enroll_only);
}

TEST(FleetArgs, RefusesWhatItCannotUseWithOneLine) {
  using Args = std::vector<std::string>;
  Args base = {"--server", "https://cp:8443", "--state-dir", "d"};
  auto with = [&](Args more) {
    Args all = base;
    all.insert(all.end(), more.begin(), more.end());
    return parse_fleet_args(all);
  };
  EXPECT_NE(parse_fleet_args({"--state-dir", "d"}).error.find("--server"), std::string::npos);
  EXPECT_NE(parse_fleet_args({"--server", "http://cp", "--state-dir", "d"}).error.find("https"),
            std::string::npos);
  EXPECT_NE(with({"--agents", "0"}).error.find("--agents"), std::string::npos);
  EXPECT_NE(with({"--io-threads", "3"}).error.find("--io-threads"), std::string::npos);
  EXPECT_NE(with({"--heartbeat", "0s"}).error.find("--heartbeat"), std::string::npos);
  EXPECT_NE(with({"--heartbeat", "ten"}).error.find("--heartbeat"), std::string::npos);
  EXPECT_NE(with({"--topology", "ring"}).error.find("--topology"), std::string::npos);
  EXPECT_NE(with({"--colour", "blue"}).error.find("unknown flag --colour"), std::string::npos);
  EXPECT_NE(with({"--enroll-only"}).error.find("--enroll-from"), std::string::npos);
  EXPECT_NE(with({"--ramp"}).error.find("needs a value"), std::string::npos);
  EXPECT_TRUE(with({"--enroll-only", "--enroll-from", "f"}).options->enroll_only);
  EXPECT_TRUE(parse_fleet_args({"--help"}).help);
}

TEST(FleetArgs, ReadsDurations) {
  EXPECT_EQ(parse_duration("500ms"), milliseconds(500));
  EXPECT_EQ(parse_duration("10"), milliseconds(10000));
  EXPECT_EQ(parse_duration("1h"), milliseconds(3600000));
  EXPECT_EQ(parse_duration("-1s"), std::nullopt);
  EXPECT_EQ(parse_duration("5d"), std::nullopt);
}

TEST(EnrollFile, ReadsNodeAndTokenLinesSkippingCommentsAndBlanks) {
  std::string text =
      std::string("# node token\n\n") + kNodeA + " gpe_0a1b\r\n  " + kNodeB + "\tgpe_ff  \n";
  auto entries = parse_enroll_file(text);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0], (EnrollEntry{kNodeA, "gpe_0a1b"}));
  EXPECT_EQ(entries[1], (EnrollEntry{kNodeB, "gpe_ff"}));
  EXPECT_TRUE(parse_enroll_file("").empty());
}

TEST(EnrollFile, NamesTheLineOfAnythingElse) {
  auto error_of = [](const std::string& text) {
    try {
      parse_enroll_file(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  std::string a = kNodeA;
  EXPECT_EQ(error_of(a + " gpe_1\n" + a + " gpe_2\n"), "line 2: node " + a + " is given twice");
  EXPECT_EQ(error_of("\n" + a + "\n"), "line 2: expected 'node_id token'");
  EXPECT_EQ(error_of(a + " gpe_1 extra\n"), "line 1: expected 'node_id token'");
  // A node id names a folder: nothing but the id's own shape.
  EXPECT_EQ(error_of("../../etc gpe_1\n"), "line 1: '../../etc' is not a node id");
  EXPECT_EQ(error_of(a + " token\n"),
            "line 1: the enrolment token must be gpe_ and letters or digits");
  EXPECT_EQ(error_of(a + " gpe_a/b\n"),
            "line 1: the enrolment token must be gpe_ and letters or digits");
}

TEST(LatencyRecorder, SummarisesTheIntervalByNearestRankAndStartsAgain) {
  LatencyRecorder recorder;
  for (int ms = 1; ms <= 100; ++ms) recorder.record(std::chrono::milliseconds(ms));
  auto interval = recorder.take_interval();
  EXPECT_EQ(interval.count, 100u);
  EXPECT_DOUBLE_EQ(interval.p50_ms, 50);
  EXPECT_DOUBLE_EQ(interval.p99_ms, 99);
  EXPECT_DOUBLE_EQ(interval.max_ms, 100);
  EXPECT_EQ(recorder.take_interval().count, 0u);
  recorder.record(std::chrono::microseconds(2500));
  EXPECT_DOUBLE_EQ(recorder.take_interval().p99_ms, 2.5);
  EXPECT_EQ(recorder.total().count, 101u);
}

TEST(FleetStats, StatusLineIsOneJsonObjectWithTheLastError) {
  FleetStats stats;
  stats.agents = 3;
  stats.connected = 2;
  stats.error("nod_x: connect: refused");
  stats.heartbeat_rtt.record(std::chrono::milliseconds(4));
  std::string line = stats.status_line(1.5);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["agents"], 3);
  EXPECT_EQ(j["connected"], 2);
  EXPECT_EQ(j["errors"], 1);
  EXPECT_EQ(j["last_error"], "nod_x: connect: refused");
  EXPECT_EQ(j["heartbeat_ack"]["count"], 1);
  // Said once: the next line has no error to report.
  EXPECT_FALSE(nlohmann::json::parse(stats.status_line(2)).contains("last_error"));
  EXPECT_EQ(nlohmann::json::parse(stats.summary_line(3))["heartbeat_ack"]["count"], 1);
}

}  // namespace gpurent::agent::fleetsim::fleetsim_test
