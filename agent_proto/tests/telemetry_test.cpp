// Tests the JSON form of GPU telemetry and XID events: absent optionals left out, round
// trips, and the strict readers refusing wrong types, ranges, sizes and unknown members with
// the path of the offending member.
#include "agent_proto/telemetry.h"
#include "agent_proto/tests/printers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace gpurent::agent_proto {

namespace telemetry_test {

using nlohmann::json;
using ::testing::HasSubstr;

GpuTelemetry full_gpu() {
  GpuTelemetry g;
  g.index = 3;
  g.uuid = "GPU-00000000-0000-0000-0000-000000000000";
  g.name = "NVIDIA H200";
  g.pci_bus_id = "00000000:83:00.0";
  g.temperature_c = 41.5;
  g.shutdown_temperature_c = 92;
  g.power_w = 77.25;
  g.power_limit_w = 700;
  g.utilization_pct = 99;
  g.sm_clock_mhz = 1980;
  g.memory_used_mib = 1;
  g.memory_total_mib = 143771;
  g.ecc_volatile_sbe = 2;
  g.ecc_volatile_dbe = 0;
  g.ecc_aggregate_dbe = 4;
  g.retired_pages_sbe = 5;
  g.retired_pages_dbe = 6;
  g.retired_pages_pending = false;
  g.remapped_rows_correctable = 7;
  g.remapped_rows_uncorrectable = 8;
  g.remapped_rows_pending = true;
  g.remapped_rows_failure = false;
  g.throttle_reasons = {"gpu_idle", "sw_power_cap"};
  g.nvlink_crc_errors = 9;
  g.nvlink_links_down = 1;
  g.pcie_replays = 10;
  return g;
}

XidEvent full_event() {
  XidEvent e;
  e.pci = "0000:83:00";
  e.xid = 79;
  e.pid = 1234;
  e.process = "python";
  e.message = "GPU has fallen off the bus.";
  e.at = Timestamp(std::chrono::seconds(1783116646) + std::chrono::microseconds(123456));
  return e;
}

// The ProtocolError of reading `value` as telemetry of "gpus[3]": its path and message.
struct Refusal {
  std::string path;
  std::string what;
};

Refusal gpu_refusal(const json& value) {
  try {
    gpu_telemetry_from_json(value, "gpus[3]");
  } catch (const ProtocolError& e) {
    return {e.path(), e.what()};
  }
  return {"(accepted)", ""};
}

Refusal event_refusal(const json& value) {
  try {
    xid_event_from_json(value, "xid_events[0]");
  } catch (const ProtocolError& e) {
    return {e.path(), e.what()};
  }
  return {"(accepted)", ""};
}

// ---- Encoding ----

TEST(TelemetryJson, MinimalGpuHasOnlyItsIndex) {
  GpuTelemetry g;
  g.index = 2;
  EXPECT_EQ(to_json(g), json({{"index", 2}}));
}

TEST(TelemetryJson, FullGpuUsesTheFieldNames) {
  auto j = to_json(full_gpu());
  EXPECT_EQ(j.size(), 26u);
  EXPECT_EQ(j["temperature_c"], 41.5);
  EXPECT_EQ(j["memory_total_mib"], 143771);
  EXPECT_EQ(j["sm_clock_mhz"], 1980);
  EXPECT_EQ(j["remapped_rows_pending"], true);
  EXPECT_EQ(j["throttle_reasons"], json({"gpu_idle", "sw_power_cap"}));
}

TEST(TelemetryJson, ZeroAndFalseAreKeptAbsentIsLeftOut) {
  GpuTelemetry g;
  g.ecc_volatile_dbe = 0;
  g.retired_pages_pending = false;
  auto j = to_json(g);
  EXPECT_EQ(j, json({{"index", 0}, {"ecc_volatile_dbe", 0}, {"retired_pages_pending", false}}));
}

TEST(TelemetryJson, EventWithAndWithoutOptionals) {
  EXPECT_EQ(to_json(full_event()), json({{"pci", "0000:83:00"},
                                         {"xid", 79},
                                         {"pid", 1234},
                                         {"process", "python"},
                                         {"message", "GPU has fallen off the bus."},
                                         {"at", "2026-07-03T22:10:46.123456Z"}}));
  XidEvent bare;
  bare.pci = "0000:83:00";
  bare.xid = 13;
  EXPECT_EQ(to_json(bare), json({{"pci", "0000:83:00"}, {"xid", 13}, {"message", ""}}));
}

TEST(TelemetryJson, WholeSecondsHaveNoFraction) {
  auto e = full_event();
  e.at = Timestamp(std::chrono::seconds(0));
  EXPECT_EQ(to_json(e)["at"], "1970-01-01T00:00:00Z");
  e.at = Timestamp(std::chrono::microseconds(1));
  EXPECT_EQ(to_json(e)["at"], "1970-01-01T00:00:00.000001Z");
}

// ---- Round trips ----

TEST(TelemetryJson, GpuRoundTrips) {
  for (const auto& g : {GpuTelemetry{}, full_gpu()}) {
    EXPECT_EQ(gpu_telemetry_from_json(json::parse(to_json(g).dump()), "gpus[0]"), g);
  }
}

TEST(TelemetryJson, EventRoundTrips) {
  auto e = full_event();
  EXPECT_EQ(xid_event_from_json(json::parse(to_json(e).dump()), "e"), e);
  e.pid.reset();
  e.process.reset();
  e.at.reset();
  EXPECT_EQ(xid_event_from_json(to_json(e), "e"), e);
  for (auto t : {"0001-01-01T00:00:00Z", "2024-02-29T23:59:59.999999Z", "9999-12-31T00:00:00.5Z"}) {
    auto j = to_json(full_event());
    j["at"] = t;
    auto read = xid_event_from_json(j, "e");
    EXPECT_EQ(xid_event_from_json(to_json(read), "e"), read) << t;
  }
}

TEST(TelemetryJson, ReadsAFractionOfASecond) {
  auto j = to_json(full_event());
  j["at"] = "2026-07-03T22:10:46.5Z";
  EXPECT_EQ(xid_event_from_json(j, "e").at,
            Timestamp(std::chrono::seconds(1783116646) + std::chrono::milliseconds(500)));
}

TEST(TelemetryJson, IntegerTemperatureAndBoundsAreAccepted) {
  for (auto [key, value] : std::vector<std::pair<std::string, json>>{
           {"temperature_c", -50},
           {"temperature_c", 200},
           {"shutdown_temperature_c", 0},
           {"power_w", 0},
           {"utilization_pct", 0},
           {"utilization_pct", 100},
           {"sm_clock_mhz", 0},
           {"sm_clock_mhz", 20000},
           {"memory_used_mib", 0},
           {"pcie_replays", 9007199254740991},
           {"nvlink_links_down", 0},
           {"throttle_reasons", json::array()},
       }) {
    json j{{"index", 0}, {key, value}};
    EXPECT_EQ(gpu_refusal(j).path, "(accepted)") << j.dump();
  }
}

// ---- Refusals ----

struct BadMember {
  std::string key;
  json value;
  std::string path;    // the path the error must name
  std::string reason;  // part of the message
};

TEST(TelemetryJson, RefusesBadGpuMembersNamingThePath) {
  const std::vector<BadMember> cases = {
      {"temperature_c", -50.5, "gpus[3].temperature_c", "from -50 to 200"},
      {"temperature_c", 201, "gpus[3].temperature_c", "from -50 to 200"},
      {"temperature_c", "41", "gpus[3].temperature_c", "must be a number, not a string"},
      {"temperature_c", nullptr, "gpus[3].temperature_c", "not a null"},
      {"shutdown_temperature_c", 1e300, "gpus[3].shutdown_temperature_c", "from -50"},
      {"power_w", -1, "gpus[3].power_w", "from 0"},
      {"power_limit_w", true, "gpus[3].power_limit_w", "a boolean"},
      {"utilization_pct", 101, "gpus[3].utilization_pct", "from 0 to 100"},
      {"utilization_pct", -1, "gpus[3].utilization_pct", "from 0 to 100"},
      {"utilization_pct", 50.5, "gpus[3].utilization_pct", "must be an integer"},
      {"sm_clock_mhz", 20001, "gpus[3].sm_clock_mhz", "from 0 to 20000"},
      {"sm_clock_mhz", 1980.5, "gpus[3].sm_clock_mhz", "must be an integer"},
      {"memory_used_mib", -1, "gpus[3].memory_used_mib", "from 0"},
      {"memory_total_mib", 18446744073709551615u, "gpus[3].memory_total_mib", "from 0"},
      {"ecc_volatile_sbe", 9007199254740992, "gpus[3].ecc_volatile_sbe", "from 0"},
      {"ecc_volatile_dbe", json::array(), "gpus[3].ecc_volatile_dbe", "an array"},
      {"ecc_aggregate_dbe", 1.0, "gpus[3].ecc_aggregate_dbe", "must be an integer"},
      {"retired_pages_sbe", -5, "gpus[3].retired_pages_sbe", "from 0"},
      {"retired_pages_dbe", "6", "gpus[3].retired_pages_dbe", "must be an integer"},
      {"retired_pages_pending", 1, "gpus[3].retired_pages_pending", "true or false"},
      {"remapped_rows_correctable", -1, "gpus[3].remapped_rows_correctable", "from 0"},
      {"remapped_rows_uncorrectable", -1, "gpus[3].remapped_rows_uncorrectable", "from 0"},
      {"remapped_rows_pending", "yes", "gpus[3].remapped_rows_pending", "true or false"},
      {"remapped_rows_failure", nullptr, "gpus[3].remapped_rows_failure", "true or false"},
      {"nvlink_crc_errors", -1, "gpus[3].nvlink_crc_errors", "from 0"},
      {"nvlink_links_down", 1025, "gpus[3].nvlink_links_down", "from 0 to 1024"},
      {"pcie_replays", json::object(), "gpus[3].pcie_replays", "an object"},
      {"uuid", 5, "gpus[3].uuid", "must be a string"},
      {"uuid", "", "gpus[3].uuid", "must not be empty"},
      {"name", std::string(129, 'x'), "gpus[3].name", "at most 128 bytes"},
      {"pci_bus_id", "00:01\n", "gpus[3].pci_bus_id", "control characters"},
      {"throttle_reasons", "sw_power_cap", "gpus[3].throttle_reasons", "must be an array"},
      {"throttle_reasons", json({"sw_power_cap", 3}), "gpus[3].throttle_reasons[1]",
       "must be a string"},
      {"throttle_reasons", json({"SW Power Cap"}), "gpus[3].throttle_reasons[0]", "reason name"},
      {"throttle_reasons", json({"a", "a"}), "gpus[3].throttle_reasons[1]", "listed twice"},
      {"throttle_reasons", json(std::vector<std::string>(33, "x")), "gpus[3].throttle_reasons",
       "at most 32"},
      {"index", -1, "gpus[3].index", "from 0 to 1023"},
      {"index", "0", "gpus[3].index", "must be an integer"},
      {"temperature", 40, "gpus[3].temperature", "unknown member"},
  };
  for (const auto& c : cases) {
    json j{{"index", 0}};
    j[c.key] = c.value;
    auto r = gpu_refusal(j);
    EXPECT_EQ(r.path, c.path) << j.dump();
    EXPECT_THAT(r.what, HasSubstr(c.reason)) << j.dump();
  }
}

TEST(TelemetryJson, RefusesANonObjectOrAMissingIndex) {
  for (const auto& j : {json(nullptr), json(3), json::array(), json("gpu")}) {
    EXPECT_EQ(gpu_refusal(j).path, "gpus[3]") << j.dump();
    EXPECT_THAT(gpu_refusal(j).what, HasSubstr("must be an object"));
  }
  auto r = gpu_refusal(json::object());
  EXPECT_EQ(r.path, "gpus[3].index");
  EXPECT_THAT(r.what, HasSubstr("is required"));
}

TEST(TelemetryJson, UnknownMemberNamesArePrintableAndShort) {
  json j{{"index", 0}, {std::string("\x01\xc3\xa9") + std::string(200, 'k'), 1}};
  auto r = gpu_refusal(j);
  EXPECT_LT(r.path.size(), 60u);
  for (char c : r.what) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << r.what;
  EXPECT_THAT(r.what, HasSubstr("unknown member"));
}

TEST(TelemetryJson, AnEmptyPathNamesTheBareMember) {
  try {
    gpu_telemetry_from_json(json{{"index", 0}, {"power_w", -3}}, "");
    ADD_FAILURE() << "accepted";
  } catch (const ProtocolError& e) {
    EXPECT_EQ(e.path(), "power_w");
  }
}

TEST(TelemetryJson, RefusesBadEventMembersNamingThePath) {
  const std::vector<BadMember> cases = {
      {"pci", 83, "xid_events[0].pci", "must be a string"},
      {"pci", "", "xid_events[0].pci", "must not be empty"},
      {"pci", std::string(129, '0'), "xid_events[0].pci", "at most 128"},
      {"xid", 0, "xid_events[0].xid", "from 1 to 9999"},
      {"xid", 10000, "xid_events[0].xid", "from 1 to 9999"},
      {"xid", "79", "xid_events[0].xid", "must be an integer"},
      {"pid", -1, "xid_events[0].pid", "from 0"},
      {"pid", 2147483648, "xid_events[0].pid", "from 0"},
      {"pid", "<unknown>", "xid_events[0].pid", "must be an integer"},
      {"process", "", "xid_events[0].process", "must not be empty"},
      {"process", std::string(129, 'p'), "xid_events[0].process", "at most 128"},
      {"message", std::string(513, 'm'), "xid_events[0].message", "at most 512"},
      {"message", "a\tb", "xid_events[0].message", "control characters"},
      {"at", 1783116646, "xid_events[0].at", "must be a string"},
      {"at", "2026-07-03 22:10:46Z", "xid_events[0].at", "UTC time"},
      {"at", "2026-07-03T22:10:46+00:00", "xid_events[0].at", "UTC time"},
      {"at", "2026-02-30T22:10:46Z", "xid_events[0].at", "UTC time"},
      {"at", "2026-07-03T24:00:00Z", "xid_events[0].at", "UTC time"},
      {"at", "2026-07-03T22:10:46.1234567Z", "xid_events[0].at", "UTC time"},
      {"at", "2026-07-03T22:10:46.Z", "xid_events[0].at", "UTC time"},
      {"at", "Jul  3 22:10:46", "xid_events[0].at", "UTC time"},
      {"channel", 1, "xid_events[0].channel", "unknown member"},
  };
  for (const auto& c : cases) {
    auto j = to_json(full_event());
    j[c.key] = c.value;
    auto r = event_refusal(j);
    EXPECT_EQ(r.path, c.path) << j.dump();
    EXPECT_THAT(r.what, HasSubstr(c.reason)) << j.dump();
  }
}

TEST(TelemetryJson, EventNeedsPciXidAndMessage) {
  for (auto key : {"pci", "xid", "message"}) {
    auto j = to_json(full_event());
    j.erase(key);
    auto r = event_refusal(j);
    EXPECT_EQ(r.path, std::string("xid_events[0].") + key);
    EXPECT_THAT(r.what, HasSubstr("is required"));
  }
  EXPECT_THAT(event_refusal(json::array()).what, HasSubstr("must be an object"));
}

}  // namespace telemetry_test
}  // namespace gpurent::agent_proto
