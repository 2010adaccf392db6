// How long a day's capture takes: 100,000 running rentals of 10,000 orgs, each with a day due,
// captured by RentalCharges::capture_due against its own embedded PostgreSQL, by batch size and
// by how many capturers (replicas) run at once; after each run the day is checked charged once
// per rental, with a sound ledger and no deadlock. The seed and the checks are
// bench/capture/seed.sql and check.sql, compiled in; bench/capture/run.sh runs the same
// statements in pgbench on the same seed, for comparison (docs/PERFORMANCE.md).
#include "billing/invoice_store.h"
#include "billing/ledger.h"
#include "billing/rental_charges.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/embedded_file.h"
#include "core/embedded_postgres.h"
#include "core/migrator.h"
#include "migrations/embedded_migrations.h"

#include <benchmark/benchmark.h>
#include <spdlog/spdlog.h>
#include <pqxx/pqxx>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <latch>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace gpurent {

// bench/capture/check.sql and seed.sql, embedded at build time (bench/CMakeLists.txt).
std::vector<EmbeddedFile> capture_sql_files();

namespace {

constexpr int kOrgs = 10'000;
constexpr int kRentalsPerOrg = 10;
constexpr int kRentals = kOrgs * kRentalsPerOrg;
// When the capture runs: the seed's capture.now. Day 1 of every rental started within the
// 24 hours before it.
constexpr const char* kNowSql = "2026-11-15 12:00:00+00";
const Timestamp kNow = std::chrono::time_point_cast<Timestamp::duration>(
    std::chrono::sys_days{std::chrono::year{2026} / 11 / 15} + std::chrono::hours(12));

class FixedClock final : public Clock {
 public:
  Timestamp now() const override { return kNow; }
};

// One embedded cluster for the whole run: `capture_seed` migrated and seeded once, copied to
// `capture` before each run; removed at exit.
class CaptureBenchEnv {
 public:
  static CaptureBenchEnv& get() {
    static CaptureBenchEnv env;
    return env;
  }

  ~CaptureBenchEnv() {
    postgres_.reset();
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  // A fresh `capture` database, the seed as it was (not timed). The ledger is append-only,
  // so a run cannot be undone in place; a copy of the template is a file copy.
  std::string fresh_copy() {
    pqxx::connection c(postgres_->url("postgres"));
    pqxx::nontransaction tx(c);
    tx.exec("DROP DATABASE IF EXISTS capture WITH (FORCE)");
    tx.exec("CREATE DATABASE capture TEMPLATE capture_seed STRATEGY FILE_COPY");
    return postgres_->url("capture");
  }

  // What check.sql finds wrong on `capture`: one line per failed check; none when sound.
  std::vector<std::string> failed_checks() {
    pqxx::connection c(postgres_->url("capture"));
    pqxx::nontransaction tx(c);
    std::vector<std::string> failed;
    for (const auto& row : tx.exec(check_sql_)) {
      failed.push_back(row[0].as<std::string>() + ": " + row[1].as<std::string>());
    }
    return failed;
  }

  long long deadlocks() {
    pqxx::connection c(postgres_->url("capture"));
    pqxx::nontransaction tx(c);
    return tx
        .exec("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")[0][0]
        .as<long long>();
  }

  billing::RentalCharges& charges() { return charges_; }

 private:
  CaptureBenchEnv() {
    spdlog::set_level(spdlog::level::warn);
    std::string pattern = "/tmp/gpurent-capbench-XXXXXX";
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    root_ = pattern;
    chmod(root_.c_str(), 0755);  // the server may run as the postgres user
    postgres_.emplace(
        EmbeddedPostgresOptions{.data_dir = root_ + "/pg", .database = "capture_seed"});
    postgres_->start();
    Migrator(postgres_->url(), embedded_migrations()).migrate();
    std::string seed_sql;
    for (auto& f : capture_sql_files()) {
      if (f.name == "seed.sql") seed_sql = f.content;
      if (f.name == "check.sql") check_sql_ = f.content;
    }
    if (seed_sql.empty() || check_sql_.empty()) throw std::logic_error("SQL not compiled in");
    pqxx::connection c(postgres_->url());
    pqxx::nontransaction seed(c);
    seed.exec("SET capture.orgs = " + std::to_string(kOrgs));
    seed.exec("SET capture.rentals_per_org = " + std::to_string(kRentalsPerOrg));
    seed.exec(std::string("SET capture.now = '") + kNowSql + "'");
    seed.exec(seed_sql);
    // As autovacuum would have by the time of the capture; the copies inherit it.
    seed.exec("VACUUM ANALYZE");
  }

  std::string root_;
  std::string check_sql_;
  std::optional<EmbeddedPostgres> postgres_;
  FixedClock clock_;
  billing::Ledger ledger_{"RUB"};
  billing::InvoiceStore invoices_{clock_, "RUB", 2000, "UTC"};
  billing::RentalCharges charges_{
      clock_, ledger_, invoices_,
      billing::RentalChargesOptions{
          .pricing = {.vat_basis_points = 2000, .prices_include_tax = true}}};
};

// Every iteration: the seed copied afresh (not timed), then capture_due on `capturers`
// threads at once, each with a pool of its own as a replica has, in batches of `batch`, until
// every rental's day 1 is captured; then the checks (not timed).
void BM_CaptureDay(benchmark::State& state) {
  auto& env = CaptureBenchEnv::get();
  const int batch = static_cast<int>(state.range(0));
  const int capturers = static_cast<int>(state.range(1));
  std::vector<double> seconds_per_run;
  long long deadlocks = 0;
  for (auto _ : state) {
    const std::string url = env.fresh_copy();
    std::vector<std::unique_ptr<PgPool>> pools;
    for (int i = 0; i < capturers; ++i) {
      pools.push_back(std::make_unique<PgPool>(
          PgPoolOptions{.url = url, .size = 1, .statement_timeout = std::chrono::seconds(60)}));
      pools.back()->read("bench_connect", [](Tx& tx) { return tx.exec_fixed("SELECT 1").size(); });
    }
    std::vector<int> captured(static_cast<std::size_t>(capturers), 0);
    std::vector<std::string> errors(static_cast<std::size_t>(capturers));
    std::latch go(capturers + 1);
    std::vector<std::thread> threads;
    for (int i = 0; i < capturers; ++i) {
      threads.emplace_back([&, i] {
        const auto n = static_cast<std::size_t>(i);
        go.arrive_and_wait();
        try {
          captured[n] = env.charges().capture_due(*pools[n], kNow, batch);
        } catch (const std::exception& e) {
          errors[n] = e.what();
        }
      });
    }
    const auto start = std::chrono::steady_clock::now();
    go.arrive_and_wait();
    for (auto& t : threads) t.join();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(seconds);
    seconds_per_run.push_back(seconds);
    pools.clear();  // the backends exit and report their statistics

    for (const auto& e : errors) {
      if (!e.empty()) state.SkipWithError(("a capturer failed: " + e).c_str());
    }
    int total = 0;
    for (int n : captured) total += n;
    if (total != kRentals) {
      state.SkipWithError(
          ("captured " + std::to_string(total) + " rental-days, not " + std::to_string(kRentals))
              .c_str());
    }
    for (const auto& failed : env.failed_checks()) state.SkipWithError(failed.c_str());
    // Statistics reach pg_stat_database within a second of the backends' exit.
    std::this_thread::sleep_for(std::chrono::milliseconds(1'500));
    deadlocks += env.deadlocks();
  }
  if (seconds_per_run.empty()) return;
  std::sort(seconds_per_run.begin(), seconds_per_run.end());
  const std::size_t mid = seconds_per_run.size() / 2;
  const double median = seconds_per_run.size() % 2 == 1
                            ? seconds_per_run[mid]
                            : (seconds_per_run[mid - 1] + seconds_per_run[mid]) / 2;
  state.counters["days_per_s"] = static_cast<double>(kRentals) / median;
  state.counters["median_s"] = median;
  state.counters["deadlocks"] = static_cast<double>(deadlocks);
  if (deadlocks != 0) state.SkipWithError("capturers deadlocked");
}
BENCHMARK(BM_CaptureDay)
    ->ArgNames({"batch", "capturers"})
    ->ArgsProduct({{100, 500, 2000}, {1, 2}})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace gpurent
