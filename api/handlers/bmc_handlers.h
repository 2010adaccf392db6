// A node's BMC and its power (platform admins): PUT/GET /v1/admin/nodes/{id}/bmc and POST
// /v1/admin/nodes/{id}/power (bmc/node_power.h).
#pragma once

#include "api/router.h"
#include "bmc/node_power.h"

namespace gpurent::http {

struct BmcRoutesState {
  bmc::NodePower* power = nullptr;
};

void add_bmc_routes(Router& router, BmcRoutesState& state);

}  // namespace gpurent::http
