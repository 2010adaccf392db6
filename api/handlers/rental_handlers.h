// Rentals (API.md "Rentals"): book, quote, list, show, events, extend, wait, terminate;
// and the catalog's capacity views, offers and availability (API.md "Catalog").
#pragma once

#include "api/auth.h"
#include "api/router.h"
#include "core/db_pool.h"
#include "scheduler/catalog_views.h"
#include "scheduler/doctor.h"
#include "scheduler/handover_report.h"
#include "scheduler/rental_store.h"
#include "scheduler/rental_telemetry.h"
#include "scheduler/rentals.h"

namespace gpurent::http {

struct RentalRoutesState {
  PgPool* pool = nullptr;
  const Clock* clock = nullptr;
  scheduler::Rentals* rentals = nullptr;    // the customer's use cases
  scheduler::RentalStore* store = nullptr;  // every org's rentals, for platform admins
  scheduler::CatalogViews* views = nullptr;
  scheduler::HandoverReports* reports = nullptr;    // signed handover reports
  scheduler::Doctor* doctor = nullptr;              // doctor on a live rental
  scheduler::RentalTelemetry* telemetry = nullptr;  // the tenant's own telemetry
};

void add_rental_routes(Router& router, RentalRoutesState& state);

// The node's latest rentals (at most 50, newest first) as GET /v1/admin/nodes/{id} shows
// them.
nlohmann::json node_rentals_json(Tx& tx, scheduler::RentalStore& rentals,
                                 const std::string& node_id);

}  // namespace gpurent::http
