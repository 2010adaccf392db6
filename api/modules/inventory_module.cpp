// Inventory's wiring.
#include "api/modules/inventory_module.h"

namespace gpurent {

InventoryModule::InventoryModule(const ModuleContext& ctx, InventoryStores& stores,
                                 http::NodeWork& work)
    : catalog_store_(stores.catalog),
      site_store_(ctx.clock),
      node_store_(stores.nodes),
      host_keys_(stores.host_keys),
      health_log_(stores.health_log),
      price_store_(stores.prices),
      catalog_cache_(
          [this, &pool = ctx.pool] { return http::build_catalog_documents(pool, catalog_store_); }),
      catalog_copy_(stores.catalog_copy),
      fleet_reports_(ctx.pool, ctx.clock, node_store_, &health_log_),
      catalog_routes_{.cache = &catalog_cache_},
      node_admin_routes_{.pool = &ctx.pool,
                         .sites = &site_store_,
                         .nodes = &node_store_,
                         .host_keys = &host_keys_,
                         .health_log = &health_log_,
                         .reports = &fleet_reports_,
                         .work = &work},
      catalog_admin_routes_{.pool = &ctx.pool,
                            .catalog = &catalog_store_,
                            .prices = &price_store_,
                            .cache = &catalog_cache_,
                            .copy = &catalog_copy_},
      node_power_(
          ctx.pool, ctx.clock,
          {.secret_key = ctx.config.bmc_secret_key,
           .allow_plain_http = ctx.config.bmc_allow_plain_http,
           .timeout = ctx.config.bmc_timeout},
          {.serves = [&work](Tx& tx,
                             const std::string& node) { return work.serves_rentals(tx, node); },
           .restarted = [&work](
                            Tx& tx, const std::string& node,
                            const std::string& action) { work.node_restarted(tx, node, action); }}),
      bmc_routes_{.power = &node_power_} {
  // Any change to the catalog or the prices, made by any replica or by hand, reaches every
  // replica's documents and bookings' copy through a trigger's NOTIFY; after a reconnection
  // both are dropped, since notifications sent meanwhile are lost.
  auto changed = [this] {
    catalog_cache_.invalidate();
    catalog_copy_.changed();
  };
  ctx.listener.subscribe("gpurent_catalog", [changed](const std::string&) { changed(); });
  ctx.listener.on_connected(changed);
}

void InventoryModule::add_routes(http::Router& router) {
  http::add_catalog_routes(router, catalog_routes_);
  http::add_node_admin_routes(router, node_admin_routes_);
  http::add_catalog_admin_routes(router, catalog_admin_routes_);
  http::add_bmc_routes(router, bmc_routes_);
}

// The catalog cache's hits and misses show whether the snapshot works.
void InventoryModule::add_metrics(http::Metrics& metrics) {
  metrics.add_collector([this](std::string& out) {
    using http::append_metric;
    append_metric(out, "gpurent_catalog_cache_hits_total", "counter",
                  "Catalog reads answered from the snapshot in memory.", catalog_cache_.hits());
    append_metric(out, "gpurent_catalog_cache_misses_total", "counter",
                  "Catalog reads that built the snapshot from the database.",
                  catalog_cache_.misses());
    append_metric(out, "gpurent_catalog_cache_invalidations_total", "counter",
                  "Announced catalog changes that dropped the snapshot.",
                  catalog_cache_.invalidations());
  });
}

}  // namespace gpurent
