// The process's own metrics: the database pool, workers, build, rate limiters, connections
// and the notify listener. Modules add theirs in their wiring.
#pragma once

#include "api/http_server.h"
#include "api/metrics.h"
#include "api/rate_limiter.h"
#include "core/db_pool.h"
#include "core/notify_listener.h"
#include "core/worker_pool.h"

namespace gpurent {

void add_runtime_collectors(http::Metrics& metrics, PgPool& pool, WorkerPool& workers);

// Refusals per limiter: a climbing login_account count is someone guessing passwords.
void add_rate_limit_collector(http::Metrics& metrics, const http::RateLimiters& limiters,
                              const http::LoginThrottle& login);

// Connections against their limit, and requests waiting off the workers.
void add_http_server_collector(http::Metrics& metrics, const http::HttpServer& server);

// Reconnects show whether announcements could have been missed (the caches were dropped).
void add_listener_collector(http::Metrics& metrics, const NotifyListener& listener);

}  // namespace gpurent
