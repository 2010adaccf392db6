// POST /v1/advisor (API.md "Catalog"): how much GPU memory a workload needs and which
// rentals on offer hold it, cheapest first. Reads the catalog and the offers; writes nothing.
#pragma once

#include "api/router.h"
#include "core/db_pool.h"
#include "inventory/catalog_store.h"
#include "scheduler/catalog_views.h"

namespace gpurent::http {

struct AdvisorRoutesState {
  PgPool* pool = nullptr;
  inventory::CatalogStore* catalog = nullptr;
  // The offers the advice prices and dates, as GET /v1/offers lists them.
  scheduler::CatalogViews* views = nullptr;
};

void add_advisor_routes(Router& router, AdvisorRoutesState& state);

}  // namespace gpurent::http
