// FleetReports against a real PostgreSQL: the admins' node list with each node's latest
// telemetry, the telemetry history's window rules, and the health history's pages — what
// the admin routes used to work out themselves.
#include "inventory/fleet_reports.h"

#include "core/error.h"
#include "core/id.h"
#include "inventory/node_health_log.h"
#include "inventory/tests/inventory_fixture.h"

namespace gpurent::inventory {
namespace fleet_reports_pgtest {

using std::chrono::hours;
using std::chrono::minutes;

class FleetReportsTest : public InventoryTest {
 protected:
  std::string new_node(const std::string& hostname) {
    return transact([&](Tx& tx) {
      return nodes_.create(tx, node(hostname, "L4-24GB", 1), admin_).node.node.id;
    });
  }
  void sample(const std::string& node_id, Timestamp at, double temperature) {
    transact([&](Tx& tx) {
      log_.record_samples(tx,
                          {{node_id,
                            at,
                            nlohmann::json::array({{{"index", 0}, {"temperature_c", temperature}}}),
                            {{.index = 0, .temperature_c = temperature}}}});
    });
  }
  void events(const std::string& node_id, int n) {
    std::vector<HealthEvent> out;
    for (int i = 0; i < n; ++i) {
      out.push_back({.node_id = node_id,
                     .at = clock_.now() + minutes(i),
                     .kind = "health",
                     .severity = "warning",
                     .reason = "event " + std::to_string(i)});
    }
    transact([&](Tx& tx) { log_.record_events(tx, out); });
  }
  template <typename Fn>
  static std::string code_of(Fn&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(error_code_name(e.code())) + ":" + e.details().value("field", "");
    }
    return "none";
  }

  NodeHealthLog log_;
  FleetReports reports_{pool_, clock_, nodes_, &log_};
};

TEST_F(FleetReportsTest, TheNodeListCarriesEachNodesLatestTelemetry) {
  std::string quiet = new_node("gpu-quiet");
  std::string hot = new_node("gpu-hot");
  sample(hot, clock_.now(), 83.5);
  auto page = reports_.nodes({}, 50, std::nullopt);
  ASSERT_EQ(page.items.size(), 2u);
  EXPECT_EQ(page.items[0].node.id, quiet) << "oldest first";
  EXPECT_FALSE(page.items[0].telemetry) << "no sample yet";
  ASSERT_TRUE(page.items[1].telemetry);
  EXPECT_EQ(page.items[1].telemetry->hottest_gpu_temperature_c, 83.5);
  EXPECT_EQ(code_of([&] { reports_.nodes({.state = "melting"}, 50, std::nullopt); }),
            "invalid_request:state");
  EXPECT_EQ(reports_.nodes({.state = "enrolling"}, 50, std::nullopt).items.size(), 2u);
}

TEST_F(FleetReportsTest, TheTelemetryWindowIsTheLastDayByDefaultAndAtMostAWeek) {
  std::string n = new_node("gpu-a");
  auto now = clock_.now();
  sample(n, now - hours(25), 40);
  sample(n, now - hours(1), 50);
  sample(n, now, 60);
  auto w = reports_.telemetry(n, std::nullopt, std::nullopt);
  ASSERT_EQ(w.points.size(), 2u) << "the last 24 hours, a sample taken now included";
  EXPECT_EQ(w.points.back().at, now);
  EXPECT_EQ(w.to - w.from, hours(24));
  EXPECT_EQ(reports_.telemetry(n, now - hours(26), now).points.size(), 2u) << "[from, to)";
  EXPECT_EQ(code_of([&] { reports_.telemetry(n, now, now); }), "invalid_request:from");
  EXPECT_EQ(code_of([&] { reports_.telemetry(n, now - hours(24 * 7) - minutes(1), now); }),
            "invalid_request:from");
  EXPECT_EQ(reports_.telemetry(n, now + minutes(1) - hours(24 * 7), now + minutes(1)).points.size(),
            3u);
  EXPECT_EQ(code_of([&] { reports_.telemetry(new_id(id_prefix::kNode), {}, {}); }), "not_found:");
}

TEST_F(FleetReportsTest, HealthEventsComeNewestFirstAPageAtATime) {
  std::string n = new_node("gpu-a");
  events(n, 5);
  std::vector<std::string> seen;
  std::optional<std::string> cursor;
  int pages = 0;
  do {
    auto page = reports_.health_events(n, 2, cursor);
    for (const auto& e : page.items) seen.push_back(e.reason);
    cursor = page.next_cursor;
    ++pages;
  } while (cursor && pages < 10);
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(seen,
            (std::vector<std::string>{"event 4", "event 3", "event 2", "event 1", "event 0"}));
  EXPECT_FALSE(reports_.health_events(n, 5, std::nullopt).next_cursor) << "exactly one page";
  for (std::string bad : {"abc", "0", "-3", "12x"}) {
    EXPECT_EQ(code_of([&] { reports_.health_events(n, 2, bad); }), "invalid_request:cursor") << bad;
  }
  EXPECT_EQ(code_of([&] { reports_.health_events(new_id(id_prefix::kNode), 2, {}); }),
            "not_found:");
}

}  // namespace fleet_reports_pgtest
}  // namespace gpurent::inventory
