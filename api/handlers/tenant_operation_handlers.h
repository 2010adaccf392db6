// What a tenant may do about the platform's operations on its rentals (issue "Operations that
// respect the tenant"): answer a maintenance notice (POST /v1/rentals/{id}/notices/{notice_id}/
// choice), reboot a rental of a whole node (POST /v1/rentals/{id}/reboot), set the command
// the agent runs as the rental's login when a notice reaches the node (PUT/GET/DELETE
// /v1/rentals/{id}/checkpoint), and read the rental's handovers (GET
// /v1/rentals/{id}/handovers). Every route fixes the caller's org: another org's rental is 404.
#pragma once

#include "api/router.h"
#include "scheduler/maintenance.h"
#include "scheduler/rentals.h"

namespace gpurent::http {

struct TenantOperationRoutesState {
  scheduler::Rentals* rentals = nullptr;
  scheduler::Maintenance* maintenance = nullptr;
  std::string currency;  // the platform's: what handovers' credits are in
};

void add_tenant_operation_routes(Router& router, TenantOperationRoutesState& state);

}  // namespace gpurent::http
