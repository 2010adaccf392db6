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

// What the scheduler says of the work on a node (inventory knows nothing of rentals), in the
// node route's own transaction.
class NodeWork {
 public:
  virtual ~NodeWork() = default;
  // The node's rentals as the scheduler prints them, newest first.
  virtual nlohmann::json node_rentals(Tx& tx, const std::string& node_id) = 0;
  // Runs after the node's row is locked and moved, and may refuse the move by throwing (the
  // scheduler refuses to retire a node with a rental running on it).
  virtual void check_node_transition(Tx& tx, const std::string& node_id,
                                     inventory::NodeAction action) = 0;
  // An admin asked for a burn-in of the whole node: the task's id.
  virtual std::string request_burn_in(Tx& tx, const std::string& node_id, int gpu_count) = 0;
  // The node's latest burn-ins as the node view shows them, newest first.
  virtual nlohmann::json node_burn_ins(Tx& tx, const std::string& node_id) = 0;
  // Whether active rentals run on the node (an admin may restart it over its BMC then).
  virtual bool serves_rentals(Tx& tx, const std::string& node_id) = 0;
  // The node's BMC took a restart: its active rentals are handed over again.
  virtual void node_restarted(Tx& tx, const std::string& node_id, const std::string& action) = 0;
};

struct NodeAdminRoutesState {
  PgPool* pool = nullptr;
  inventory::SiteStore* sites = nullptr;
  inventory::NodeStore* nodes = nullptr;
  inventory::NodeHostKeys* host_keys = nullptr;  // shown in the node view when set
  // The latest telemetry and health events in the node view, and the routes of the
  // telemetry history and the health history, when set.
  inventory::NodeHealthLog* health_log = nullptr;
  inventory::FleetReports* reports = nullptr;  // the node list and the reports' histories
  // None: the node view lists no rentals and every move the state machine allows is made.
  NodeWork* work = nullptr;
};

void add_node_admin_routes(Router& router, NodeAdminRoutesState& state);

}  // namespace gpurent::http
