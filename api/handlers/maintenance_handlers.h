// Maintenance windows (platform admins): POST /v1/admin/maintenance plans windows on nodes,
// GET lists them, DELETE /v1/admin/maintenance/{id} cancels one (scheduler/maintenance.h).
#pragma once

#include "api/router.h"
#include "core/db_pool.h"
#include "scheduler/maintenance.h"

#include <nlohmann/json.hpp>

namespace gpurent::http {

struct MaintenanceRoutesState {
  PgPool* pool = nullptr;
  scheduler::Maintenance* maintenance = nullptr;
};

void add_maintenance_routes(Router& router, MaintenanceRoutesState& state);

// {id, node_id, start, end, reason, created_by, created_at, cancelled_at}
nlohmann::json maintenance_window_json(const scheduler::MaintenanceWindow& w);

}  // namespace gpurent::http
