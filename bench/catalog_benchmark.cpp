// What the catalog snapshot saves: a warm hit against a rebuild from PostgreSQL, reads under
// contention, and how long a committed change takes to reach a replica's cache.
#include "api/handlers/catalog_handlers.h"
#include "api/http_types.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/embedded_postgres.h"
#include "core/migrator.h"
#include "core/notify_listener.h"
#include "identity/identity_store.h"
#include "inventory/catalog_store.h"
#include "inventory/demo_fleet.h"
#include "inventory/node_store.h"
#include "inventory/price_store.h"
#include "inventory/site_store.h"
#include "migrations/embedded_migrations.h"

#include <benchmark/benchmark.h>
#include <spdlog/spdlog.h>
#include <pqxx/pqxx>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace gpurent {
namespace {

using namespace std::chrono_literals;

// A statement-level trigger on images notifies even when no value changes, so this is a
// catalog "change" that leaves the data as it was.
constexpr const char* kTouchImageSql = "UPDATE images SET os = os WHERE id = $1";
constexpr const char* kCatalogChannel = "gpurent_catalog";
constexpr auto kNotifyWait = 5s;

// One embedded cluster for the whole run, migrated and seeded with the demo fleet as
// `gpurentd --demo=true` does. Built on first use; its destructor (at exit) stops the
// server and removes the temporary folder. A crash leaves both behind, like any test run.
class CatalogBenchEnv {
 public:
  static CatalogBenchEnv& get() {
    static CatalogBenchEnv env;
    return env;
  }

  ~CatalogBenchEnv() {
    cache_.reset();
    catalog_.reset();
    pool_.reset();  // connections close before the server stops
    postgres_.reset();
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  std::string url() const { return postgres_->url(); }
  inventory::CatalogStore& catalog() { return *catalog_; }
  PgPool& pool() { return *pool_; }
  http::CatalogCache& cache() { return *cache_; }
  const std::string& image_id() const { return image_id_; }

 private:
  CatalogBenchEnv() {
    // Start-up chatter (initdb, migrations) would drown the table.
    spdlog::set_level(spdlog::level::warn);
    std::string pattern = "/tmp/gpurent-catbench-XXXXXX";
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    root_ = pattern;
    chmod(root_.c_str(), 0755);  // the server may run as the postgres user
    postgres_.emplace(EmbeddedPostgresOptions{.data_dir = root_ + "/pg"});
    postgres_->start();
    Migrator(postgres_->url(), embedded_migrations()).migrate();

    pool_ = std::make_unique<PgPool>(PgPoolOptions{.url = postgres_->url(), .size = 8});
    catalog_ = std::make_unique<inventory::CatalogStore>(clock_);
    identity::IdentityStore identity(clock_);
    inventory::SiteStore sites(clock_);
    inventory::NodeStore nodes(clock_, std::chrono::hours(24));
    inventory::PriceStore prices(clock_, "RUB");
    auto admin = pool_->transact("bench_admin", [&](Tx& tx) {
      return identity.create_platform_admin(tx, "admin@gpurent.local", "not-a-login", Actor{});
    });
    if (!inventory::seed_demo_fleet(*pool_, {&sites, &nodes, catalog_.get(), &prices},
                                    Actor{.user_id = admin.id})) {
      throw std::runtime_error("the demo fleet was not seeded into a fresh database");
    }
    auto images = pool_->read("bench_images", [&](Tx& tx) { return catalog_->images(tx, false); });
    if (images.empty()) throw std::runtime_error("the demo fleet has no images");
    image_id_ = images.front().id;
    cache_ = std::make_unique<http::CatalogCache>(
        [this] { return http::build_catalog_documents(*pool_, *catalog_); });
  }

  std::string root_;
  std::optional<EmbeddedPostgres> postgres_;
  SystemClock clock_;
  std::unique_ptr<PgPool> pool_;
  std::unique_ptr<inventory::CatalogStore> catalog_;
  std::unique_ptr<http::CatalogCache> cache_;
  std::string image_id_;
};

// What a handler does after authentication when the request has no query string.
http::Response cached_response(http::CatalogCache& cache) {
  auto docs = cache.get();
  http::Response r;
  r.shared_body = docs->gpu_models_body;
  return r;
}

void BM_CatalogCacheHit(benchmark::State& state) {
  auto& cache = CatalogBenchEnv::get().cache();
  cache.get();
  for (auto _ : state) {
    auto r = cached_response(cache);
    benchmark::DoNotOptimize(r.shared_body.get());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CatalogCacheHit);

void BM_CatalogRebuild(benchmark::State& state) {
  auto& env = CatalogBenchEnv::get();
  std::size_t entries = 0;
  for (auto _ : state) {
    auto docs = http::build_catalog_documents(env.pool(), env.catalog());
    entries = docs.gpu_models.size() + docs.images.size();
    benchmark::DoNotOptimize(docs.images_body.get());
  }
  state.SetItemsProcessed(state.iterations());  // rebuilds
  state.counters["entries"] = static_cast<double>(entries);
}
BENCHMARK(BM_CatalogRebuild)->UseRealTime();

void BM_CatalogInvalidateThenGet(benchmark::State& state) {
  auto& cache = CatalogBenchEnv::get().cache();
  for (auto _ : state) {
    cache.invalidate();
    benchmark::DoNotOptimize(cache.get().get());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CatalogInvalidateThenGet)->UseRealTime();

// Every thread reads the same warm snapshot: one mutex and one shared_ptr copy each.
void BM_CatalogCacheHitContended(benchmark::State& state) {
  auto& cache = CatalogBenchEnv::get().cache();
  cache.get();
  for (auto _ : state) {
    auto r = cached_response(cache);
    benchmark::DoNotOptimize(r.shared_body.get());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CatalogCacheHitContended)->ThreadRange(2, 8)->UseRealTime();

// From the start of the COMMIT of a catalog change on one connection until the listener
// thread (as in every replica) has run its callback: how long a replica can serve the old
// catalog after a change is committed elsewhere.
void BM_CrossReplicaInvalidationLatency(benchmark::State& state) {
  auto& env = CatalogBenchEnv::get();
  std::mutex mutex;
  std::condition_variable cv;
  std::uint64_t seen = 0;
  std::chrono::steady_clock::time_point delivered_at;

  NotifyListener listener({.url = env.url()});
  listener.subscribe(kCatalogChannel, [&](const std::string&) {
    auto now = std::chrono::steady_clock::now();
    env.cache().invalidate();
    std::lock_guard lock(mutex);
    ++seen;
    delivered_at = now;
    cv.notify_all();
  });
  listener.start();
  for (int i = 0; i < 500 && !listener.connected(); ++i) std::this_thread::sleep_for(10ms);
  if (!listener.connected()) {
    state.SkipWithError("the notify listener did not connect");
    return;
  }

  pqxx::connection writer(env.url());
  writer.prepare("touch_image", kTouchImageSql);
  double commit_seconds = 0;
  for (auto _ : state) {
    std::uint64_t before;
    {
      std::lock_guard lock(mutex);
      before = seen;
    }
    pqxx::work tx(writer, "touch_image");
    tx.exec_prepared("touch_image", env.image_id());
    auto start = std::chrono::steady_clock::now();
    tx.commit();
    auto committed = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex);
    if (!cv.wait_for(lock, kNotifyWait, [&] { return seen > before; })) {
      state.SkipWithError("no notification within 5 s of the commit");
      break;
    }
    state.SetIterationTime(std::chrono::duration<double>(delivered_at - start).count());
    commit_seconds += std::chrono::duration<double>(committed - start).count();
  }
  listener.stop();
  if (state.iterations() > 0) {
    state.counters["commit_us"] = commit_seconds * 1e6 / static_cast<double>(state.iterations());
  }
}
BENCHMARK(BM_CrossReplicaInvalidationLatency)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpurent
