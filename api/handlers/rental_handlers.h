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
#include "scheduler/rental_store.h"

namespace gpurent::http {

struct RentalRoutesState {
  PgPool* pool = nullptr;
  const Clock* clock = nullptr;
  scheduler::Booking* booking = nullptr;
  scheduler::RentalStore* rentals = nullptr;
  identity::SshKeyStore* ssh_keys = nullptr;
  identity::OrgAdminStore* orgs = nullptr;
  scheduler::CatalogViews* views = nullptr;
};

void add_rental_routes(Router& router, RentalRoutesState& state);

}  // namespace gpurent::http
