// Database checks used by readiness probes and operational tooling.
#pragma once

#include "core/db_pool.h"

#include <chrono>
#include <string>

namespace gpurent {

struct DbHealth {
  bool reachable = false;
  int schema_version = 0;  // highest applied migration; 0 when none or unreachable
  std::string error;
};

// One round trip on a pooled connection: is the database there, and at which migration?
// Never throws.
DbHealth check_database(PgPool& pool);

// Holds a pooled connection busy in the database for `duration` (pg_sleep). Test mode only:
// lets tests exercise slow requests, pool exhaustion and shutdown with real database work.
void hold_database_connection(PgPool& pool, std::chrono::milliseconds duration);

}  // namespace gpurent
