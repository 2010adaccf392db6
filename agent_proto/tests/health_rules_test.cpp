// Tests the health rules cell by cell: every XID of health-rules.md and the catalog, every
// telemetry signal on its own and at its thresholds, and the node's heartbeat silence.
#include "agent_proto/health_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpurent::agent_proto {

void PrintTo(const HealthVerdict& v, std::ostream* os) {
  *os << to_string(v.severity) << " [";
  for (const auto& f : v.findings) *os << to_string(f.severity) << ": " << f.reason << "; ";
  *os << "]";
}

namespace health_rules_test {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

XidEvent xid(int code, std::string message = "") {
  XidEvent e;
  e.pci = "0000:83:00";
  e.xid = code;
  e.message = std::move(message);
  return e;
}

GpuTelemetry healthy() {
  GpuTelemetry g;
  g.index = 2;
  g.temperature_c = 45;
  g.shutdown_temperature_c = 87;
  g.ecc_volatile_dbe = 0;
  g.retired_pages_sbe = 0;
  g.retired_pages_dbe = 0;
  g.retired_pages_pending = false;
  g.remapped_rows_pending = false;
  g.remapped_rows_failure = false;
  g.nvlink_crc_errors = 10;
  g.nvlink_links_down = 0;
  g.pcie_replays = 100;
  g.throttle_reasons = {"gpu_idle"};
  return g;
}

// ---- Severity names ----

TEST(Severity, NamesRoundTrip) {
  for (auto s : {Severity::kOk, Severity::kInfo, Severity::kWarning, Severity::kCritical}) {
    EXPECT_EQ(parse_severity(to_string(s)), s);
  }
  EXPECT_EQ(parse_severity("fatal"), std::nullopt);
  EXPECT_EQ(parse_severity("OK"), std::nullopt);
}

// ---- XIDs ----

TEST(SeverityOfXid, TheTableOfHealthRulesAndTheCatalog) {
  struct Case {
    int xid;
    Severity expected;
  };
  const std::vector<Case> cases = {
      // health-rules.md
      {13, Severity::kInfo},
      {45, Severity::kInfo},
      {31, Severity::kWarning},
      {43, Severity::kWarning},
      {62, Severity::kWarning},
      {63, Severity::kWarning},
      {92, Severity::kWarning},
      {94, Severity::kWarning},
      {48, Severity::kCritical},
      {64, Severity::kCritical},
      {74, Severity::kCritical},
      {79, Severity::kCritical},
      {95, Severity::kCritical},
      {119, Severity::kCritical},
      {120, Severity::kCritical},
      {140, Severity::kCritical},
      // xid_catalog.csv: RESTART_APP
      {8, Severity::kInfo},
      {32, Severity::kInfo},
      // RESET_GPU, CHECK_MECHANICALS, CONTACT_SUPPORT, IGNORE with support follow-up
      {46, Severity::kWarning},
      {54, Severity::kWarning},
      {61, Severity::kWarning},
      {93, Severity::kWarning},
      {109, Severity::kWarning},
      {110, Severity::kWarning},
      {121, Severity::kWarning},
      {136, Severity::kWarning},
      {137, Severity::kWarning},
      {143, Severity::kWarning},
      {154, Severity::kWarning},
      {155, Severity::kWarning},
      {156, Severity::kWarning},
      {157, Severity::kWarning},
      {158, Severity::kWarning},
      // in neither table
      {1, Severity::kWarning},
      {44, Severity::kWarning},
      {999, Severity::kWarning},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(severity_of(xid(c.xid)), c.expected) << "XID " << c.xid;
  }
}

TEST(SeverityOfXid, Nvlink5FatalOrNot) {
  // Messages as real NVLink5 lines carry them (fixtures/xid/gpud-pr1160-pr1174_kmsg-nvlink5.log).
  EXPECT_EQ(severity_of(xid(149, "NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x026001c6 0x00000000)")),
            Severity::kCritical);
  EXPECT_EQ(severity_of(xid(145, "RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2)")),
            Severity::kWarning);
  EXPECT_EQ(severity_of(xid(144, "SAW_MVB Nonfatal XC0 i0 Link 0")), Severity::kWarning);
  EXPECT_EQ(severity_of(xid(150, "")), Severity::kWarning);
  EXPECT_EQ(severity_of(xid(147, "Fatal")), Severity::kCritical);
  EXPECT_EQ(severity_of(xid(147, "NotFatalish")), Severity::kWarning);
}

// ---- One GPU ----

TEST(GpuHealth, HealthyIsOkWithNoFindings) {
  auto v = gpu_health(healthy(), healthy(), {});
  EXPECT_EQ(v, HealthVerdict{});
  EXPECT_EQ(gpu_health(std::nullopt, GpuTelemetry{}, {}), HealthVerdict{});
}

TEST(GpuHealth, InfoEventsAreRecordedButChangeNothing) {
  auto v = gpu_health(healthy(), healthy(), {xid(13, "Graphics Exception"), xid(45)});
  EXPECT_EQ(v.severity, Severity::kOk);
  ASSERT_EQ(v.findings.size(), 2u);
  EXPECT_EQ(v.findings[0].severity, Severity::kInfo);
  EXPECT_EQ(v.findings[0].reason,
            "GPU 2: XID 13 (graphics engine exception (application error)): "
            "Graphics Exception");
}

TEST(GpuHealth, TheWorstEventWins) {
  auto v = gpu_health(healthy(), healthy(), {xid(13), xid(31), xid(79, "fell"), xid(43)});
  EXPECT_EQ(v.severity, Severity::kCritical);
  EXPECT_EQ(v.findings.size(), 4u);
  EXPECT_THAT(v.findings[2].reason, HasSubstr("XID 79 (GPU has fallen off the bus): fell"));
}

// Each row changes one signal of a healthy GPU.
struct SignalCase {
  std::string name;
  std::optional<GpuTelemetry> previous;
  GpuTelemetry current;
  std::chrono::seconds since_previous;
  Severity expected;
  std::string reason;  // part of the one finding, "" when none
};

std::vector<SignalCase> signal_cases() {
  std::vector<SignalCase> cases;
  auto with = [](auto change) {
    auto g = healthy();
    change(g);
    return g;
  };
  auto add = [&](std::string name, std::optional<GpuTelemetry> prev, GpuTelemetry cur,
                 Severity expected, std::string reason, std::chrono::seconds since = 0s) {
    cases.push_back(
        {std::move(name), std::move(prev), std::move(cur), since, expected, std::move(reason)});
  };
  // Double-bit ECC
  add("dbe rises", healthy(), with([](auto& g) { g.ecc_volatile_dbe = 1; }), Severity::kCritical,
      "volatile double-bit ECC errors rose from 0 to 1");
  add("dbe steady", with([](auto& g) { g.ecc_volatile_dbe = 3; }),
      with([](auto& g) { g.ecc_volatile_dbe = 3; }), Severity::kOk, "");
  add("dbe nonzero, first sample", std::nullopt, with([](auto& g) { g.ecc_volatile_dbe = 2; }),
      Severity::kCritical, "rose from 0 to 2");
  add("dbe after driver reload", with([](auto& g) { g.ecc_volatile_dbe = 5; }),
      with([](auto& g) { g.ecc_volatile_dbe = 1; }), Severity::kCritical, "rose from 0 to 1");
  add("dbe reset to zero", with([](auto& g) { g.ecc_volatile_dbe = 5; }), healthy(), Severity::kOk,
      "");
  add("dbe unknown", healthy(), with([](auto& g) { g.ecc_volatile_dbe.reset(); }), Severity::kOk,
      "");
  // Retired pages
  add("retired 62", healthy(), with([](auto& g) {
        g.retired_pages_sbe = 60;
        g.retired_pages_dbe = 2;
      }),
      Severity::kOk, "");
  add("retired 63", healthy(), with([](auto& g) {
        g.retired_pages_sbe = 60;
        g.retired_pages_dbe = 3;
      }),
      Severity::kCritical, "63 retired pages (limit 63)");
  add("retired dbe only", healthy(), with([](auto& g) {
        g.retired_pages_sbe.reset();
        g.retired_pages_dbe = 64;
      }),
      Severity::kCritical, "64 retired pages");
  add("retirement pending", healthy(), with([](auto& g) { g.retired_pages_pending = true; }),
      Severity::kWarning, "page retirement pending");
  // Row remapping
  add("remap pending", healthy(), with([](auto& g) { g.remapped_rows_pending = true; }),
      Severity::kWarning, "row remapping pending");
  add("remap failure", healthy(), with([](auto& g) { g.remapped_rows_failure = true; }),
      Severity::kCritical, "row remapping failed");
  // Temperature
  add("below limit", healthy(), with([](auto& g) { g.temperature_c = 86.5; }), Severity::kOk, "");
  add("at limit", healthy(), with([](auto& g) { g.temperature_c = 87; }), Severity::kCritical,
      "temperature 87 C at or above the limit of 87 C");
  add("limit unknown", healthy(), with([](auto& g) {
        g.temperature_c = 120;
        g.shutdown_temperature_c.reset();
      }),
      Severity::kOk, "");
  // Throttling
  for (auto reason :
       {"hw_slowdown", "hw_thermal_slowdown", "sw_thermal_slowdown", "hw_power_brake_slowdown"}) {
    add(std::string("slowdown ") + reason, healthy(), with([&](auto& g) {
          g.throttle_reasons = {"gpu_idle", reason};
        }),
        Severity::kWarning, std::string("clocks slowed down: ") + reason);
  }
  for (auto reason : {"sw_power_cap", "applications_clocks_setting", "sync_boost"}) {
    add(std::string("benign ") + reason, healthy(),
        with([&](auto& g) { g.throttle_reasons = {reason}; }), Severity::kOk, "");
  }
  // NVLink
  add("link down", healthy(), with([](auto& g) { g.nvlink_links_down = 1; }), Severity::kCritical,
      "1 NVLink link(s) down");
  add("crc rising", healthy(), with([](auto& g) { g.nvlink_crc_errors = 11; }), Severity::kWarning,
      "NVLink CRC errors rose by 1");
  add("crc rising slowly", healthy(), with([](auto& g) { g.nvlink_crc_errors = 1009; }),
      Severity::kWarning, "rose by 999 (33.3/s)", 30s);
  add("crc at 100/s", healthy(), with([](auto& g) { g.nvlink_crc_errors = 3010; }),
      Severity::kCritical, "rose by 3000 (100/s)", 30s);
  add("crc without a previous sample", std::nullopt, healthy(), Severity::kOk, "");
  add("crc counter reset", with([](auto& g) { g.nvlink_crc_errors = 500; }), healthy(),
      Severity::kOk, "");
  // PCIe replays: more than 16 a minute
  add("replays 16/min", healthy(), with([](auto& g) { g.pcie_replays = 116; }), Severity::kOk, "",
      60s);
  add("replays 17/min", healthy(), with([](auto& g) { g.pcie_replays = 117; }), Severity::kWarning,
      "PCIe replays rose by 17 (17/min)", 60s);
  add("replays 10 in 30 s", healthy(), with([](auto& g) { g.pcie_replays = 110; }),
      Severity::kWarning, "(20/min)", 30s);
  add("replays, interval unknown", healthy(), with([](auto& g) { g.pcie_replays = 117; }),
      Severity::kWarning, "(17/min)");
  return cases;
}

TEST(GpuHealth, EachSignalOnItsOwn) {
  for (const auto& c : signal_cases()) {
    auto v = gpu_health(c.previous, c.current, {}, c.since_previous);
    EXPECT_EQ(v.severity, c.expected) << c.name << ": " << ::testing::PrintToString(v);
    if (c.reason.empty()) {
      EXPECT_TRUE(v.findings.empty()) << c.name << ": " << ::testing::PrintToString(v);
    } else {
      ASSERT_EQ(v.findings.size(), 1u) << c.name << ": " << ::testing::PrintToString(v);
      EXPECT_THAT(v.findings[0].reason, HasSubstr(c.reason)) << c.name;
      EXPECT_THAT(v.findings[0].reason, HasSubstr("GPU 2: ")) << c.name;
    }
  }
}

TEST(GpuHealth, LimitsCanBeTightened) {
  GpuHealthLimits strict;
  strict.max_retired_pages = 10;
  strict.pcie_replays_per_minute = 1;
  auto cur = healthy();
  cur.retired_pages_sbe = 10;
  cur.pcie_replays = 102;
  auto v = gpu_health(healthy(), cur, {}, 60s, strict);
  EXPECT_EQ(v.severity, Severity::kCritical);
  EXPECT_EQ(v.findings.size(), 2u);
}

TEST(GpuHealth, SeveralSignalsAllReported) {
  auto cur = healthy();
  cur.ecc_volatile_dbe = 1;
  cur.remapped_rows_pending = true;
  cur.throttle_reasons = {"hw_thermal_slowdown"};
  auto v = gpu_health(healthy(), cur, {xid(48)});
  EXPECT_EQ(v.severity, Severity::kCritical);
  EXPECT_EQ(v.findings.size(), 4u);
}

// ---- Matching events to GPUs ----

TEST(SamePciDevice, XidAddressesAgainstBusIds) {
  EXPECT_TRUE(same_pci_device("0000:83:00", "00000000:83:00.0"));
  EXPECT_TRUE(same_pci_device("0000:83:00.0", "00000000:83:00.0"));
  EXPECT_TRUE(same_pci_device("83:00", "00000000:83:00.0"));
  EXPECT_TRUE(same_pci_device("0000:0a:00", "00000000:0A:00.0"));
  EXPECT_TRUE(same_pci_device("0019:01:00", "00000019:01:00.0"));
  EXPECT_FALSE(same_pci_device("0000:83:00", "00000000:84:00.0"));
  EXPECT_FALSE(same_pci_device("0001:83:00", "00000000:83:00.0"));
  EXPECT_FALSE(same_pci_device("0000:83:01", "00000000:83:00.0"));
  EXPECT_FALSE(same_pci_device("", "00000000:83:00.0"));
  EXPECT_FALSE(same_pci_device("zz:83:00", "00000000:83:00.0"));
  EXPECT_FALSE(same_pci_device("0000:83:00", ""));
  EXPECT_FALSE(same_pci_device("123456789:83:00", "00000000:83:00.0"));
}

// ---- The node ----

TEST(NodeHealth, HeartbeatSilence) {
  struct Case {
    std::chrono::seconds since;
    Severity expected;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {0s, Severity::kOk, ""},
      {14s, Severity::kOk, ""},
      {29s, Severity::kOk, ""},
      {30s, Severity::kWarning, "no heartbeat for 30 s (due every 15 s)"},
      {60s, Severity::kWarning, "no heartbeat for 60 s"},
      {61s, Severity::kCritical, "no heartbeat for 61 s (limit 60 s): node unreachable"},
      {3600s, Severity::kCritical, "node unreachable"},
  };
  for (const auto& c : cases) {
    auto v = node_health({}, c.since, 15s);
    EXPECT_EQ(v.severity, c.expected) << c.since.count();
    if (c.reason.empty()) {
      EXPECT_TRUE(v.findings.empty()) << c.since.count();
    } else {
      ASSERT_EQ(v.findings.size(), 1u) << c.since.count();
      EXPECT_THAT(v.findings[0].reason, HasSubstr(c.reason));
    }
  }
  EXPECT_EQ(node_health({}, 100s, 15s, 120s).severity, Severity::kWarning);
  EXPECT_EQ(node_health({}, 121s, 15s, 120s).severity, Severity::kCritical);
}

TEST(NodeHealth, TheWorstGpuAndTheHeartbeatCombine) {
  auto ok = gpu_health(healthy(), healthy(), {xid(13)});
  auto hot = healthy();
  hot.throttle_reasons = {"hw_thermal_slowdown"};
  auto warning = gpu_health(healthy(), hot, {});
  auto critical = gpu_health(healthy(), healthy(), {xid(79)});

  auto v = node_health({ok, warning}, 5s, 15s);
  EXPECT_EQ(v.severity, Severity::kWarning);
  EXPECT_EQ(v.findings.size(), 2u);  // the info finding is kept

  v = node_health({ok, warning, critical}, 5s, 15s);
  EXPECT_EQ(v.severity, Severity::kCritical);

  v = node_health({ok}, 90s, 15s);
  EXPECT_EQ(v.severity, Severity::kCritical);
  EXPECT_THAT(v.findings[0].reason, HasSubstr("unreachable"));

  EXPECT_EQ(node_health({ok, ok}, 1s, 15s).severity, Severity::kOk);
}

}  // namespace health_rules_test
}  // namespace gpurent::agent_proto
