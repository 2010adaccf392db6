// What a heartbeat does to a node's recorded health, without a database: the verdicts of
// each GPU (with and without the previous heartbeat's counters), the XID events with their
// GPU and severity, and the health events of each change against what is stored.
#include "fleet/heartbeat_verdict.h"
#include "core/sql.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpurent::fleet::heartbeat_verdict_test {

using inventory::Health;

namespace proto = agent_proto;
using ::testing::HasSubstr;

const Timestamp kAt = timestamp_from_micros(1'790'000'000'000'000);

proto::GpuTelemetry gpu(int index) {
  proto::GpuTelemetry g;
  g.index = index;
  g.pci_bus_id = "00000000:1" + std::to_string(index) + ":00.0";
  g.temperature_c = 40 + index;
  g.power_w = 100.5;
  g.utilization_pct = 10 * index;
  g.memory_used_mib = 1024;
  g.sm_clock_mhz = 1980 - index;
  g.ecc_volatile_dbe = 0;
  g.nvlink_crc_errors = 0;
  return g;
}

proto::Heartbeat beat(int gpus = 4) {
  proto::Heartbeat b;
  b.sent_at = kAt;
  for (int i = gpus - 1; i >= 0; --i) b.gpus.push_back(gpu(i));  // any order
  return b;
}

proto::XidEvent xid(const std::string& pci, int code, const std::string& message) {
  return {.pci = pci, .xid = code, .message = message};
}

TEST(JudgeHeartbeat, AHealthyHeartbeatIsRoutine) {
  auto v = judge_heartbeat("nod_1", kAt, beat(), std::nullopt);
  EXPECT_TRUE(v.routine());
  EXPECT_EQ(v.node.health, Health::kOk);
  EXPECT_EQ(v.node.reason, "");
  ASSERT_EQ(v.gpus.size(), 4u);
  for (const auto& [index, g] : v.gpus) EXPECT_EQ(g.health, Health::kOk) << index;
  EXPECT_TRUE(v.xid_events.empty());
}

TEST(JudgeHeartbeat, AnXidFindsItsGpuByBusAddressAndSetsItsHealth) {
  auto b = beat();
  b.events.push_back(xid("0000:12:00", 79, "GPU has fallen off the bus."));
  auto v = judge_heartbeat("nod_1", kAt, b, std::nullopt);
  EXPECT_FALSE(v.routine());
  EXPECT_EQ(v.node.health, Health::kCritical);
  EXPECT_THAT(v.node.reason, HasSubstr("GPU 2: XID 79"));
  EXPECT_EQ(v.gpus.at(2).health, Health::kCritical);
  EXPECT_EQ(v.gpus.at(1).health, Health::kOk);
  ASSERT_EQ(v.xid_events.size(), 1u);
  const auto& e = v.xid_events[0];
  EXPECT_EQ(e.node_id, "nod_1");
  EXPECT_EQ(e.at, kAt) << "the line carried no time";
  EXPECT_EQ(e.gpu_index, 2);
  EXPECT_EQ(e.kind, "xid");
  EXPECT_EQ(e.severity, "critical");
  EXPECT_EQ(e.xid, 79);
  EXPECT_EQ(e.reason, "XID 79 (GPU has fallen off the bus): GPU has fallen off the bus.");
}

TEST(JudgeHeartbeat, AnXidOnNoReportedGpuStillCountsForTheNode) {
  auto b = beat();
  auto line_time = kAt - std::chrono::seconds(7);
  b.events.push_back(xid("0000:ab:00", 48, "DBE (double bit error) ECC error"));
  b.events.back().at = line_time;
  auto v = judge_heartbeat("nod_1", kAt, b, std::nullopt);
  EXPECT_EQ(v.node.health, Health::kCritical);
  EXPECT_THAT(v.node.reason, HasSubstr("PCI 0000:ab:00: XID 48"));
  for (const auto& [index, g] : v.gpus) EXPECT_EQ(g.health, Health::kOk) << index;
  ASSERT_EQ(v.xid_events.size(), 1u);
  EXPECT_EQ(v.xid_events[0].gpu_index, std::nullopt);
  EXPECT_EQ(v.xid_events[0].at, line_time) << "the line's own time";
}

TEST(JudgeHeartbeat, AnApplicationsXidIsRecordedAndChangesNothing) {
  auto b = beat();
  b.events.push_back(xid("0000:10:00", 13, "Graphics SM Warp Exception"));
  auto v = judge_heartbeat("nod_1", kAt, b, std::nullopt);
  EXPECT_EQ(v.node.health, Health::kOk);
  EXPECT_EQ(v.gpus.at(0).health, Health::kOk);
  EXPECT_FALSE(v.routine()) << "the event is to be recorded";
  ASSERT_EQ(v.xid_events.size(), 1u);
  EXPECT_EQ(v.xid_events[0].severity, "info");
}

TEST(JudgeHeartbeat, CountersAreJudgedAgainstThePreviousHeartbeat) {
  auto first = beat();
  first.gpus[0].ecc_volatile_dbe = 2;  // GPU 3: a DBE since the driver loaded
  // Without a previous heartbeat a non-zero DBE count is critical: it rose since the load.
  EXPECT_EQ(judge_heartbeat("nod_1", kAt, first, std::nullopt).gpus.at(3).health,
            Health::kCritical);

  auto second = first;
  second.sent_at = kAt + std::chrono::seconds(10);
  second.gpus[1].nvlink_crc_errors = 50;  // GPU 2: 5 CRC errors a second
  auto v = judge_heartbeat("nod_1", second.sent_at, second, counters_of(first));
  EXPECT_EQ(v.gpus.at(3).health, Health::kOk) << "the same DBE count as before";
  EXPECT_EQ(v.gpus.at(2).health, Health::kWarning);
  EXPECT_THAT(v.gpus.at(2).reason, HasSubstr("NVLink CRC errors rose by 50 (5/s)"));
  EXPECT_EQ(v.node.health, Health::kWarning);

  // Without the previous counters a rise cannot be seen.
  EXPECT_EQ(judge_heartbeat("nod_1", kAt, second, std::nullopt).gpus.at(2).health, Health::kOk);
}

TEST(HealthChanges, EachChangeIsAnEventAndAFirstOkIsNot) {
  HeartbeatVerdict now{
      .node = {Health::kWarning, "GPU 1: clocks slowed down: hw_thermal_slowdown"}};
  now.gpus[0] = {Health::kOk, ""};
  now.gpus[1] = {Health::kWarning, "GPU 1: clocks slowed down: hw_thermal_slowdown"};
  now.gpus[2] = {Health::kOk, ""};
  StoredHealth stored{Health::kOk,
                      {{0, Health::kUnknown}, {1, Health::kOk}, {2, Health::kCritical}}};
  auto events = health_changes("nod_1", kAt, stored, now);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].gpu_index, std::nullopt);
  EXPECT_EQ(events[0].severity, "warning");
  EXPECT_EQ(events[0].reason, now.node.reason);
  EXPECT_EQ(events[1].gpu_index, 1);
  EXPECT_EQ(events[1].severity, "warning");
  EXPECT_EQ(events[2].gpu_index, 2);
  EXPECT_EQ(events[2].severity, "ok");
  EXPECT_EQ(events[2].reason, "back to ok from critical");
  for (const auto& e : events) {
    EXPECT_EQ(e.kind, "health");
    EXPECT_EQ(e.at, kAt);
    EXPECT_EQ(e.xid, std::nullopt);
  }
  // Nothing changed, nothing recorded; a GPU never stored counts as unknown.
  StoredHealth same{Health::kWarning, {{1, Health::kWarning}}};
  EXPECT_TRUE(health_changes("nod_1", kAt, same, now).empty());
}

TEST(PointsOf, TheChartedValuesInIndexOrder) {
  auto b = beat(3);
  b.gpus[0].power_w = std::nullopt;  // GPU 2 reported no power
  auto points = points_of(b);
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[0], (inventory::GpuPoint{0, 40, 100.5, 0, 1024, {}, 1980}));
  EXPECT_EQ(points[2], (inventory::GpuPoint{2, 42, std::nullopt, 20, 1024, {}, 1978}));
}

}  // namespace gpurent::fleet::heartbeat_verdict_test
