// Platform administration of the fleet: sites (/v1/admin/sites), nodes with their state
// machine (/v1/admin/nodes, …/{maintenance,drain,activate,retire}) and link matrices
// (PUT /v1/admin/nodes/{id}/topology with `nvidia-smi topo -m` text), and what the node's
// agent reported: its GPUs' telemetry history and its health history.
#pragma once

#include "api/auth.h"
#include "api/router.h"
#include "core/db_pool.h"
#include "inventory/fleet_reports.h"
#include "inventory/node_health_log.h"
#include "inventory/node_host_keys.h"
#include "inventory/node_store.h"
#include "inventory/site_store.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace gpurent::http {

struct NodeAdminRoutesState {
  PgPool* pool = nullptr;
  inventory::SiteStore* sites = nullptr;
  inventory::NodeStore* nodes = nullptr;
  inventory::NodeHostKeys* host_keys = nullptr;  // shown in the node view when set
  // The latest telemetry and health events in the node view, and the routes of the
  // telemetry history and the health history, when set.
  inventory::NodeHealthLog* health_log = nullptr;
  inventory::FleetReports* reports = nullptr;  // the node list and the reports' histories
  // The node's rentals as the scheduler prints them, newest first, read in the same use
  // case; set by the process's wiring (inventory knows nothing of rentals). Unset: none.
  std::function<nlohmann::json(Tx&, const std::string& node_id)> rentals;
  // Runs in the transition's transaction after the node's row is locked and moved, and may
  // refuse the move by throwing (the scheduler refuses to retire a node with a rental
  // running on it). Unset: every move the node's state machine allows.
  std::function<void(Tx&, const std::string& node_id, inventory::NodeAction)> check_transition;
};

void add_node_admin_routes(Router& router, NodeAdminRoutesState& state);

}  // namespace gpurent::http
