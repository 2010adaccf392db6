// Operational routes: /healthz, /readyz, /metrics, /v1/openapi.json.
#pragma once

#include "api/metrics.h"
#include "api/openapi.h"
#include "api/router.h"
#include "core/db_pool.h"

#include <functional>
#include <memory>
#include <string>

namespace gpurent::http {

struct OpsState {
  PgPool* pool = nullptr;
  int expected_schema_version = 0;      // the newest migration this build carries
  std::function<bool()> shutting_down;  // readyz turns 503 while draining
  Metrics* metrics = nullptr;           // set once all routes are registered
  OpenApiDocument* openapi = nullptr;   // likewise
};

void add_ops_routes(Router& router, OpsState& state);

}  // namespace gpurent::http
