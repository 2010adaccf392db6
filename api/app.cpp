// gpurentd serving: the database, the worker pool, the modules' wiring, the request
// pipeline and the HTTP server. Each module wires its own stores, caches, routes and
// metrics (api/modules/); this file only puts them together and runs them.
#include "api/app.h"

#include "api/database.h"
#include "api/demo_seed.h"
#include "api/handlers/ops_handlers.h"
#include "api/handlers/test_handlers.h"
#include "api/http_server.h"
#include "api/idempotency.h"
#include "api/modules/agent_module.h"
#include "api/modules/billing_module.h"
#include "api/modules/identity_module.h"
#include "api/modules/inventory_module.h"
#include "api/modules/scheduler_module.h"
#include "api/modules/webhook_module.h"
#include "api/openapi.h"
#include "api/pipeline.h"
#include "api/rate_limiter.h"
#include "api/runtime_metrics.h"
#include "api/static_files.h"
#include "core/announcement_barrier.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/log.h"
#include "core/notify_listener.h"
#include "core/service_notify.h"
#include "core/trusted_proxies.h"
#include "core/worker_pool.h"

#include <array>
#include <cstdio>
#include <fstream>

namespace gpurent {
namespace {

constexpr std::size_t kWorkerQueueLimit = 4096;

// Write then rename, so a reader never sees a half-written number: the HTTP port, then the
// agent listener's when it is on.
void write_port_file(const std::string& path, unsigned short port, unsigned short agent_port) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << port << "\n";
    if (agent_port != 0) out << agent_port << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

}  // namespace

int run_server(const Config& config) {
  Database db;
  open_database(config, db);
  if (config.migrate_on_start) migrate(db.url);

  PgPool pool({.url = db.url,
               .size = config.db_pool_size,
               .wait_timeout = config.db_pool_wait,
               .statement_timeout = config.db_statement_timeout});
  WorkerPool workers(config.worker_threads, kWorkerQueueLimit);
  SystemClock system_clock;
  TestClock test_clock;
  const Clock& clock = config.test_mode ? static_cast<const Clock&>(test_clock) : system_clock;
  // One connection listens for every replica's announcements (credential and catalog
  // changes); the modules subscribe before it starts.
  NotifyListener listener({.url = db.url});
  ModuleContext context{.config = config, .pool = pool, .clock = clock, .listener = listener};
  // The stores other modules read through come first; then each module, given the stores
  // and modules it works through, in dependency order. Identity and inventory come last:
  // they show what billing and the scheduler say (balances, a node's rentals).
  IdentityStores identity_stores(clock);
  InventoryStores inventory_stores(clock, config, [&listener] { return listener.connected(); });
  BillingModule billing(context, identity_stores.orgs);
  SchedulerModule scheduler(context, {.orgs = identity_stores.orgs,
                                      .ssh_keys = identity_stores.ssh_keys,
                                      .nodes = inventory_stores.nodes,
                                      .catalog = inventory_stores.catalog,
                                      .catalog_copy = inventory_stores.catalog_copy,
                                      .prices = inventory_stores.prices,
                                      .charges = billing.charges(),
                                      .lifecycle_jobs = billing.lifecycle_jobs()});
  billing.set_line_details(scheduler);
  IdentityModule identity(context, identity_stores, billing);
  InventoryModule inventory(context, inventory_stores, scheduler);
  AgentModule agents(context, workers,
                     {.nodes = inventory_stores.nodes,
                      .host_keys = inventory_stores.host_keys,
                      .health_log = inventory_stores.health_log,
                      .tasks = scheduler.task_store(),
                      .lifecycle = scheduler.lifecycle(),
                      .ssh_access = scheduler.ssh_access()});
  WebhookModule webhooks(context, {.rentals = scheduler.rentals(),
                                   .lifecycle = scheduler.lifecycle(),
                                   .ledger = billing.ledger(),
                                   .notices = scheduler.notices()});
  // Adding a module is its folder, its line above and its place here.
  const std::array<Module*, 6> modules{&identity,  &inventory, &billing,
                                       &scheduler, &agents,    &webhooks};
  AnnouncementBarrier barrier(listener, pool);

  http::Router router;
  http::OpsState ops{.pool = &pool, .expected_schema_version = expected_schema_version()};
  http::add_ops_routes(router, ops);
  for (auto* m : modules) m->add_routes(router);
  http::TestRoutesState test_state{.pool = &pool,
                                   .clock = &test_clock,
                                   .tasks = &scheduler.task_store(),
                                   .lifecycle = &scheduler.lifecycle(),
                                   .fleet = &agents.control_plane()};
  if (config.test_mode) {
    log::warn("test mode: test clock and test-only routes are enabled");
    http::add_test_routes(router, test_state);
  }

  listener.start();
  // However this function ends, the listener's thread stops before the modules its
  // callbacks use are destroyed (they are declared before it stops).
  struct ListenerStop {
    NotifyListener& listener;
    ~ListenerStop() { listener.stop(); }
  } listener_stop{listener};

  // Every POST route that takes Idempotency-Key gets it from one place.
  http::IdempotencyGuard idempotency(pool, identity.idempotency_store());
  http::compose_pipeline(router, {.authenticator = identity.authenticator(),
                                  .idempotency = idempotency,
                                  .credentials = identity.credentials(),
                                  .barrier = barrier});

  std::vector<std::string> labels;
  for (const auto& r : router.routes()) labels.push_back(r.pattern);
  http::Metrics metrics(std::move(labels));
  add_runtime_collectors(metrics, pool, workers);
  add_listener_collector(metrics, listener);
  idempotency.add_metrics(metrics);
  for (auto* m : modules) m->add_metrics(metrics);
  ops.metrics = &metrics;
  // The suite holds the document to the router through test-mode servers
  // (GET /v1/test/openapi-check): the fragments are compiled in, so a released binary has
  // passed that check and need not repeat it. Outside test mode it is built now rather than
  // on a client's first request.
  http::OpenApiDocument openapi(router, GPURENT_VERSION, config.test_mode);
  if (!config.test_mode) openapi.text();
  ops.openapi = &openapi;
  test_state.openapi = &openapi;

  http::StaticFiles static_files(config.web_root);
  http::RateLimiters rate_limiters(config.rate_limit_per_credential,
                                   config.rate_limit_burst_per_credential, config.rate_limit_per_ip,
                                   config.rate_limit_burst_per_ip);
  add_rate_limit_collector(metrics, rate_limiters, identity.login_throttle());
  TrustedProxies trusted_proxies = TrustedProxies::parse(config.trusted_proxies);
  http::HttpServer server({.host = config.listen_host,
                           .port = config.listen_port,
                           .io_threads = config.io_threads,
                           .body_limit = config.http_body_limit,
                           .header_limit = config.http_header_limit,
                           .read_timeout = config.http_read_timeout,
                           .write_timeout = config.http_write_timeout,
                           .idle_timeout = config.http_idle_timeout,
                           .pipeline_limit = config.http_pipeline_limit,
                           .max_connections = config.http_max_connections,
                           .shutdown_deadline = config.shutdown_deadline,
                           .tls_certificate = config.tls_certificate,
                           .tls_key = config.tls_key,
                           .hsts_max_age = config.hsts_max_age,
                           .rate_limiters = &rate_limiters,
                           .trusted_proxies = &trusted_proxies,
                           .on_shutdown = [] { service::notify("STOPPING=1"); }},
                          router, metrics, workers, &static_files);
  add_http_server_collector(metrics, server);
  ops.shutting_down = [&server] { return server.shutting_down(); };
  unsigned short port = server.listen();
  for (auto* m : modules) m->start();
  unsigned short agent_port = agents.agent_port();
  if (config.demo)
    seed_demo(config, pool, identity.identity_store(), inventory.demo_fleet_stores(),
              billing.top_ups());
  if (!config.port_file.empty()) write_port_file(config.port_file, port, agent_port);
  log::info("gpurentd {} listening on {}://{}:{}", GPURENT_VERSION,
            config.tls_certificate.empty() ? "http" : "https", config.listen_host, port);
  if (agent_port != 0) {
    log::info("agent listener on https://{}:{} (CA in {})", config.agent_listen_host, agent_port,
              config.agent_pki_dir);
  }
  // Under systemd (Type=notify, deploy/systemd/gpurentd.service): ready once migrated and
  // listening, alive while the network threads answer.
  service::notify("READY=1\nSTATUS=serving on port " + std::to_string(port));
  service::Watchdog watchdog(
      [&server](std::chrono::milliseconds t) { return server.responsive(t); });
  server.run();
  agents.stop();  // its channels close before the workers and the pool they use stop
  // Past the deadline some requests may still be in the database: cancel them so the
  // workers can finish and the process exits now rather than at the statement timeout.
  pool.cancel_all();
  workers.stop();
  listener.stop();
  // The scheduler's run ends after the step in progress, webhooks after the delivery in
  // progress (unsent claims return with their lease), identity writes the uses still pending.
  for (auto it = modules.rbegin(); it != modules.rend(); ++it) (*it)->stop();
  log::info("stopped");
  return 0;
}

}  // namespace gpurent
