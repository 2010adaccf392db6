// NodeHealthLog and the node store's health writes over a real database: samples become the
// latest telemetry and rows of history (a late sample does not replace a newer latest),
// history windows, health events newest first with paging, the retention's delete, and the
// health a batch of healthy heartbeats puts back to ok.
#include "inventory/node_health_log.h"
#include "inventory/tests/inventory_fixture.h"

namespace gpurent::inventory {
namespace node_health_log_pgtest {

class NodeHealthLogTest : public InventoryTest {
 protected:
  std::string new_node(const std::string& hostname, int gpus = 2) {
    return transact([&](Tx& tx) {
      return nodes_.create(tx, node(hostname, "L4-24GB", gpus), admin_).node.node.id;
    });
  }
  TelemetrySample sample(const std::string& node_id, Timestamp at, double temperature) {
    return {node_id,
            at,
            nlohmann::json::array({{{"index", 0}, {"temperature_c", temperature}},
                                   {{"index", 1}, {"temperature_c", temperature + 1}}}),
            {{.index = 0,
              .temperature_c = temperature,
              .power_w = 70.5,
              .utilization_pct = 99,
              .memory_used_mib = 20000,
              .sm_clock_mhz = 1755},
             {.index = 1, .temperature_c = temperature + 1}}};
  }
  HealthEvent event(const std::string& node_id, Timestamp at, std::string reason) {
    return {.node_id = node_id,
            .at = at,
            .gpu_index = 1,
            .kind = "health",
            .severity = "warning",
            .reason = std::move(reason)};
  }

  NodeHealthLog log_;
};

TEST_F(NodeHealthLogTest, SamplesAreTheLatestTelemetryAndTheHistory) {
  std::string a = new_node("gpu-a");
  std::string b = new_node("gpu-b");
  auto t0 = clock_.now();
  EXPECT_EQ(read([&](Tx& tx) { return log_.latest(tx, a); }), std::nullopt);
  transact([&](Tx& tx) { log_.record_samples(tx, {sample(a, t0, 50), sample(b, t0, 60)}); });
  transact([&](Tx& tx) { log_.record_samples(tx, {sample(a, t0 + std::chrono::minutes(1), 51)}); });
  // A sample that arrives late is history, not the latest; one at an instant already kept
  // is ignored.
  transact([&](Tx& tx) {
    log_.record_samples(tx, {sample(a, t0 - std::chrono::minutes(1), 49), sample(b, t0, 99)});
  });

  auto latest = read([&](Tx& tx) { return log_.latest(tx, a); });
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->at, t0 + std::chrono::minutes(1));
  EXPECT_EQ(latest->gpus[0]["temperature_c"], 51);

  auto history = read([&](Tx& tx) {
    return log_.history(tx, a, t0 - std::chrono::hours(1), t0 + std::chrono::hours(1), 100);
  });
  ASSERT_EQ(history.size(), 3u);
  EXPECT_EQ(history[0].at, t0 - std::chrono::minutes(1));  // oldest first
  EXPECT_EQ(history[2].at, t0 + std::chrono::minutes(1));
  ASSERT_EQ(history[1].gpus.size(), 2u);
  EXPECT_EQ(history[1].gpus[0], (GpuPoint{0, 50, 70.5, 99, 20000, {}, 1755}));
  EXPECT_EQ(history[1].gpus[1], (GpuPoint{1, 51, std::nullopt, std::nullopt, std::nullopt}));
  // [from, to), and the limit.
  auto window =
      read([&](Tx& tx) { return log_.history(tx, a, t0, t0 + std::chrono::minutes(1), 100); });
  ASSERT_EQ(window.size(), 1u);
  EXPECT_EQ(window[0].at, t0);
  EXPECT_EQ(read([&](Tx& tx) {
              return log_.history(tx, a, t0 - std::chrono::hours(1), t0 + std::chrono::hours(1), 2);
            }).size(),
            2u);

  auto b_history = read([&](Tx& tx) {
    return log_.history(tx, b, t0 - std::chrono::hours(1), t0 + std::chrono::hours(1), 100);
  });
  ASSERT_EQ(b_history.size(), 1u) << "another node's samples are its own";
  EXPECT_EQ(b_history[0].gpus[0].temperature_c, 60) << "the first sample at that instant stays";

  // A sample of a node that is gone (or never was) is dropped, not an error for the batch.
  transact([&](Tx& tx) {
    log_.record_samples(
        tx, {sample("nod_missing", t0, 1), sample(b, t0 + std::chrono::seconds(5), 61)});
  });
  EXPECT_EQ(count("SELECT count(*) FROM node_telemetry_samples"), 5);
}

TEST_F(NodeHealthLogTest, TheRetentionDeletesOldSamplesInBoundedSteps) {
  std::string a = new_node("gpu-a");
  auto t0 = clock_.now();
  std::vector<TelemetrySample> samples;
  for (int i = 0; i < 10; ++i) samples.push_back(sample(a, t0 - std::chrono::hours(i), 40 + i));
  transact([&](Tx& tx) { log_.record_samples(tx, samples); });
  auto cutoff = t0 - std::chrono::minutes(150);  // samples 3..9 are older
  EXPECT_EQ(transact([&](Tx& tx) { return log_.purge_samples(tx, cutoff, 5); }), 5);
  EXPECT_EQ(transact([&](Tx& tx) { return log_.purge_samples(tx, cutoff, 5); }), 2);
  EXPECT_EQ(transact([&](Tx& tx) { return log_.purge_samples(tx, cutoff, 5); }), 0);
  EXPECT_EQ(count("SELECT count(*) FROM node_telemetry_samples"), 3);
  EXPECT_TRUE(read([&](Tx& tx) { return log_.latest(tx, a); }).has_value())
      << "the latest telemetry is not history";
}

TEST_F(NodeHealthLogTest, EventsAreReadNewestFirstAPageAtATime) {
  std::string a = new_node("gpu-a");
  std::string b = new_node("gpu-b");
  auto t0 = clock_.now();
  transact([&](Tx& tx) {
    log_.record_events(tx, {event(a, t0, "first"),
                            event(b, t0, "b's"),
                            {.node_id = a,
                             .at = t0 + std::chrono::seconds(1),
                             .kind = "xid",
                             .severity = "critical",
                             .xid = 79,
                             .reason = "XID 79 (GPU has fallen off the bus): …"}});
  });
  // A reason longer than the column allows is cut at a character boundary, not refused.
  std::string long_reason(1999, 'x');
  long_reason += "é and more";
  transact([&](Tx& tx) {
    log_.record_events(tx, {event(a, t0 + std::chrono::seconds(2), long_reason)});
  });

  auto page = read([&](Tx& tx) { return log_.events(tx, a, 2); });
  ASSERT_EQ(page.size(), 2u);
  EXPECT_EQ(page[0].reason, std::string(1999, 'x')) << "é is two bytes: it would pass 2,000";
  EXPECT_EQ(page[1].kind, "xid");
  EXPECT_EQ(page[1].xid, 79);
  EXPECT_EQ(page[1].gpu_index, std::nullopt);
  EXPECT_EQ(page[1].at, t0 + std::chrono::seconds(1));
  auto rest = read([&](Tx& tx) { return log_.events(tx, a, 2, page[1].id); });
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].reason, "first");
  EXPECT_EQ(rest[0].gpu_index, 1);
  EXPECT_EQ(rest[0].severity, "warning");

  // The table keeps its promises whatever a caller sends.
  EXPECT_ANY_THROW(transact([&](Tx& tx) {
    auto bad = event(a, t0, "x");
    bad.severity = "fine";
    log_.record_events(tx, {bad});
  }));
  EXPECT_ANY_THROW(transact([&](Tx& tx) {
    auto bad = event(a, t0, "an xid without its code");
    bad.kind = "xid";
    log_.record_events(tx, {bad});
  }));
}

TEST_F(NodeHealthLogTest, HealthyHeartbeatsPutBackToOkWhatWasNotAndSayWhatItWas) {
  std::string a = new_node("gpu-a", 2);
  std::string b = new_node("gpu-b", 2);
  std::string c = new_node("gpu-c", 2);
  transact([&](Tx& tx) {
    nodes_.set_health(tx, a, Health::kOk);
    nodes_.set_health(tx, b,
                      NodeHealthState{Health::kWarning, {{0, Health::kOk}, {1, Health::kWarning}}});
    nodes_.set_health(tx, c,
                      NodeHealthState{Health::kOk, {{0, Health::kOk}, {1, Health::kCritical}}});
  });
  EXPECT_EQ(read([&](Tx& tx) { return nodes_.health_state(tx, b); }),
            (NodeHealthState{Health::kWarning, {{0, Health::kOk}, {1, Health::kWarning}}}))
      << "the node's own write and each GPU's";
  auto before = transact([&](Tx& tx) {
    return nodes_.record_healthy_heartbeats(
        tx, {{a, clock_.now()}, {b, clock_.now()}, {c, clock_.now()}});
  });
  ASSERT_EQ(before.size(), 2u) << "a was ok throughout";
  EXPECT_EQ(before.at(b), (NodeHealthState{Health::kWarning, {{1, Health::kWarning}}}))
      << "what was not ok";
  EXPECT_EQ(before.at(c), (NodeHealthState{Health::kOk, {{1, Health::kCritical}}}));
  for (const auto& id : {a, b, c}) {
    EXPECT_EQ(read([&](Tx& tx) { return nodes_.health_state(tx, id); }),
              (NodeHealthState{Health::kOk, {{0, Health::kOk}, {1, Health::kOk}}}))
        << id;
  }
  EXPECT_EQ(read([&](Tx& tx) { return nodes_.health_state(tx, "nod_missing"); }), std::nullopt);
}

}  // namespace node_health_log_pgtest
}  // namespace gpurent::inventory
