// The scheduler's wiring: rentals, candidates, booking, and the rental routes.
#pragma once

#include "api/handlers/rental_handlers.h"
#include "api/modules/module_context.h"
#include "identity/org_admin_store.h"
#include "identity/ssh_key_store.h"
#include "inventory/catalog_store.h"
#include "inventory/price_store.h"
#include "scheduler/booking.h"
#include "scheduler/candidate_store.h"
#include "scheduler/rental_store.h"

namespace gpurent {

class SchedulerModule {
 public:
  explicit SchedulerModule(const ModuleContext& ctx);
  SchedulerModule(const SchedulerModule&) = delete;
  SchedulerModule& operator=(const SchedulerModule&) = delete;

  void add_routes(http::Router& router);

 private:
  // The stores of other modules a booking reads inside its own transaction.
  inventory::CatalogStore catalog_;
  inventory::PriceStore prices_;
  identity::SshKeyStore ssh_keys_;
  identity::OrgAdminStore orgs_;
  scheduler::RentalStore rentals_;
  scheduler::CandidateStore candidates_;
  scheduler::Booking booking_;
  http::RentalRoutesState rental_routes_;
};

}  // namespace gpurent
