// How long issuing a month's invoices takes: 10,000 orgs' drafts of one month, three lines
// each (two rental_days lines, every tenth org a credit as well), finalised by
// InvoiceStore::finalise_due against its own embedded PostgreSQL, by batch size and by how
// many finalisers (replicas) run at once. And the charge itself, one rental-day added in
// its own transaction, which the ledger's daily capture pays for every rental every day.
#include "billing/invoice_store.h"
#include "core/clock.h"
#include "core/db_pool.h"
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
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace gpurent {
namespace {

constexpr int kOrgs = 10'000;

constexpr const char* kSeedOrgs = R"SQL(
INSERT INTO orgs (id, name)
  SELECT 'org_' || lpad(i::text, 22, '0'), 'Bench ' || i FROM generate_series(1, 10000) i;
)SQL";

// January 2026's drafts, as a month of charges leaves them: two rentals per org (8x H100 at
// 5,200.00 a day gross and 1x L4 at 1,200.00, 20% VAT) for 1 to 31 days, and on every tenth
// org an SLA credit; the totals are the sums of the lines, as the store keeps them.
constexpr const char* kSeedDrafts = R"SQL(
TRUNCATE invoice_lines, invoices, invoice_numbers;
INSERT INTO invoices (id, org_id, period_start, period_end, status, currency, subtotal_minor,
    tax_minor, total_minor, vat_basis_points, created_at)
  SELECT 'inv_' || lpad(i::text, 22, '0'), 'org_' || lpad(i::text, 22, '0'), DATE '2026-01-01',
    DATE '2026-02-01', 'draft', 'RUB', 0, 0, 0, 2000, TIMESTAMPTZ '2026-01-01 00:00:00+03'
  FROM generate_series(1, 10000) i;
INSERT INTO invoice_lines (invoice_id, kind, rental_id, description, days, unit_net_minor,
    unit_tax_minor, unit_gross_minor, amount_net_minor, tax_minor, amount_minor)
  SELECT 'inv_' || lpad(i::text, 22, '0'), 'rental_days', 'rnt_' || lpad((i * 2 + r)::text, 22, '0'),
    u.description, d.days, u.net, u.tax, u.net + u.tax, d.days * u.net, d.days * u.tax,
    d.days * (u.net + u.tax)
  FROM generate_series(1, 10000) i, generate_series(0, 1) r,
    LATERAL (SELECT CASE r WHEN 0 THEN '8x H100-SXM5-80GB' ELSE '1x L4-24GB' END AS description,
      CASE r WHEN 0 THEN 433333::bigint ELSE 100000::bigint END AS net,
      CASE r WHEN 0 THEN 86667::bigint ELSE 20000::bigint END AS tax) u,
    LATERAL (SELECT 1 + (i * 7 + r * 13) % 31 AS days) d;
INSERT INTO invoice_lines (invoice_id, kind, rental_id, description, days, unit_net_minor,
    unit_tax_minor, unit_gross_minor, amount_net_minor, tax_minor, amount_minor)
  SELECT 'inv_' || lpad(i::text, 22, '0'), 'sla_credit', 'rnt_' || lpad((i * 2)::text, 22, '0'),
    'SLA credit: 4 hours unavailable', 0, -72222, -14444, -86666, -72222, -14444, -86666
  FROM generate_series(10, 10000, 10) i;
UPDATE invoices i SET subtotal_minor = s.net, tax_minor = s.tax, total_minor = s.gross
  FROM (SELECT invoice_id, sum(amount_net_minor) AS net, sum(tax_minor) AS tax,
      sum(amount_minor) AS gross FROM invoice_lines GROUP BY invoice_id) s
  WHERE i.id = s.invoice_id;
)SQL";

// One embedded cluster for the whole run, migrated, with the orgs; removed at exit.
class InvoiceBenchEnv {
 public:
  static InvoiceBenchEnv& get() {
    static InvoiceBenchEnv env;
    return env;
  }

  ~InvoiceBenchEnv() {
    pool_.reset();  // connections close before the server stops
    postgres_.reset();
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  PgPool& pool() { return *pool_; }
  billing::InvoiceStore& store() { return store_; }

  // January's 10,000 drafts again, nothing issued.
  void seed_drafts() {
    pqxx::connection c(postgres_->url());
    pqxx::nontransaction tx(c);
    tx.exec(kSeedDrafts);
    // As autovacuum would have by the month's end (VACUUM runs outside a transaction block,
    // so on its own).
    tx.exec("VACUUM ANALYZE invoices");
    tx.exec("VACUUM ANALYZE invoice_lines");
  }

  long long count(const std::string& sql) {
    pqxx::connection c(postgres_->url());
    pqxx::nontransaction tx(c);
    return tx.exec(sql)[0][0].as<long long>();
  }

 private:
  InvoiceBenchEnv() {
    spdlog::set_level(spdlog::level::warn);
    std::string pattern = "/tmp/gpurent-invbench-XXXXXX";
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    root_ = pattern;
    chmod(root_.c_str(), 0755);  // the server may run as the postgres user
    postgres_.emplace(EmbeddedPostgresOptions{.data_dir = root_ + "/pg"});
    postgres_->start();
    Migrator(postgres_->url(), embedded_migrations()).migrate();
    {
      pqxx::connection c(postgres_->url());
      pqxx::nontransaction seed(c);
      seed.exec(kSeedOrgs);
    }
    pool_ = std::make_unique<PgPool>(PgPoolOptions{
        .url = postgres_->url(), .size = 4, .statement_timeout = std::chrono::seconds(60)});
  }

  std::string root_;
  std::optional<EmbeddedPostgres> postgres_;
  SystemClock clock_;
  std::unique_ptr<PgPool> pool_;
  billing::InvoiceStore store_{clock_, "RUB", 2000, "Europe/Moscow"};
};

Timestamp utc(int y, unsigned m, unsigned d, int hour) {
  std::chrono::sys_days day{std::chrono::year{y} / std::chrono::month{m} / std::chrono::day{d}};
  return std::chrono::time_point_cast<Timestamp::duration>(day + std::chrono::hours(hour));
}

// Every iteration: January's drafts seeded afresh (not timed), then February 1st's run of
// finalise_due on `finalisers` threads at once, each in batches of `batch`, until all
// 10,000 are issued.
void BM_FinaliseMonth(benchmark::State& state) {
  auto& env = InvoiceBenchEnv::get();
  const int batch = static_cast<int>(state.range(0));
  const int finalisers = static_cast<int>(state.range(1));
  const Timestamp now = utc(2026, 2, 1, 6);
  std::vector<double> seconds_per_run;
  for (auto _ : state) {
    env.seed_drafts();
    std::vector<int> issued(static_cast<std::size_t>(finalisers), 0);
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int i = 0; i < finalisers; ++i) {
      threads.emplace_back([&, i] {
        issued[static_cast<std::size_t>(i)] = env.store().finalise_due(env.pool(), now, batch);
      });
    }
    for (auto& t : threads) t.join();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(seconds);
    seconds_per_run.push_back(seconds);
    int total = 0;
    for (int n : issued) total += n;
    if (total != kOrgs) state.SkipWithError("not every draft was issued");
  }
  if (env.count("SELECT last_number FROM invoice_numbers WHERE year = 2026") != kOrgs ||
      env.count("SELECT count(DISTINCT number) FROM invoices") != kOrgs) {
    state.SkipWithError("the numbers are not 1..10000");
  }
  std::sort(seconds_per_run.begin(), seconds_per_run.end());
  state.counters["invoices_per_s"] =
      static_cast<double>(kOrgs) / seconds_per_run[seconds_per_run.size() / 2];
  state.counters["median_s"] = seconds_per_run[seconds_per_run.size() / 2];
}
BENCHMARK(BM_FinaliseMonth)
    ->ArgNames({"batch", "finalisers"})
    ->ArgsProduct({{100, 500, 2000}, {1}})
    ->Args({500, 2})
    ->Args({500, 4})
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

// One charged day in a transaction of its own, on February's drafts of the 10,000 orgs
// (each org's draft made by its first charge): p50/p99 per charge.
void BM_AddRentalDay(benchmark::State& state) {
  auto& env = InvoiceBenchEnv::get();
  const billing::UnitAmounts unit{433'333, 86'667, 520'000};
  std::vector<double> ms;
  long long i = 0;
  for (auto _ : state) {
    const long long org = 1 + i % kOrgs;
    const unsigned day = 1 + static_cast<unsigned>((i / kOrgs) % 28);
    ++i;
    char org_id[32], rental_id[32];
    std::snprintf(org_id, sizeof org_id, "org_%022lld", org);
    std::snprintf(rental_id, sizeof rental_id, "rnt_%022lld", org * 2);
    const auto start = std::chrono::steady_clock::now();
    env.pool().transact("bench_add_rental_day", [&](Tx& tx) {
      env.store().add_rental_day(tx, org_id, rental_id, "8x H100-SXM5-80GB", utc(2026, 2, day, 12),
                                 unit);
    });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(seconds);
    ms.push_back(seconds * 1e3);
  }
  std::sort(ms.begin(), ms.end());
  state.counters["p50_ms"] = ms[ms.size() / 2];
  state.counters["p99_ms"] = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
}
BENCHMARK(BM_AddRentalDay)->UseManualTime()->MinTime(3.0)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpurent
