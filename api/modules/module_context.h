// What every module's wiring receives from the process: configuration, the database pool,
// the clock, and the listener that carries other replicas' announcements.
#pragma once

#include "core/clock.h"
#include "core/config.h"
#include "core/db_pool.h"
#include "core/notify_listener.h"

namespace gpurent {

struct ModuleContext {
  const Config& config;
  PgPool& pool;
  const Clock& clock;
  // Subscribe before the process starts it; callbacks run on the listener's thread.
  NotifyListener& listener;
};

}  // namespace gpurent
