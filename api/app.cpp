// Wires config, database, worker pool, router, metrics and the HTTP server together.
#include "api/app.h"

#include "api/auth.h"
#include "api/credential_cache.h"
#include "api/handlers/admin_handlers.h"
#include "api/handlers/audit_handlers.h"
#include "api/handlers/auth_handlers.h"
#include "api/handlers/catalog_admin_handlers.h"
#include "api/handlers/catalog_handlers.h"
#include "api/handlers/member_handlers.h"
#include "api/handlers/node_admin_handlers.h"
#include "api/handlers/ops_handlers.h"
#include "api/handlers/ssh_key_handlers.h"
#include "api/handlers/test_handlers.h"
#include "api/handlers/token_handlers.h"
#include "api/http_server.h"
#include "api/idempotency.h"
#include "api/openapi.h"
#include "api/rate_limiter.h"
#include "core/announcement_barrier.h"
#include "core/build_info.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/embedded_postgres.h"
#include "core/error.h"
#include "core/notify_listener.h"
#include "core/trusted_proxies.h"
#include "core/worker_pool.h"
#include "identity/audit_store.h"
#include "identity/idempotency_store.h"
#include "identity/identity_store.h"
#include "identity/member_store.h"
#include "identity/org_admin_store.h"
#include "identity/password.h"
#include "identity/ssh_key_store.h"
#include "identity/token_store.h"
#include "inventory/catalog_store.h"
#include "inventory/demo_fleet.h"
#include "inventory/node_store.h"
#include "inventory/price_store.h"
#include "inventory/site_store.h"
#include "migrations/embedded_migrations.h"

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "core/crypto.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

namespace gpurent {
namespace {

constexpr std::size_t kWorkerQueueLimit = 4096;

// Holds the embedded cluster when no DATABASE_URL is given.
struct Database {
  std::optional<EmbeddedPostgres> embedded;
  std::string url;
};

// Whether a command may use the embedded cluster of a gpurentd already serving from the
// same data folder, rather than refusing because that gpurentd holds the folder.
enum class EmbeddedUse { kOwn, kShareWithRunningServer };

void open_database(const Config& config, Database& db, EmbeddedUse use = EmbeddedUse::kOwn) {
  if (!config.database_url.empty()) {
    db.url = config.database_url;
    return;
  }
  EmbeddedPostgresOptions options{.data_dir = config.data_dir};
  if (use == EmbeddedUse::kShareWithRunningServer) {
    // The serving gpurentd owns its cluster: reach it through its socket, taking no lock
    // and starting or stopping nothing.
    if (auto url = EmbeddedPostgres::running_server_url(options)) {
      db.url = *url;
      spdlog::info("using the embedded PostgreSQL of the gpurentd serving from {}",
                   config.data_dir);
      return;
    }
  }
  db.embedded.emplace(options);
  db.embedded->start();
  db.url = db.embedded->url();
  spdlog::info("embedded PostgreSQL ready in {}", db.embedded->data_dir());
}

int expected_schema_version() {
  const auto& all = embedded_migrations();
  return all.empty() ? 0 : all.back().version;
}

void add_runtime_collectors(http::Metrics& metrics, PgPool& pool, WorkerPool& workers) {
  metrics.add_collector([&pool, &workers](std::string& out) {
    PgPoolStats s = pool.stats();
    char buf[2048];
    std::snprintf(
        buf, sizeof buf,
        "# TYPE gpurent_db_pool_size gauge\ngpurent_db_pool_size %d\n"
        "# TYPE gpurent_db_pool_open gauge\ngpurent_db_pool_open %d\n"
        "# TYPE gpurent_db_pool_in_use gauge\ngpurent_db_pool_in_use %d\n"
        "# TYPE gpurent_db_pool_waiting gauge\ngpurent_db_pool_waiting %d\n"
        "# TYPE gpurent_db_pool_acquired_total counter\ngpurent_db_pool_acquired_total %llu\n"
        "# TYPE gpurent_db_pool_wait_timeouts_total counter\n"
        "gpurent_db_pool_wait_timeouts_total %llu\n"
        "# TYPE gpurent_db_pool_connect_failures_total counter\n"
        "gpurent_db_pool_connect_failures_total %llu\n"
        "# TYPE gpurent_db_pool_broken_total counter\ngpurent_db_pool_broken_total %llu\n"
        "# TYPE gpurent_db_round_trips_total counter\ngpurent_db_round_trips_total %llu\n"
        "# TYPE gpurent_worker_queue_depth gauge\ngpurent_worker_queue_depth %zu\n"
        "# TYPE gpurent_worker_busy gauge\ngpurent_worker_busy %zu\n"
        "# TYPE gpurent_build_info gauge\n"
        "gpurent_build_info{version=\"%s\",commit=\"%s\"} 1\n",
        s.size, s.open, s.in_use, s.waiting, static_cast<unsigned long long>(s.acquired_total),
        static_cast<unsigned long long>(s.wait_timeouts_total),
        static_cast<unsigned long long>(s.connect_failures_total),
        static_cast<unsigned long long>(s.broken_total),
        static_cast<unsigned long long>(s.round_trips_total), workers.queued(), workers.busy(),
        GPURENT_VERSION, build_commit());
    out += buf;
  });
}

// Refusals per limiter: a climbing login_account count is someone guessing passwords.
void add_rate_limit_collector(http::Metrics& metrics, const http::RateLimiters& limiters,
                              const http::LoginThrottle& login) {
  metrics.add_collector([&limiters, &login](std::string& out) {
    out +=
        "# HELP gpurent_rate_limited_total Requests refused with 429, by limiter.\n"
        "# TYPE gpurent_rate_limited_total counter\n";
    auto line = [&out](const char* limiter, const http::RateLimiter& l) {
      out += "gpurent_rate_limited_total{limiter=\"";
      out += limiter;
      out += "\"} ";
      out += std::to_string(l.refused_total());
      out += "\n";
    };
    line("ip", limiters.per_ip);
    line("credential", limiters.per_credential);
    line("login_account", login.per_account);
    line("login_ip", login.per_ip);
  });
}

// The catalog cache's hits and misses show whether the snapshot works; the listener's
// reconnects show whether invalidations could have been missed.
void add_catalog_cache_collector(http::Metrics& metrics, const http::CatalogCache& cache,
                                 const NotifyListener& listener) {
  metrics.add_collector([&cache, &listener](std::string& out) {
    auto line = [&out](const char* name, std::uint64_t value) {
      out.append("# TYPE ").append(name).append(" counter\n").append(name).append(" ");
      out.append(std::to_string(value)).append("\n");
    };
    line("gpurent_catalog_cache_hits_total", cache.hits());
    line("gpurent_catalog_cache_misses_total", cache.misses());
    line("gpurent_catalog_cache_invalidations_total", cache.invalidations());
    line("gpurent_notify_reconnects_total", listener.reconnects_total());
    line("gpurent_notifications_total", listener.notifications_total());
  });
}

// Connections against their limit, and requests waiting off the workers: a refused count
// that climbs means the limit, or the clients holding connections, need a look.
void add_http_server_collector(http::Metrics& metrics, const http::HttpServer& server) {
  metrics.add_collector([&server](std::string& out) {
    http::HttpServerStats s = server.stats();
    auto line = [&out](const char* name, const char* type, std::uint64_t value) {
      out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
      out.append(name).append(" ").append(std::to_string(value)).append("\n");
    };
    line("gpurent_http_connections_open", "gauge", s.connections_open);
    line("gpurent_http_connections_peak", "gauge", s.connections_peak);
    line("gpurent_http_connections_max", "gauge", s.connections_max);
    line("gpurent_http_connections_accepted_total", "counter", s.connections_accepted_total);
    line("gpurent_http_connections_refused_total", "counter", s.connections_refused_total);
    line("gpurent_http_accept_errors_total", "counter", s.accept_errors_total);
    line("gpurent_http_requests_waiting", "gauge", s.requests_waiting);
  });
}

void add_credential_cache_collector(http::Metrics& metrics, const http::CredentialCache& cache) {
  metrics.add_collector([&cache](std::string& out) {
    auto line = [&out](const char* name, std::uint64_t value) {
      out.append("# TYPE ").append(name).append(" counter\n").append(name).append(" ");
      out.append(std::to_string(value)).append("\n");
    };
    line("gpurent_credential_cache_hits_total", cache.hits());
    line("gpurent_credential_cache_misses_total", cache.misses());
    line("gpurent_credential_cache_invalidations_total", cache.invalidations());
    out.append("# TYPE gpurent_credential_cache_entries gauge\ngpurent_credential_cache_entries ");
    out.append(std::to_string(cache.entries())).append("\n");
  });
}

}  // namespace

int run_migrate(const Config& config) {
  Database db;
  open_database(config, db);
  auto status = Migrator(db.url, embedded_migrations()).migrate();
  spdlog::info("migrations: {} already applied, {} applied now", status.applied, status.pending);
  return 0;
}

// Demo seed for `make run`: a platform admin whose generated password is kept beside the
// data folder (mode 0600) so every start can print the login. Demo only: a real
// deployment creates its admins with `gpurentd admin create`.
void seed_demo(const Config& config, identity::IdentityStore& store,
               const inventory::DemoFleetStores& fleet) {
  constexpr const char* kEmail = "admin@gpurent.local";
  std::string secret_file =
      (std::filesystem::path(config.data_dir).parent_path() / "demo-admin-password").string();
  std::string password;
  std::ifstream(secret_file) >> password;
  if (!store.find_login(kEmail)) {
    auto raw = crypto::random_bytes(12);
    password = crypto::to_hex(raw.data(), raw.size());
    store.create_platform_admin(kEmail, identity::hash_password(password));
    std::filesystem::create_directories(std::filesystem::path(secret_file).parent_path());
    std::ofstream(secret_file) << password << "\n";
    std::filesystem::permissions(
        secret_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }
  if (auto admin = store.find_login(kEmail);
      admin && inventory::seed_demo_fleet(fleet, {admin->first.id, std::nullopt})) {
    spdlog::info("seeded the demo fleet: one site, eight nodes, five images, a price list");
  }
  if (password.empty()) {
    spdlog::warn("demo admin {} exists but its password file {} is gone", kEmail, secret_file);
    return;
  }
  std::printf("\n  demo admin login: %s  password: %s\n\n", kEmail, password.c_str());
  std::fflush(stdout);
}

int run_admin_create(const Config& config, const std::string& email_arg, bool password_from_stdin) {
  std::string email = http::validated_email(email_arg);
  std::string password;
  bool generated = false;
  if (password_from_stdin) {
    std::getline(std::cin, password);
    if (!password.empty() && password.back() == '\r') password.pop_back();
    if (auto why = identity::password_policy_violation(password); !why.empty()) {
      throw ConfigError("password " + why);
    }
  } else {
    // 18 random bytes as hex: 144 bits, shown once and never stored.
    auto raw = crypto::random_bytes(18);
    password = crypto::to_hex(raw.data(), raw.size());
    generated = true;
  }
  Database db;
  open_database(config, db, EmbeddedUse::kShareWithRunningServer);
  Migrator(db.url, embedded_migrations()).migrate();
  PgPool pool({.url = db.url, .size = 1});
  SystemClock clock;
  identity::IdentityStore store(pool, clock);
  auto user = store.create_platform_admin(email, identity::hash_password(password));
  std::printf("created platform admin %s (%s)\n", user.email.c_str(), user.id.c_str());
  if (generated)
    std::printf("password: %s\n(shown once; it is stored only as a hash)\n", password.c_str());
  return 0;
}

int run_server(const Config& config) {
  Database db;
  open_database(config, db);
  if (config.migrate_on_start) {
    auto status = Migrator(db.url, embedded_migrations()).migrate();
    spdlog::info("migrations: {} already applied, {} applied now", status.applied, status.pending);
  }

  PgPool pool({.url = db.url,
               .size = config.db_pool_size,
               .wait_timeout = config.db_pool_wait,
               .statement_timeout = config.db_statement_timeout});
  WorkerPool workers(config.worker_threads, kWorkerQueueLimit);
  SystemClock system_clock;
  TestClock test_clock;
  const Clock& clock = config.test_mode ? static_cast<const Clock&>(test_clock) : system_clock;
  identity::IdentityStore identity_store(pool, clock);
  identity::SshKeyStore ssh_key_store(pool, clock);
  identity::MemberStore member_store(pool, clock);
  identity::TokenStore token_store(pool, clock);
  identity::AuditStore audit_store(pool);
  identity::OrgAdminStore org_admin_store(pool, clock);
  // One connection listens for every replica's announcements: credential and catalog
  // changes. Subscriptions are made below, before start().
  NotifyListener listener({.url = db.url});
  http::CredentialCache credentials(identity_store, token_store, clock,
                                    [&listener] { return listener.caught_up(); });
  listener.subscribe("gpurent_credentials",
                     [&credentials](const std::string&) { credentials.invalidate(); });
  listener.on_connected([&credentials] { credentials.invalidate(); });
  AnnouncementBarrier barrier(listener, pool);
  http::Authenticator authenticator(
      credentials, {.idle = config.session_idle, .absolute = config.session_absolute});

  http::Router router;
  http::OpsState ops;
  ops.pool = &pool;
  ops.expected_schema_version = expected_schema_version();
  http::add_ops_routes(router, ops);
  http::LoginThrottle login_throttle;
  http::AuthRoutesState auth_state{.store = &identity_store,
                                   .auth = &authenticator,
                                   .signup_enabled = config.signup_enabled,
                                   .login_throttle = &login_throttle};
  http::add_auth_routes(router, auth_state);
  http::TokenRoutesState token_state{.store = &token_store};
  http::add_token_routes(router, token_state);
  http::SshKeyRoutesState ssh_key_state{.store = &ssh_key_store};
  http::add_ssh_key_routes(router, ssh_key_state);
  http::MemberRoutesState member_state{.store = &member_store};
  http::add_member_routes(router, member_state);
  http::AuditRoutesState audit_state{.store = &audit_store};
  http::add_audit_routes(router, audit_state);
  http::AdminRoutesState admin_state{.orgs = &org_admin_store, .audit = &audit_store};
  http::add_admin_routes(router, admin_state);
  inventory::CatalogStore catalog_store(pool, clock);
  inventory::SiteStore site_store(pool, clock);
  inventory::NodeStore node_store(pool, clock, config.enrollment_token_ttl);
  inventory::PriceStore price_store(pool, clock, config.currency);
  http::CatalogCache catalog_cache(
      [&catalog_store] { return http::build_catalog_documents(catalog_store); });
  http::CatalogRoutesState catalog_state{.cache = &catalog_cache};
  http::add_catalog_routes(router, catalog_state);
  http::NodeAdminRoutesState node_admin_state{.sites = &site_store, .nodes = &node_store};
  http::add_node_admin_routes(router, node_admin_state);
  http::CatalogAdminRoutesState catalog_admin_state{
      .catalog = &catalog_store, .prices = &price_store, .cache = &catalog_cache};
  http::add_catalog_admin_routes(router, catalog_admin_state);
  // Any change to the catalog, made by any replica or by hand, reaches every replica's cache
  // through a trigger's NOTIFY; after a reconnection the cache is dropped, since
  // notifications sent meanwhile are lost.
  listener.subscribe("gpurent_catalog",
                     [&catalog_cache](const std::string&) { catalog_cache.invalidate(); });
  listener.on_connected([&catalog_cache] { catalog_cache.invalidate(); });
  listener.start();
  // However this function ends, the listener's thread stops before the caches its callbacks
  // use are destroyed (they are declared after it).
  struct ListenerStop {
    NotifyListener& listener;
    ~ListenerStop() { listener.stop(); }
  } listener_stop{listener};
  credentials.start();
  http::TestRoutesState test_state{.pool = &pool, .clock = &test_clock};
  if (config.test_mode) {
    spdlog::warn("test mode: test clock and test-only routes are enabled");
    http::add_test_routes(router, test_state);
  }

  // Every POST route that takes Idempotency-Key gets it from one place.
  identity::IdempotencyStore idempotency_store(pool, clock);
  // The request pipeline, composed once per route: authenticate and check the route's
  // declaration, then the Idempotency-Key guard, then the handler.
  http::IdempotencyGuard idempotency(idempotency_store);
  router.decorate([&idempotency, &authenticator, &credentials, &barrier](const http::Route& r) {
    http::Entry entry = [&authenticator, route = &r,
                         handler = idempotency.wrap(r)](const http::Request& req) {
      return handler(req, http::authorize(authenticator, *route, req));
    };
    if (!r.changes_credentials) return entry;
    return http::Entry([&credentials, &barrier, entry](const http::Request& req) {
      http::Response response;
      try {
        response = entry(req);
      } catch (...) {
        credentials.invalidate();  // a handler that failed may still have committed
        throw;
      }
      credentials.invalidate();
      // Before answering, the change's announcement comes back to this replica's listener.
      // Every replica's listener was sent it at the same commit, so the caller's next
      // request sees the change on whichever replica it lands. Bounded, and only for the
      // few routes that change credentials.
      if (response.status < 300) {
        try {
          if (!barrier.pass(std::chrono::seconds(1))) {
            spdlog::warn("a credential change was not announced back within 1 s");
          }
        } catch (const std::exception& e) {
          spdlog::warn("announcing a credential change failed: {}", e.what());
        }
      }
      return response;
    });
  });

  std::vector<std::string> labels;
  for (const auto& r : router.routes()) labels.push_back(r.pattern);
  http::Metrics metrics(std::move(labels));
  add_runtime_collectors(metrics, pool, workers);
  ops.metrics = &metrics;
  ops.openapi =
      std::make_shared<const std::string>(http::build_openapi(router, GPURENT_VERSION).dump());

  http::StaticFiles static_files(config.web_root);
  http::RateLimiters rate_limiters(config.rate_limit_per_credential,
                                   config.rate_limit_burst_per_credential, config.rate_limit_per_ip,
                                   config.rate_limit_burst_per_ip);
  add_rate_limit_collector(metrics, rate_limiters, login_throttle);
  add_catalog_cache_collector(metrics, catalog_cache, listener);
  add_credential_cache_collector(metrics, credentials);
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
                           .rate_limiters = &rate_limiters,
                           .trusted_proxies = &trusted_proxies},
                          router, metrics, workers, &static_files);
  add_http_server_collector(metrics, server);
  ops.shutting_down = [&server] { return server.shutting_down(); };
  unsigned short port = server.listen();
  if (config.demo) {
    seed_demo(config, identity_store,
              {.sites = &site_store,
               .nodes = &node_store,
               .catalog = &catalog_store,
               .prices = &price_store});
  }
  if (!config.port_file.empty()) {
    // Write then rename, so a reader never sees a half-written number.
    std::string tmp = config.port_file + ".tmp";
    std::ofstream(tmp) << port << "\n";
    std::rename(tmp.c_str(), config.port_file.c_str());
  }
  spdlog::info("gpurentd {} listening on http://{}:{}", GPURENT_VERSION, config.listen_host, port);
  server.run();
  // Past the deadline some requests may still be in the database: cancel them so the
  // workers can finish and the process exits now rather than at the statement timeout.
  pool.cancel_all();
  workers.stop();
  listener.stop();
  credentials.stop();  // writes the uses still pending
  spdlog::info("stopped");
  return 0;
}

}  // namespace gpurent
