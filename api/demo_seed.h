// `make run`'s demo: a platform admin whose password is kept beside the data folder, and
// the demo fleet. Demo only: a real deployment creates its admins with `gpurentd admin
// create` and its inventory through the admin API.
#pragma once

#include "core/config.h"
#include "core/db_pool.h"
#include "identity/identity_store.h"
#include "inventory/demo_fleet.h"

namespace gpurent {

// Creates what is missing and prints the admin's login.
void seed_demo(const Config& config, PgPool& pool, identity::IdentityStore& store,
               const inventory::DemoFleetStores& fleet);

}  // namespace gpurent
