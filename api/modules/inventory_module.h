// Inventory's wiring: sites, nodes, the catalog of GPU models and images, prices; the
// catalog's in-memory documents and their invalidation across replicas; routes and metrics.
#pragma once

#include "api/handlers/catalog_admin_handlers.h"
#include "api/handlers/catalog_handlers.h"
#include "api/handlers/node_admin_handlers.h"
#include "api/metrics.h"
#include "api/modules/module_context.h"
#include "inventory/catalog_store.h"
#include "inventory/demo_fleet.h"
#include "inventory/fleet_reports.h"
#include "inventory/node_store.h"
#include "inventory/price_store.h"
#include "inventory/site_store.h"

namespace gpurent {

class InventoryModule {
 public:
  // Subscribes the catalog cache to every replica's catalog announcements.
  explicit InventoryModule(const ModuleContext& ctx);
  InventoryModule(const InventoryModule&) = delete;
  InventoryModule& operator=(const InventoryModule&) = delete;

  void add_routes(http::Router& router);
  // The node view lists the node's rentals through this (the scheduler's), when wired.
  void show_node_rentals_with(std::function<nlohmann::json(Tx&, const std::string&)> rentals) {
    node_admin_routes_.rentals = std::move(rentals);
  }
  // A node's state change is also refused by this (the scheduler's), when wired.
  void check_node_transitions_with(
      std::function<void(Tx&, const std::string&, inventory::NodeAction)> check) {
    node_admin_routes_.check_transition = std::move(check);
  }
  void add_metrics(http::Metrics& metrics) const;

  // Inventory's stores, the one instance of each in the process, for the modules that read
  // nodes, the catalog and prices (the scheduler, the agents' control plane).
  inventory::NodeStore& nodes() { return node_store_; }
  inventory::NodeHostKeys& host_keys() { return host_keys_; }
  inventory::NodeHealthLog& health_log() { return health_log_; }
  inventory::CatalogStore& catalog() { return catalog_store_; }
  inventory::PriceStore& prices() { return price_store_; }

  // For `make run`'s demo fleet.
  inventory::DemoFleetStores demo_fleet_stores() {
    return {.sites = &site_store_,
            .nodes = &node_store_,
            .catalog = &catalog_store_,
            .prices = &price_store_};
  }

 private:
  inventory::CatalogStore catalog_store_;
  inventory::SiteStore site_store_;
  inventory::NodeStore node_store_;
  inventory::NodeHostKeys host_keys_;
  inventory::NodeHealthLog health_log_;
  inventory::PriceStore price_store_;
  http::CatalogCache catalog_cache_;
  inventory::FleetReports fleet_reports_;
  http::CatalogRoutesState catalog_routes_;
  http::NodeAdminRoutesState node_admin_routes_;
  http::CatalogAdminRoutesState catalog_admin_routes_;
};

}  // namespace gpurent
