// Liveness, readiness, metrics and the OpenAPI document.
#include "api/handlers/ops_handlers.h"

#include "api/responses.h"
#include "core/db_health.h"

#include <nlohmann/json.hpp>

namespace gpurent::http {

void add_ops_routes(Router& router, OpsState& state) {
  // The same bytes every time: built once, shared by every response.
  auto healthz_body = std::make_shared<const std::string>(R"({"status":"ok"})");
  router.add({.method = Method::kGet,
              .pattern = "/healthz",
              .handler =
                  [healthz_body](const Request&, const Principal&) {
                    Response r;
                    r.shared_body = healthz_body;
                    r.set_header("Cache-Control", "no-store");
                    return r;
                  },
              .execution = Execution::kInline,
              .access = Access::kAnyone,
              .summary = "Liveness: the process is up.",
              .tag = "operations",
              .quiet = true});

  // Ready: not draining, the database answers, and its schema is this build's or newer. A
  // newer schema is the next release's, migrated by its first replica during a rolling
  // upgrade: its migrations keep this build working (docs/DEPLOYMENT.md, "Upgrades"), so this
  // replica stays in the load balancer until it is replaced.
  router.add(
      {.method = Method::kGet,
       .pattern = "/readyz",
       .handler =
           [&state](const Request&, const Principal&) {
             if (state.shutting_down && state.shutting_down()) {
               return error_response(ErrorCode::kUnavailable, "The server is shutting down.");
             }
             DbHealth db = check_database(*state.pool);
             if (!db.reachable) {
               return error_response(Error(ErrorCode::kUnavailable, "The database is unreachable.",
                                           {{"database", "unreachable"}}));
             }
             if (db.schema_version < state.expected_schema_version) {
               return error_response(
                   Error(ErrorCode::kUnavailable, "The database schema is not current.",
                         {{"schema_version", db.schema_version},
                          {"expected_schema_version", state.expected_schema_version}}));
             }
             Response r = json_response(
                 200,
                 {{"status", "ready"}, {"database", "ok"}, {"schema_version", db.schema_version}});
             r.set_header("Cache-Control", "no-store");
             return r;
           },
       .execution = Execution::kWorker,
       .access = Access::kAnyone,
       .summary = "Readiness: the database answers and its schema is current.",
       .tag = "operations",
       .quiet = true});

  router.add({.method = Method::kGet,
              .pattern = "/metrics",
              .handler =
                  [&state](const Request&, const Principal&) {
                    Response r;
                    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
                    r.body = state.metrics ? state.metrics->render() : std::string();
                    return r;
                  },
              .execution = Execution::kInline,
              .access = Access::kAnyone,
              .summary = "Prometheus metrics.",
              .tag = "operations",
              .quiet = true});

  router.add({.method = Method::kGet,
              .pattern = "/v1/openapi.json",
              .handler =
                  [&state](const Request&, const Principal&) {
                    Response r;
                    r.shared_body = state.openapi->text();
                    r.set_header("Cache-Control", "public, max-age=60");
                    return r;
                  },
              .execution = Execution::kInline,
              .access = Access::kAnyone,
              .summary = "This API's OpenAPI 3.1 document.",
              .tag = "operations"});
}

}  // namespace gpurent::http
