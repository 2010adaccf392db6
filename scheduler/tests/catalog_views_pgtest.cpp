// CatalogViews against a real PostgreSQL: what /v1/offers and /v1/availability answer when the
// question leaves something to the server. Without an interconnect each shape is dated with
// the links it needs (a PCIe box's four GPUs get a date, not "never"); a date means midnight
// at the offer's site, as in a booking; and today's calendar counts what can still start
// today, as the offers' available_now does. Each offer carries its model's measured figures
// (the medians of its nodes' latest passed burn-ins).
#include "core/clock.h"
#include "core/time.h"
#include "inventory/catalog_store.h"
#include "inventory/price_store.h"
#include "scheduler/catalog_views.h"
#include "scheduler/task_store.h"
#include "scheduler/tests/scheduler_fixture.h"

#include <gtest/gtest.h>

namespace gpurent::scheduler {
namespace catalog_views_pgtest {

class CatalogViewsTest : public SchedulerTest {
 protected:
  void SetUp() override {
    SchedulerTest::SetUp();
    exec(
        "INSERT INTO prices (gpu_model, gpu_count, amount_minor, currency, valid_from) VALUES"
        " ('L4-24GB', 4, 400000, 'RUB', now() - interval '1 hour'),"
        " ('H100-SXM5-80GB', 1, 312500, 'RUB', now() - interval '1 hour')");
  }

  std::vector<Offer> offers(const OfferQuery& q) {
    return read([&](Tx& tx) { return views_.offers(tx, q); });
  }

  // The fixture's site is in Moscow (UTC+3 all year): the date there now.
  std::string moscow_date(Timestamp t) const {
    return format_rfc3339(t + std::chrono::hours(3)).substr(0, 10);
  }

  inventory::CatalogStore catalog_{clock_};
  inventory::PriceStore prices_{clock_, "RUB"};
  CapacityIndex capacity_{clock_, candidates_, [] { return false; }};
  CatalogViews views_{clock_, catalog_, prices_, capacity_, kWindow};
};

TEST_F(CatalogViewsTest, WithoutAnInterconnectEachShapeIsDatedWithTheLinksItNeeds) {
  node("pcie-1", "L4-24GB", 4, "pcie");
  node("hgx-1");
  auto l4 = offers({.gpu_model = "L4-24GB", .gpu_count = 4});
  ASSERT_EQ(l4.size(), 1u);
  EXPECT_EQ(l4[0].interconnect, "pcie");
  EXPECT_EQ(l4[0].link_need, LinkNeed::kAny);
  EXPECT_TRUE(l4[0].available_now);
  EXPECT_TRUE(l4[0].earliest_start);
  // Asked for NVLink, a PCIe box has none to give.
  auto nvlinked = offers({.gpu_model = "L4-24GB", .gpu_count = 4, .link_need = LinkNeed::kNvlink});
  ASSERT_EQ(nvlinked.size(), 1u);
  EXPECT_FALSE(nvlinked[0].available_now);
  EXPECT_FALSE(nvlinked[0].earliest_start);
  // An NVSwitch board's eight GPUs are offered NVLinked; one GPU needs no links.
  auto h100 = offers({.gpu_model = "H100-SXM5-80GB"});
  ASSERT_EQ(h100.size(), 2u);
  for (const auto& o : h100) {
    EXPECT_EQ(o.link_need, o.gpu_count == 8 ? LinkNeed::kNvlink : LinkNeed::kAny) << o.gpu_count;
    EXPECT_TRUE(o.available_now) << o.gpu_count;
  }
  EXPECT_EQ(shape_link_need("nvlink-pairs", 2), LinkNeed::kNvlink);
  EXPECT_EQ(shape_link_need("nvlink-pairs", 4), LinkNeed::kAny);
}

TEST_F(CatalogViewsTest, ADateMeansMidnightAtTheOffersSite) {
  node("hgx-1");
  std::string date = moscow_date(clock_.now() + std::chrono::hours(24 * 3));
  auto dated = offers({.gpu_model = "H100-SXM5-80GB", .gpu_count = 8, .start_date = date});
  ASSERT_EQ(dated.size(), 1u);
  ASSERT_TRUE(dated[0].earliest_start);
  // Midnight in Moscow is 21:00 UTC the day before.
  EXPECT_EQ(format_rfc3339(*dated[0].earliest_start),
            format_rfc3339(*parse_rfc3339(date + "T00:00:00+03:00")));
  EXPECT_EQ(dated[0].earliest_date, date);
  EXPECT_THROW(offers({.start_date = "2027-02-30"}), Error);
}

TEST_F(CatalogViewsTest, TodaysCalendarCountsWhatCanStillStartToday) {
  std::string n = node("hgx-1");
  std::string today = moscow_date(clock_.now());
  auto calendar = read([&](Tx& tx) {
    return views_.availability(tx, "H100-SXM5-80GB", 8, LinkNeed::kNvlink, today, 2);
  });
  ASSERT_EQ(calendar.size(), 2u);
  EXPECT_EQ(calendar[0].date, today);
  EXPECT_EQ(calendar[0].available, 1) << "the node can start a day's rental now";
  EXPECT_EQ(calendar[0].from_now, clock_.now() > *parse_rfc3339(today + "T00:05:00+03:00"));
  EXPECT_EQ(calendar[1].available, 1);
  EXPECT_FALSE(calendar[1].from_now);
  auto offer = offers({.gpu_model = "H100-SXM5-80GB", .gpu_count = 8});
  ASSERT_EQ(offer.size(), 1u);
  EXPECT_TRUE(offer[0].available_now);
  // Booked from now for a day: nothing can start today any more.
  book(a_, n, {0, 1, 2, 3, 4, 5, 6, 7}, {clock_.now(), clock_.now() + std::chrono::hours(24)});
  capacity_.everything_changed();
  calendar = read([&](Tx& tx) {
    return views_.availability(tx, "H100-SXM5-80GB", 8, LinkNeed::kNvlink, today, 1);
  });
  ASSERT_EQ(calendar.size(), 1u);
  EXPECT_EQ(calendar[0].available, 0);
}

// The model's measured figures: the median over its nodes whose latest burn-in passed (an
// older one does not count, nor a node whose latest failed), none for a model never measured.
TEST_F(CatalogViewsTest, OffersCarryTheMediansOfTheirNodesLatestPassedBurnIns) {
  std::string n1 = node("hgx-1"), n2 = node("hgx-2"), n3 = node("hgx-3");
  node("pcie-1", "L4-24GB", 4, "pcie");
  TaskStore tasks{clock_};
  inventory::BurnInStore store;
  auto burned = [&](const std::string& node_id, double gflops, double gbps, bool passed) {
    transact([&](Tx& tx) {
      auto t = tasks.create(tx, node_id, std::nullopt, TaskKind::kBurnIn, {{"phase", "release"}});
      burn_in::BurnInFigures f{.tools = {"gpu_burn", "nvbandwidth"},
                               .gpus = {{0, gflops, true}, {1, gflops, true}},
                               .links = {{0, 1, gbps}}};
      return store.record(tx, {.task_id = t.id,
                               .node_id = node_id,
                               .phase = "release",
                               .gpu_model = "H100-SXM5-80GB",
                               .passed = passed,
                               .figures = burn_in::to_json(f),
                               .findings = nlohmann::json::array(),
                               .finished_at = clock_.now()});
    });
    clock_.advance(std::chrono::seconds(1));
  };
  burned(n1, 10000, 100, true);  // older: n1's latest below counts instead
  burned(n1, 50000, 390, true);
  burned(n2, 52000, 396, true);
  burned(n3, 54000, 400, true);
  burned(n3, 1000, 20, false);  // failed, and now n3's latest: n3 counts no more
  auto h100 = offers({.gpu_model = "H100-SXM5-80GB", .gpu_count = 1});
  ASSERT_EQ(h100.size(), 1u);
  ASSERT_TRUE(h100[0].measured);
  EXPECT_EQ(h100[0].measured->nodes, 2);
  EXPECT_EQ(h100[0].measured->gflops_per_gpu, 51000);
  EXPECT_EQ(h100[0].measured->peer_gbps, 393);
  EXPECT_FALSE(h100[0].measured->nccl_bus_gbps);
  auto l4 = offers({.gpu_model = "L4-24GB", .gpu_count = 4});
  ASSERT_EQ(l4.size(), 1u);
  EXPECT_FALSE(l4[0].measured) << "no L4 was ever measured";
}

}  // namespace catalog_views_pgtest
}  // namespace gpurent::scheduler
