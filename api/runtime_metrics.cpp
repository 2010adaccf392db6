// The process's own metrics.
#include "api/runtime_metrics.h"

#include "core/build_info.h"

#include <cstdio>
#include <string>

namespace gpurent {

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
    line("gpurent_http_inline_answered_total", "counter", s.inline_answered_total);
    line("gpurent_http_inline_diverted_total", "counter", s.inline_diverted_total);
  });
}

void add_listener_collector(http::Metrics& metrics, const NotifyListener& listener) {
  metrics.add_collector([&listener](std::string& out) {
    auto line = [&out](const char* name, std::uint64_t value) {
      out.append("# TYPE ").append(name).append(" counter\n").append(name).append(" ");
      out.append(std::to_string(value)).append("\n");
    };
    line("gpurent_notify_reconnects_total", listener.reconnects_total());
    line("gpurent_notifications_total", listener.notifications_total());
  });
}

}  // namespace gpurent
