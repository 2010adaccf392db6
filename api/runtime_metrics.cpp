// The process's own metrics.
#include "api/runtime_metrics.h"

#include "core/build_info.h"

#include <cstdio>
#include <string>

namespace gpurent {

void add_runtime_collectors(http::Metrics& metrics, PgPool& pool, WorkerPool& workers) {
  metrics.add_collector([&pool, &workers](std::string& out) {
    using http::append_metric;
    PgPoolStats s = pool.stats();
    append_metric(out, "gpurent_db_pool_size", "gauge",
                  "Database connections the pool may open (db_pool_size).", s.size);
    append_metric(out, "gpurent_db_pool_open", "gauge", "Database connections open now.", s.open);
    append_metric(out, "gpurent_db_pool_in_use", "gauge", "Database connections leased now.",
                  s.in_use);
    append_metric(out, "gpurent_db_pool_waiting", "gauge",
                  "Callers waiting for a free database connection.", s.waiting);
    append_metric(out, "gpurent_db_pool_acquired_total", "counter",
                  "Database connection leases handed out.", s.acquired_total);
    append_metric(out, "gpurent_db_pool_wait_timeouts_total", "counter",
                  "Callers that waited past db_pool_wait for a connection (answered 503).",
                  s.wait_timeouts_total);
    append_metric(out, "gpurent_db_pool_connect_failures_total", "counter",
                  "Attempts to open a database connection that failed.", s.connect_failures_total);
    append_metric(out, "gpurent_db_pool_broken_total", "counter",
                  "Database connections dropped as broken after an error.", s.broken_total);
    append_metric(out, "gpurent_db_round_trips_total", "counter",
                  "Round trips to PostgreSQL: statements, PREPAREs, BEGINs and COMMITs.",
                  s.round_trips_total);
    append_metric(out, "gpurent_worker_queue_depth", "gauge",
                  "Tasks queued for the worker threads (database and blocking work).",
                  workers.queued());
    append_metric(out, "gpurent_worker_busy", "gauge", "Worker threads running a task now.",
                  workers.busy());
    http::append_family(out, "gpurent_build_info", "gauge",
                        "The running build: always 1, its version and commit as labels.");
    char line[256];
    std::snprintf(line, sizeof line, "gpurent_build_info{version=\"%s\",commit=\"%s\"} 1\n",
                  GPURENT_VERSION, build_commit());
    out += line;
  });
}

void add_rate_limit_collector(http::Metrics& metrics, const http::RateLimiters& limiters,
                              const http::LoginThrottle& login) {
  metrics.add_collector([&limiters, &login](std::string& out) {
    http::append_family(out, "gpurent_rate_limited_total", "counter",
                        "Requests refused with 429, by limiter.");
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
void add_http_server_collector(http::Metrics& metrics, const http::HttpServer& server) {
  metrics.add_collector([&server](std::string& out) {
    using http::append_metric;
    http::HttpServerStats s = server.stats();
    append_metric(out, "gpurent_http_connections_open", "gauge", "HTTP connections open now.",
                  s.connections_open);
    append_metric(out, "gpurent_http_connections_peak", "gauge",
                  "The most HTTP connections open at once since start.", s.connections_peak);
    append_metric(out, "gpurent_http_connections_max", "gauge",
                  "HTTP connections allowed at once (http_max_connections).", s.connections_max);
    append_metric(out, "gpurent_http_connections_accepted_total", "counter",
                  "HTTP connections accepted.", s.connections_accepted_total);
    append_metric(out, "gpurent_http_connections_refused_total", "counter",
                  "HTTP connections over the limit, answered 503 and closed.",
                  s.connections_refused_total);
    append_metric(out, "gpurent_http_accept_errors_total", "counter",
                  "Failed accepts (out of descriptors, memory, ...).", s.accept_errors_total);
    append_metric(out, "gpurent_http_requests_waiting", "gauge",
                  "Requests waiting to be called again, holding no worker (long polls).",
                  s.requests_waiting);
    append_metric(out, "gpurent_http_inline_answered_total", "counter",
                  "Requests answered on the network thread.", s.inline_answered_total);
    append_metric(out, "gpurent_http_inline_diverted_total", "counter",
                  "Requests that would have blocked the network thread, run on a worker.",
                  s.inline_diverted_total);
    if (!s.tls) return;
    append_metric(out, "gpurent_tls_certificate_expiry_timestamp_seconds", "gauge",
                  "When the HTTPS certificate in service expires (seconds since the epoch).",
                  s.tls_certificate_not_after);
    append_metric(out, "gpurent_tls_reloads_total", "counter",
                  "HTTPS certificate reloads (SIGHUP) that took effect.", s.tls_reloads_total);
    append_metric(out, "gpurent_tls_reload_failures_total", "counter",
                  "HTTPS certificate reloads refused (the files unusable; the old one stays).",
                  s.tls_reload_failures_total);
    append_metric(out, "gpurent_tls_handshake_failures_total", "counter",
                  "TLS handshakes that failed (plain HTTP, old protocol versions, scanners).",
                  s.tls_handshake_failures_total);
  });
}

void add_listener_collector(http::Metrics& metrics, const NotifyListener& listener) {
  metrics.add_collector([&listener](std::string& out) {
    http::append_metric(out, "gpurent_notify_reconnects_total", "counter",
                        "Times the notification listener connected again after losing its "
                        "connection (announcements sent meanwhile are lost).",
                        listener.reconnects_total());
    http::append_metric(out, "gpurent_notifications_total", "counter",
                        "Notifications the listener received from PostgreSQL.",
                        listener.notifications_total());
  });
}

}  // namespace gpurent
