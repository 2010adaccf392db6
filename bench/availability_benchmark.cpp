// How long the availability calendar (GET /v1/availability: how many rentals of one shape could
// start on each of the next 30 days) takes over a 10,000-node fleet of one GPU model with
// 100,000 rentals in the coming 30 days, against its own embedded PostgreSQL: right after a
// booking changed one node (the replica's copy reloads that node, then counts), with nothing
// changed since the last calendar, and with no copy yet (a replica's first calendar of the
// model, or its first after a reconnection). And, to show where a copy's load goes, the
// candidate load alone over a calendar's window and over a one-day booking's. Every call is
// timed on its own; p50/p99/max are the counters.
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/embedded_postgres.h"
#include "core/migrator.h"
#include "inventory/catalog_store.h"
#include "inventory/price_store.h"
#include "migrations/embedded_migrations.h"
#include "scheduler/candidate_store.h"
#include "scheduler/capacity_index.h"
#include "scheduler/catalog_views.h"

#include <benchmark/benchmark.h>
#include <spdlog/spdlog.h>
#include <pqxx/pqxx>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gpurent {
namespace {

using std::chrono::hours;

const std::string kModel = "H100-SXM5-80GB";
constexpr int kNodes = 10'000;
constexpr int kRentals = 100'000;
constexpr int kCalendarDays = 30;
constexpr auto kCleaning = std::chrono::minutes(30);  // the default rental_cleaning_window

// One org, user, image, price list and site, then the fleet: nodes as NodeStore leaves them
// once their agents report (available, health ok), 40% 8-GPU NVSwitch, 30% 8-GPU in bridged
// pairs, 30% 4-GPU PCIe (two sockets), each with its GPUs and its link matrix in gpu_links
// as NodeStore writes it. Ids have the real shape (prefix and 22 base62 characters).
constexpr const char* kSeedFleet = R"SQL(
INSERT INTO orgs (id, name) VALUES ('org_' || lpad('1', 22, '0'), 'Bench');
INSERT INTO users (id, email, password_hash)
  VALUES ('usr_' || lpad('1', 22, '0'), 'bench@example.com', 'not-a-hash');
INSERT INTO images (id, name, os, driver_version, cuda_version, status, created_at)
  VALUES ('img_' || lpad('1', 22, '0'), 'Ubuntu 22.04', 'Ubuntu 22.04', '550', '12.4', 'active',
    now());
INSERT INTO prices (gpu_model, gpu_count, amount_minor, currency, valid_from)
  SELECT $$H100-SXM5-80GB$$, c, 650000 * c, 'RUB', now() - interval '1 day'
  FROM unnest(ARRAY[1, 2, 4, 8]) c;
INSERT INTO sites (id, name, region, timezone, created_at)
  VALUES ('sit_' || lpad('1', 22, '0'), 'Bench', 'ru-central', 'Europe/Moscow', now());
INSERT INTO nodes (id, site_id, hostname, gpu_model, gpu_count, interconnect, state,
    state_changed_at, health, topology_source, created_at)
  SELECT 'nod_' || lpad(i::text, 22, '0'), 'sit_' || lpad('1', 22, '0'), 'bench-' || i,
    $$H100-SXM5-80GB$$, CASE WHEN i % 10 < 7 THEN 8 ELSE 4 END,
    CASE WHEN i % 10 < 4 THEN 'nvswitch' WHEN i % 10 < 7 THEN 'nvlink-pairs' ELSE 'pcie' END,
    'available', now(), 'ok', 'agent', now()
  FROM generate_series(0, 9999) i;
INSERT INTO gpus (node_id, idx, health)
  SELECT n.id, g, 'ok' FROM nodes n, generate_series(0, n.gpu_count - 1) g;
INSERT INTO gpu_links (node_id, gpu_a, gpu_b, kind)
  SELECT n.id, a, b, CASE
    WHEN n.interconnect = 'nvswitch' THEN 'NV18'
    WHEN n.interconnect = 'nvlink-pairs' AND a / 2 = b / 2 THEN 'NV4'
    WHEN (a < n.gpu_count / 2) = (b < n.gpu_count / 2) THEN 'NODE' ELSE 'SYS' END
  FROM nodes n, generate_series(0, n.gpu_count - 2) a, generate_series(a + 1, n.gpu_count - 1) b;
)SQL";

// GPUs are rented in groups that share a calendar, by node shape: NVSwitch nodes whole, as
// halves, as 4+2+2 or as 2+2+2+1+1; bridged nodes by pairs (or two singles on the last pair);
// PCIe nodes whole, by halves or 2+1+1. Each group gets back-to-back rentals of 1-7 days with
// 0-3 days idle before each, from now on (starts to the minute, as "start now" bookings
// have), and the first 100,000 of them in a fixed pseudo-random order are kept, each with
// one allocation row per GPU extended by the cleaning window: about 45% of the fleet's
// GPU-days over the 30 days are booked.
constexpr const char* kSeedRentals = R"SQL(
SELECT setseed(0.20261201);
CREATE TEMP TABLE bench_groups AS
  SELECT n.id AS node_id, l.first, l.size, row_number() OVER () AS gid
  FROM (SELECT id, interconnect, substr(id, 5)::bigint / 10 AS v FROM nodes) n
  CROSS JOIN LATERAL (
    SELECT * FROM unnest(
      CASE n.interconnect
        WHEN 'nvswitch' THEN (ARRAY[ARRAY[0, -1, -1, -1, -1], ARRAY[0, 4, -1, -1, -1],
          ARRAY[0, 4, 6, -1, -1], ARRAY[0, 2, 4, 6, 7]])[1 + n.v % 4 : 1 + n.v % 4]
        WHEN 'nvlink-pairs' THEN (ARRAY[ARRAY[0, 2, 4, 6, -1],
          ARRAY[0, 2, 4, 6, 7]])[1 + n.v % 2 : 1 + n.v % 2]
        ELSE (ARRAY[ARRAY[0, -1, -1], ARRAY[0, 2, -1], ARRAY[0, 2, 3]])[1 + n.v % 3 : 1 + n.v % 3]
      END,
      CASE n.interconnect
        WHEN 'nvswitch' THEN (ARRAY[ARRAY[8, 0, 0, 0, 0], ARRAY[4, 4, 0, 0, 0],
          ARRAY[4, 2, 2, 0, 0], ARRAY[2, 2, 2, 1, 1]])[1 + n.v % 4 : 1 + n.v % 4]
        WHEN 'nvlink-pairs' THEN (ARRAY[ARRAY[2, 2, 2, 2, 0],
          ARRAY[2, 2, 2, 1, 1]])[1 + n.v % 2 : 1 + n.v % 2]
        ELSE (ARRAY[ARRAY[4, 0, 0], ARRAY[2, 2, 0], ARRAY[2, 1, 1]])[1 + n.v % 3 : 1 + n.v % 3]
      END) AS t(first, size)
    WHERE size > 0) l;
CREATE TEMP TABLE bench_rentals AS
  WITH seg AS (
    SELECT g.*, k, 1 + floor(random() * 7)::int AS days, random() * interval '3 days' AS gap
    FROM bench_groups g, generate_series(1, 12) k),
  placed AS (
    SELECT *, date_trunc('minute', now()) + sum(gap) OVER w
      + (sum(days) OVER w - days) * interval '1 day' + (k - 1) * interval '30 minutes' AS start
    FROM seg WINDOW w AS (PARTITION BY gid ORDER BY k))
  SELECT row_number() OVER (ORDER BY md5(gid::text || ':' || k)) AS rn, node_id, first, size,
    days, date_trunc('minute', start) AS start
  FROM placed WHERE start < now() + interval '30 days';
DELETE FROM bench_rentals WHERE rn > 100000;
INSERT INTO rentals (id, org_id, created_by, name, state, gpu_model, gpu_count, link_need,
    node_id, gpu_indices, period, days, image_id, price_per_day_minor, currency, price_id,
    created_at, state_changed_at)
  SELECT 'rnt_' || lpad(r.rn::text, 22, '0'), 'org_' || lpad('1', 22, '0'),
    'usr_' || lpad('1', 22, '0'), r.size || 'x H100', 'scheduled', $$H100-SXM5-80GB$$, r.size,
    'nvlink', r.node_id, ARRAY(SELECT generate_series(r.first, r.first + r.size - 1)),
    tstzrange(r.start, r.start + r.days * interval '1 day', '[)'), r.days,
    'img_' || lpad('1', 22, '0'), p.amount_minor, p.currency, p.id, now(), now()
  FROM bench_rentals r JOIN prices p ON p.gpu_model = $$H100-SXM5-80GB$$ AND p.gpu_count = r.size;
INSERT INTO allocations (rental_id, gpu_id, period)
  SELECT 'rnt_' || lpad(r.rn::text, 22, '0'), g.id,
    tstzrange(r.start, r.start + r.days * interval '1 day' + interval '30 minutes', '[)')
  FROM bench_rentals r
  JOIN gpus g ON g.node_id = r.node_id AND g.idx >= r.first AND g.idx < r.first + r.size;
DROP TABLE bench_groups, bench_rentals;
ANALYZE;
)SQL";

// One embedded cluster for the whole run, migrated and seeded on first use; removed at exit.
class AvailabilityBenchEnv {
 public:
  static AvailabilityBenchEnv& get() {
    static AvailabilityBenchEnv env;
    return env;
  }

  ~AvailabilityBenchEnv() {
    pool_.reset();  // connections close before the server stops
    postgres_.reset();
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  PgPool& pool() { return *pool_; }
  scheduler::CatalogViews& views() { return *views_; }
  scheduler::CandidateStore& candidates() { return candidates_; }
  scheduler::CapacityIndex& capacity() { return *capacity_; }
  const std::string& today() const { return today_; }
  long long rentals() const { return rentals_; }
  long long allocations() const { return allocations_; }
  double booked_share() const { return booked_share_; }

  // A real change to one node, as an early end or an extension makes it: one of a thousand
  // rentals has its allocations cut short by an hour, or given the hour back (every other
  // round), and its node is announced.
  void change_one_node() {
    if (!changer_) changer_.emplace(postgres_->url());
    const auto& [rental, node] = changes_[next_change_ % changes_.size()];
    const bool shorten = (next_change_ / changes_.size()) % 2 == 0;
    ++next_change_;
    pqxx::nontransaction tx(*changer_);
    tx.exec("UPDATE allocations SET period = tstzrange(lower(period), upper(period) " +
            std::string(shorten ? "-" : "+") +
            " interval '1 hour', '[)') WHERE rental_id = " + tx.quote(rental));
    capacity_->node_changed(node);
  }

 private:
  AvailabilityBenchEnv() {
    spdlog::set_level(spdlog::level::warn);
    std::string pattern = "/tmp/gpurent-availbench-XXXXXX";
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    root_ = pattern;
    chmod(root_.c_str(), 0755);  // the server may run as the postgres user
    postgres_.emplace(EmbeddedPostgresOptions{.data_dir = root_ + "/pg"});
    postgres_->start();
    Migrator(postgres_->url(), embedded_migrations()).migrate();
    {
      pqxx::connection c(postgres_->url());
      pqxx::nontransaction seed(c);
      seed.exec(kSeedFleet);
      seed.exec(kSeedRentals);
      auto counts = seed.exec(
          "SELECT (SELECT count(*) FROM rentals), (SELECT count(*) FROM allocations),"
          " (SELECT extract(epoch FROM sum(least(upper(period), now() + interval '30 days')"
          " - lower(period))) FROM allocations)"
          " / (extract(epoch FROM interval '30 days') * (SELECT count(*) FROM gpus)),"
          " to_char(now() AT TIME ZONE 'Europe/Moscow', 'YYYY-MM-DD')");
      rentals_ = counts[0][0].as<long long>();
      allocations_ = counts[0][1].as<long long>();
      booked_share_ = counts[0][2].as<double>();
      today_ = counts[0][3].as<std::string>();
      if (rentals_ != kRentals) throw std::runtime_error("the seed made too few rentals");
    }
    pool_ = std::make_unique<PgPool>(PgPoolOptions{.url = postgres_->url(), .size = 2});
    catalog_ = std::make_unique<inventory::CatalogStore>(clock_);
    prices_ = std::make_unique<inventory::PriceStore>(clock_, "RUB");
    // The benchmark makes its changes itself and announces them as the database's triggers
    // would: no listener.
    capacity_ =
        std::make_unique<scheduler::CapacityIndex>(clock_, candidates_, [] { return true; });
    views_ = std::make_unique<scheduler::CatalogViews>(clock_, *catalog_, *prices_, *capacity_,
                                                       kCleaning);
    {
      pqxx::connection c(postgres_->url());
      pqxx::nontransaction tx(c);
      for (const auto& row : tx.exec("SELECT r.id, r.node_id FROM rentals r ORDER BY md5(r.id)"
                                     " LIMIT 1000")) {
        changes_.emplace_back(row[0].as<std::string>(), row[1].as<std::string>());
      }
    }
  }

  std::string root_;
  std::optional<EmbeddedPostgres> postgres_;
  SystemClock clock_;
  std::unique_ptr<PgPool> pool_;
  std::unique_ptr<inventory::CatalogStore> catalog_;
  std::unique_ptr<inventory::PriceStore> prices_;
  scheduler::CandidateStore candidates_;
  std::unique_ptr<scheduler::CapacityIndex> capacity_;
  std::unique_ptr<scheduler::CatalogViews> views_;
  std::vector<std::pair<std::string, std::string>> changes_;  // rental, node
  std::size_t next_change_ = 0;
  std::optional<pqxx::connection> changer_;
  std::string today_;
  long long rentals_ = 0;
  long long allocations_ = 0;
  double booked_share_ = 0;
};

double quantile(std::vector<double>& ms, double q) {
  std::ranges::sort(ms);
  return ms[std::min(ms.size() - 1, static_cast<std::size_t>(q * static_cast<double>(ms.size())))];
}

void report(benchmark::State& state, std::vector<double>& ms) {
  if (ms.empty()) return;
  state.counters["p50_ms"] = quantile(ms, 0.50);
  state.counters["p99_ms"] = quantile(ms, 0.99);
  state.counters["max_ms"] = ms.back();
}

// The calendar as GET /v1/availability computes it: from today (the route's default), 30
// days, through a pool read like the handler's. What happens before each call:
enum class Before { kOneNodeChanged = 0, kNothingChanged = 1, kNoCopy = 2 };

void BM_AvailabilityCalendar(benchmark::State& state) {
  auto& env = AvailabilityBenchEnv::get();
  const int count = static_cast<int>(state.range(0));
  const auto before = static_cast<Before>(state.range(1));
  auto calendar = [&] {
    return env.pool().read("bench_availability", [&](Tx& tx) {
      return env.views().availability(tx, kModel, count, scheduler::LinkNeed::kNvlink, env.today(),
                                      kCalendarDays);
    });
  };
  if (before != Before::kNoCopy) calendar();  // the copy exists, as on a replica in service
  const auto stats_before = env.capacity().stats();
  std::vector<double> ms;
  long long offered = 0;
  for (auto _ : state) {
    if (before == Before::kOneNodeChanged) env.change_one_node();
    if (before == Before::kNoCopy) env.capacity().everything_changed();
    const auto start = std::chrono::steady_clock::now();
    auto days = calendar();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(seconds);
    ms.push_back(seconds * 1e3);
    offered = 0;
    for (const auto& d : days) offered += d.available;
    if (days.size() != kCalendarDays) state.SkipWithError("the calendar is not 30 days long");
  }
  report(state, ms);
  // What the calendar answered (each day is capped at 1,000), the data it looked at, and how
  // the copy answered: whole loads and nodes reloaded per call.
  const auto stats = env.capacity().stats();
  const auto calls = static_cast<double>(ms.size());
  state.counters["offered_30d"] = static_cast<double>(offered);
  state.counters["rentals"] = static_cast<double>(env.rentals());
  state.counters["allocations"] = static_cast<double>(env.allocations());
  state.counters["booked_share"] = env.booked_share();
  state.counters["loads_per_call"] =
      static_cast<double>(stats.copies_loaded + stats.direct_loads - stats_before.copies_loaded -
                          stats_before.direct_loads) /
      calls;
  state.counters["nodes_reloaded_per_call"] =
      static_cast<double>(stats.nodes_reloaded - stats_before.nodes_reloaded) / calls;
}
BENCHMARK(BM_AvailabilityCalendar)
    ->ArgNames({"gpus", "before"})
    ->ArgsProduct({{1, 2, 4, 8}, {static_cast<int>(Before::kOneNodeChanged)}})
    ->ArgsProduct({{1, 8}, {static_cast<int>(Before::kNothingChanged)}})
    ->UseManualTime()
    ->MinTime(3.0)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AvailabilityCalendar)
    ->ArgNames({"gpus", "before"})
    ->ArgsProduct({{1, 8}, {static_cast<int>(Before::kNoCopy)}})
    ->UseManualTime()
    ->Iterations(8)
    ->Unit(benchmark::kMillisecond);

// GET /v1/offers for the model in one count (what the panel's catalog asks), from the
// replica's copy as a server in service answers it: each offer's earliest start tried day by
// day over the node groups that can hold it.
void BM_Offers(benchmark::State& state) {
  auto& env = AvailabilityBenchEnv::get();
  const int count = static_cast<int>(state.range(0));
  auto offers = [&] {
    return env.pool().read("bench_offers", [&](Tx& tx) {
      return env.views().offers(tx, {.gpu_model = kModel, .gpu_count = count, .days = 1});
    });
  };
  offers();  // the copy exists, as on a replica in service
  std::vector<double> ms;
  std::size_t listed = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    listed = offers().size();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(seconds);
    ms.push_back(seconds * 1e3);
  }
  report(state, ms);
  state.counters["offers"] = static_cast<double>(listed);
}
BENCHMARK(BM_Offers)->ArgName("gpus")->Arg(1)->Arg(8)->UseManualTime()->MinTime(3.0)->Unit(
    benchmark::kMillisecond);

// The candidate load alone: over the calendar's 30 days (what the calendar reads), and over
// one day (what a one-day booking reads on every attempt round).
void BM_CandidateLoad(benchmark::State& state) {
  auto& env = AvailabilityBenchEnv::get();
  const Timestamp now =
      std::chrono::time_point_cast<Timestamp::duration>(std::chrono::system_clock::now());
  const scheduler::Period window{now, now + hours(24) * state.range(0) + kCleaning};
  std::vector<double> ms;
  std::size_t nodes = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    auto loaded = env.pool().read(
        "bench_candidates", [&](Tx& tx) { return env.candidates().load(tx, kModel, window); });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(seconds);
    ms.push_back(seconds * 1e3);
    nodes = loaded.size();
  }
  report(state, ms);
  state.counters["nodes"] = static_cast<double>(nodes);
}
BENCHMARK(BM_CandidateLoad)
    ->ArgName("days")
    ->Arg(1)
    ->Arg(30)
    ->UseManualTime()
    ->MinTime(3.0)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gpurent
