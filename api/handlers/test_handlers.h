// Test-mode routes (config test_mode): a slow database request and the test clock.
// They are registered only in test mode and left out of the OpenAPI document.
#pragma once

#include "api/router.h"
#include "core/clock.h"
#include "core/db_pool.h"

namespace gpurent::http {

struct TestRoutesState {
  PgPool* pool = nullptr;
  TestClock* clock = nullptr;
};

void add_test_routes(Router& router, TestRoutesState& state);

}  // namespace gpurent::http
