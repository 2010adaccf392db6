// Inventory's wiring: sites, nodes, the catalog of GPU models and images, prices; the
// catalog's in-memory documents and their invalidation across replicas; routes and metrics.
#pragma once

#include "api/handlers/bmc_handlers.h"
#include "api/handlers/catalog_admin_handlers.h"
#include "api/handlers/catalog_handlers.h"
#include "api/handlers/node_admin_handlers.h"
#include "api/metrics.h"
#include "api/modules/module.h"
#include "api/modules/module_context.h"
#include "inventory/catalog_copy.h"
#include "inventory/catalog_store.h"
#include "inventory/demo_fleet.h"
#include "inventory/fleet_reports.h"
#include "inventory/node_health_log.h"
#include "inventory/node_host_keys.h"
#include "inventory/node_store.h"
#include "inventory/price_store.h"
#include "inventory/site_store.h"

namespace gpurent {

// Inventory's stores that other modules read through, one instance each per process: made
// before the modules, so that the scheduler and the agents' control plane are given them
// while inventory is given the scheduler's word on a node's work in turn.
struct InventoryStores {
  // `listening`: whether the catalog's announcements are arriving (the listener's word).
  InventoryStores(const Clock& clock, const Config& config, std::function<bool()> listening)
      : catalog(clock),
        nodes(clock, config.enrollment_token_ttl),
        host_keys(clock),
        prices(clock, config.currency),
        catalog_copy(catalog, prices, std::move(listening)) {}
  inventory::CatalogStore catalog;      // models and images
  inventory::NodeStore nodes;           // nodes, their GPUs and links, their state machine
  inventory::NodeHostKeys host_keys;    // the sshd host keys agents report
  inventory::NodeHealthLog health_log;  // telemetry and health events
  inventory::PriceStore prices;         // the price list
  // What bookings read of the catalog and the prices, from memory; inventory's module keeps
  // it current (its announcements, and the admin routes after their commits).
  inventory::CatalogCopy catalog_copy;
};

class InventoryModule final : public Module {
 public:
  // Subscribes the catalog cache to every replica's catalog announcements. `work` is the
  // scheduler's: the node view lists a node's rentals, and a node's move may be refused.
  InventoryModule(const ModuleContext& ctx, InventoryStores& stores, http::NodeWork& work);
  InventoryModule(const InventoryModule&) = delete;
  InventoryModule& operator=(const InventoryModule&) = delete;

  void add_routes(http::Router& router) override;
  void add_metrics(http::Metrics& metrics) override;

  // For `make run`'s demo fleet.
  inventory::DemoFleetStores demo_fleet_stores() {
    return {.sites = &site_store_,
            .nodes = &node_store_,
            .catalog = &catalog_store_,
            .prices = &price_store_};
  }

 private:
  inventory::CatalogStore& catalog_store_;
  inventory::SiteStore site_store_;
  inventory::NodeStore& node_store_;
  inventory::NodeHostKeys& host_keys_;
  inventory::NodeHealthLog& health_log_;
  inventory::PriceStore& price_store_;
  http::CatalogCache catalog_cache_;
  inventory::CatalogCopy& catalog_copy_;
  inventory::FleetReports fleet_reports_;
  http::CatalogRoutesState catalog_routes_;
  http::NodeAdminRoutesState node_admin_routes_;
  http::CatalogAdminRoutesState catalog_admin_routes_;
  bmc::NodePower node_power_;
  http::BmcRoutesState bmc_routes_;
};

}  // namespace gpurent
