// The tenant's telemetry against a real PostgreSQL (scheduler/rental_telemetry.h): only the
// rental's GPUs, only within its period — nothing from before its start, nothing after it left
// service though the node kept reporting — averaged per step, with the energy its GPUs drew;
// another org's rental is not found.
#include "core/error.h"
#include "scheduler/rental_telemetry.h"
#include "scheduler/tests/lifecycle_fixture.h"

#include <gtest/gtest.h>

namespace gpurent::scheduler {
namespace rental_telemetry_pgtest {

class RentalTelemetryTest : public LifecycleTest {
 protected:
  // A sample of every GPU of the node: GPU i at `watts` + i W, utilisation 10·i %; GPU 2
  // thermally throttled when `hot`.
  void sample(const std::string& node, Timestamp at, double watts, bool hot = false) {
    inventory::TelemetrySample s{.node_id = node, .at = at, .telemetry = nlohmann::json::array()};
    for (int i = 0; i < 8; ++i) {
      s.gpus.push_back({.index = i,
                        .temperature_c = 40.0 + i,
                        .power_w = watts + i,
                        .utilization_pct = 10 * i,
                        .memory_used_mib = 2048,
                        .sm_clock_mhz = hot && i == 2 ? 1095 : 1980});
      nlohmann::json gpu = {{"index", i}};
      if (hot && i == 2) gpu["throttle_reasons"] = {"hw_thermal_slowdown"};
      s.telemetry.push_back(std::move(gpu));
    }
    transact([&](Tx& tx) {
      log_.record_samples(tx, {s});
      return 0;
    });
  }

  void move(const std::string& id, RentalState from, RentalState to) {
    transact([&](Tx& tx) { return rentals_.transition(tx, id, from, to, "test"); });
  }

  inventory::NodeHealthLog log_;
  RentalTelemetry telemetry_{pool_, clock_, rentals_};
};

TEST_F(RentalTelemetryTest, OnlyTheRentalsGpusWithinItsPeriodAveragedWithItsEnergy) {
  std::string n = node("n1");
  Timestamp start = clock_.now() + std::chrono::minutes(10);
  std::string id = book(a_, n, {2, 3}, {start, start + H(24)});
  Caller owner{.org_id = a_.org_id};
  EXPECT_TRUE(telemetry_.read(owner, id, {}, {}, {})["gpus"].empty()) << "not started yet";

  // The node reports every minute from before the rental until after it was released.
  for (int m = 0; m <= 40; ++m) {
    // GPU 2 runs hot at the rental's 12th minute.
    sample(n, start - std::chrono::minutes(5) + std::chrono::minutes(m), 300, m == 5 + 12);
  }
  // The node's events: only GPU 2's XID and GPU 3's health change within the rental's own
  // time are its tenant's.
  auto event = [&](int minute, std::optional<int> gpu, std::optional<int> xid) {
    return inventory::HealthEvent{.node_id = n,
                                  .at = start + std::chrono::minutes(minute),
                                  .gpu_index = gpu,
                                  .kind = xid ? "xid" : "health",
                                  .severity = xid ? "critical" : "warning",
                                  .xid = xid,
                                  .reason = "event at " + std::to_string(minute)};
  };
  transact([&](Tx& tx) {
    log_.record_events(
        tx, {event(-2, 2, 48), event(3, 2, 79), event(4, 5, 48),
             event(6, std::nullopt, std::nullopt), event(7, 3, std::nullopt), event(25, 3, 94)});
    return 0;
  });
  clock_.advance(std::chrono::minutes(10));  // its start
  move(id, RentalState::kScheduled, RentalState::kProvisioning);
  move(id, RentalState::kProvisioning, RentalState::kActive);
  clock_.advance(std::chrono::minutes(20) - std::chrono::seconds(30));
  move(id, RentalState::kActive, RentalState::kReleasing);  // released early, before start + 20 min
  const Timestamp left = clock_.now();
  clock_.advance(std::chrono::minutes(15));  // the node keeps reporting for the next tenant

  auto t = telemetry_.read(owner, id, {}, {}, std::chrono::seconds(300));
  ASSERT_EQ(t["gpus"].size(), 2u) << t.dump();
  EXPECT_EQ(t["gpus"][0]["index"], 2);
  EXPECT_EQ(t["gpus"][1]["index"], 3);
  EXPECT_EQ(t["from"], format_rfc3339(start));
  EXPECT_EQ(t["to"], format_rfc3339(left));
  EXPECT_EQ(t["step_s"], 300);
  const auto& samples = t["gpus"][0]["samples"];
  ASSERT_EQ(samples.size(), 4u) << "20 minutes in steps of 5: " << t.dump();
  for (const auto& s : samples) {
    EXPECT_GE(s["at"].get<std::string>(), format_rfc3339(start));
    EXPECT_LT(s["at"].get<std::string>(), format_rfc3339(left));
    EXPECT_EQ(s["power_w"], 302.0);
    EXPECT_EQ(s["utilization_pct"], 20.0);
    EXPECT_EQ(s["memory_used_gb"], 2.0);
    // The step holding the 12th minute had GPU 2 throttled (its clock down to 1095 MHz for
    // one of the step's five samples); the others none.
    bool hot_step = s["at"] == format_rfc3339(start + std::chrono::minutes(10));
    EXPECT_EQ(s["sm_clock_mhz"], hot_step ? (4 * 1980.0 + 1095) / 5 : 1980.0) << s.dump();
    EXPECT_EQ(s["throttle_reasons"],
              hot_step ? nlohmann::json::array({"hw_thermal_slowdown"}) : nlohmann::json::array())
        << s.dump();
  }
  // Two GPUs, 302 W and 303 W, between the samples of its 20 minutes (19 one-minute gaps).
  double expected_kwh = (302.0 + 303.0) * 19 * 60 / 3.6e6;
  EXPECT_NEAR(t["energy_kwh"].get<double>(), expected_kwh, 1e-9);
  // The invoice line's energy: the rental's own copy within the month, the same figure; the
  // samples after its early release are not its own.
  EXPECT_EQ(transact([&](Tx& tx) { return telemetry_.keep(tx, clock_.now()).first; }), 20);
  auto month = [&](int shift) {
    auto lines = transact([&](Tx& tx) {
      // YYYY-MM-01 of the month `shift` months after the start's, and of the one after it.
      auto first_of = [&](int months) {
        return format_rfc3339(start + H(24 * 31 * months)).substr(0, 8) + "01";
      };
      return telemetry_.energy_kwh(tx, a_.org_id, {id, "rnt_none"}, first_of(shift),
                                   first_of(shift + 1), "UTC");
    });
    return lines;
  };
  ASSERT_EQ(month(0).size(), 1u) << "a rental with no samples is left out";
  EXPECT_NEAR(month(0).at(id), expected_kwh, 1e-9);
  EXPECT_TRUE(month(1).empty()) << "nothing in the next month";
  EXPECT_TRUE(transact([&](Tx& tx) {
                return telemetry_.energy_kwh(tx, b_.org_id, {id}, "2000-01-01", "2100-01-01",
                                             "UTC");
              }).empty())
      << "another org's rental";

  ASSERT_EQ(t["events"].size(), 2u) << t["events"].dump();
  EXPECT_EQ(t["events"][0]["gpu_index"], 2);
  EXPECT_EQ(t["events"][0]["xid"], 79);
  EXPECT_EQ(t["events"][0]["kind"], "xid");
  EXPECT_EQ(t["events"][0]["at"], format_rfc3339(start + std::chrono::minutes(3)));
  EXPECT_EQ(t["events"][1]["gpu_index"], 3);
  EXPECT_EQ(t["events"][1]["kind"], "health");
  EXPECT_TRUE(t["events"][1]["xid"].is_null());
  EXPECT_EQ(t["events"][1]["reason"], "event at 7");

  // A narrower window inside the period, and one asked for outside it.
  auto narrow = telemetry_.read(owner, id, start + std::chrono::minutes(5),
                                start + std::chrono::minutes(10), std::chrono::seconds(60));
  EXPECT_EQ(narrow["gpus"][0]["samples"].size(), 5u) << narrow.dump();
  auto before = telemetry_.read(owner, id, start - H(1), start, {});
  EXPECT_TRUE(before["gpus"].empty()) << "nothing before its start: " << before.dump();

  try {
    telemetry_.read(Caller{.org_id = b_.org_id}, id, {}, {}, {});
    ADD_FAILURE() << "another org's rental";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

// The node's history is kept only for agent_telemetry_retention: the rental's own copy,
// made while it runs, outlives it, and is deleted 30 days after the rental is over.
TEST_F(RentalTelemetryTest, TheRentalsCopyOutlivesTheNodesHistoryAndGoesThirtyDaysAfter) {
  std::string n = node("n1");
  Timestamp start = clock_.now() + std::chrono::minutes(1);
  std::string id = book(a_, n, {2}, {start, start + H(2)});
  Caller owner{.org_id = a_.org_id};
  clock_.advance(std::chrono::minutes(1));
  move(id, RentalState::kScheduled, RentalState::kProvisioning);
  move(id, RentalState::kProvisioning, RentalState::kActive);
  for (int m = 0; m < 10; ++m) sample(n, start + std::chrono::minutes(m), 200, m == 3);
  clock_.advance(std::chrono::minutes(10));
  auto kept = transact([&](Tx& tx) { return telemetry_.keep(tx, clock_.now()); });
  EXPECT_EQ(kept.first, 10);
  EXPECT_EQ(transact([&](Tx& tx) { return telemetry_.keep(tx, clock_.now()); }).first, 0)
      << "each sample copied once";
  // Two more samples, not copied yet: a read takes them from the node's history.
  for (int m = 10; m < 12; ++m) sample(n, start + std::chrono::minutes(m), 200);
  clock_.advance(std::chrono::minutes(2));
  auto both = telemetry_.read(owner, id, {}, {}, std::chrono::seconds(60));
  EXPECT_EQ(both["gpus"][0]["samples"].size(), 12u) << both.dump();

  // The node's history is purged (its retention passed): the copy still answers.
  EXPECT_EQ(transact([&](Tx& tx) { return telemetry_.keep(tx, clock_.now()).first; }), 2);
  transact([&](Tx& tx) { return log_.purge_samples(tx, clock_.now() + H(1), 1000); });
  auto copied = telemetry_.read(owner, id, {}, {}, std::chrono::seconds(60));
  EXPECT_EQ(copied["gpus"][0]["samples"].size(), 12u) << copied.dump();
  // The copy keeps the throttle reasons too: GPU 2 ran hot at the 4th minute.
  EXPECT_EQ(copied["gpus"][0]["samples"][3]["throttle_reasons"],
            nlohmann::json::array({"hw_thermal_slowdown"}))
      << copied.dump();
  EXPECT_EQ(copied["gpus"][0]["samples"][4]["throttle_reasons"], nlohmann::json::array());
  // And the clocks.
  EXPECT_EQ(copied["gpus"][0]["samples"][3]["sm_clock_mhz"], 1095.0) << copied.dump();
  EXPECT_EQ(copied["gpus"][0]["samples"][4]["sm_clock_mhz"], 1980.0);
  EXPECT_GT(copied["energy_kwh"].get<double>(), 0);

  // Over, and 30 days on: gone.
  clock_.advance(H(2));
  move(id, RentalState::kActive, RentalState::kReleasing);
  move(id, RentalState::kReleasing, RentalState::kEnded);
  EXPECT_EQ(transact([&](Tx& tx) { return telemetry_.keep(tx, clock_.now()).second; }), 0)
      << "kept while the 30 days run";
  auto gone = transact([&](Tx& tx) {
    return telemetry_.keep(tx, clock_.now() + RentalTelemetry::kKeptAfterEnd + H(3)).second;
  });
  EXPECT_EQ(gone, 12);
}

// A rental's energy per rental-day: five one-minute gaps around the end of its first 24 hours,
// two of them drawn on day 1 and three on day 2 (each on the day of its later sample).
TEST(RentalTelemetryEnergy, SplitByRentalDay) {
  Timestamp start = Timestamp(std::chrono::seconds(1'893'456'000));
  std::vector<inventory::TelemetryPoint> points;
  for (int m = -3; m <= 2; ++m) {
    points.push_back({start + std::chrono::hours(24) + std::chrono::minutes(m),
                      {{.index = 0, .power_w = 600.0}, {.index = 1, .power_w = 400.0}}});
  }
  TelemetryWindow w{start, start + std::chrono::hours(48), std::chrono::seconds(60)};
  auto t = rental_telemetry_json(points, {0, 1}, w, start);
  const double per_gap_kwh = (600.0 + 400.0) * 60 / 3.6e6;
  EXPECT_NEAR(t["energy_kwh"].get<double>(), 5 * per_gap_kwh, 1e-12);
  ASSERT_EQ(t["energy_by_day"].size(), 2u) << t["energy_by_day"].dump();
  EXPECT_EQ(t["energy_by_day"][0]["day"], 1);
  EXPECT_EQ(t["energy_by_day"][0]["from"], format_rfc3339(start));
  EXPECT_EQ(t["energy_by_day"][0]["to"], format_rfc3339(start + std::chrono::hours(24)));
  EXPECT_NEAR(t["energy_by_day"][0]["energy_kwh"].get<double>(), 2 * per_gap_kwh, 1e-12);
  EXPECT_EQ(t["energy_by_day"][1]["day"], 2);
  EXPECT_NEAR(t["energy_by_day"][1]["energy_kwh"].get<double>(), 3 * per_gap_kwh, 1e-12);
}

TEST(RentalTelemetryWindow, ClampedToThePeriodAndNowWithAtMostAThousandSteps) {
  Timestamp t0 = Timestamp(std::chrono::seconds(1'893'456'000));
  Period p{t0, t0 + std::chrono::hours(24 * 30)};
  auto w = telemetry_window(p, t0 + std::chrono::hours(24 * 10), std::nullopt, std::nullopt,
                            std::nullopt);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->from, t0);
  EXPECT_EQ(w->to, t0 + std::chrono::hours(240)) << "not past now";
  EXPECT_LE((w->to - w->from) / w->step, kMaxTelemetrySteps);
  EXPECT_EQ(w->step.count() % 10, 0);
  auto asked = telemetry_window(p, t0 + std::chrono::hours(1), std::nullopt, std::nullopt,
                                std::chrono::seconds(60));
  EXPECT_EQ(asked->step, std::chrono::seconds(60));
  EXPECT_FALSE(
      telemetry_window(p, t0 - std::chrono::hours(1), std::nullopt, std::nullopt, std::nullopt))
      << "before its start";
}

}  // namespace rental_telemetry_pgtest
}  // namespace gpurent::scheduler
