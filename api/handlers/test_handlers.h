// Test-mode routes (config test_mode): a slow database request, the test clock, and the
// rental lifecycle driven by hand (a run at the test clock's now, agent tasks completed).
// They are registered only in test mode and left out of the OpenAPI document.
#pragma once

#include "api/openapi.h"
#include "api/router.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "fleet/control_plane.h"
#include "scheduler/lifecycle.h"
#include "scheduler/task_store.h"

#include <string>
#include <vector>

namespace gpurent::http {

struct TestRoutesState {
  PgPool* pool = nullptr;
  TestClock* clock = nullptr;
  // Until the node agent exists, e2e tests report its tasks through these.
  scheduler::TaskStore* tasks = nullptr;
  scheduler::Lifecycle* lifecycle = nullptr;
  // A lifecycle run judges the agents' silence first, as the agents' poll does.
  fleet::ControlPlane* fleet = nullptr;
  // Where the router and api/openapi/ disagree (api/openapi.h), set before serving.
  OpenApiDocument* openapi = nullptr;
};

void add_test_routes(Router& router, TestRoutesState& state);

}  // namespace gpurent::http
