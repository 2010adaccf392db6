// The scheduler's wiring.
#include "api/modules/scheduler_module.h"

namespace gpurent {

SchedulerModule::SchedulerModule(const ModuleContext& ctx)
    : catalog_(ctx.clock),
      prices_(ctx.clock, ctx.config.currency),
      ssh_keys_(ctx.clock),
      orgs_(ctx.clock),
      rentals_(ctx.clock),
      booking_(ctx.clock, catalog_, prices_, rentals_, candidates_,
               {.cleaning_window = ctx.config.rental_cleaning_window}),
      rental_routes_{.pool = &ctx.pool,
                     .clock = &ctx.clock,
                     .booking = &booking_,
                     .rentals = &rentals_,
                     .ssh_keys = &ssh_keys_,
                     .orgs = &orgs_} {}

void SchedulerModule::add_routes(http::Router& router) {
  http::add_rental_routes(router, rental_routes_);
}

}  // namespace gpurent
