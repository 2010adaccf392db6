// Rentals (API.md "Rentals"): book, quote, list, show, events, extend, wait, terminate;
// and the catalog's capacity views, offers and availability (API.md "Catalog").
#pragma once

#include "api/auth.h"
#include "api/router.h"
#include "core/db_pool.h"
#include "identity/org_admin_store.h"
#include "identity/ssh_key_store.h"
#include "scheduler/booking.h"
#include "scheduler/catalog_views.h"
#include "scheduler/lifecycle.h"
#include "scheduler/rental_store.h"
#include "scheduler/ssh_access.h"

namespace gpurent::http {

struct RentalRoutesState {
  PgPool* pool = nullptr;
  const Clock* clock = nullptr;
  scheduler::Booking* booking = nullptr;
  scheduler::Lifecycle* lifecycle = nullptr;
  scheduler::RentalStore* rentals = nullptr;
  identity::SshKeyStore* ssh_keys = nullptr;
  identity::OrgAdminStore* orgs = nullptr;
  scheduler::CatalogViews* views = nullptr;
  // The copy of capacity the views count from; told at once of this replica's own bookings,
  // extensions and terminations (other changes arrive as announcements).
  scheduler::CapacityIndex* capacity = nullptr;
  // Certificates and the rentals' SSH details; unset: `ssh` is null and no certificates.
  scheduler::SshAccess* ssh = nullptr;
};

void add_rental_routes(Router& router, RentalRoutesState& state);

// The node's latest rentals (at most 50, newest first) as GET /v1/admin/nodes/{id} shows
// them.
nlohmann::json node_rentals_json(Tx& tx, scheduler::RentalStore& rentals,
                                 const std::string& node_id);

}  // namespace gpurent::http
