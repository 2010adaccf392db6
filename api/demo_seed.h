// `make run`'s demo: a platform admin and a customer (its org with a demo balance), whose
// passwords are kept beside the data folder, and the demo fleet. Demo only: a real deployment
// creates its admins with `gpurentd admin create` and its inventory through the admin API.
#pragma once

#include "billing/top_ups.h"
#include "core/config.h"
#include "core/db_pool.h"
#include "identity/identity_store.h"
#include "inventory/demo_fleet.h"

namespace gpurent {

// The demo customer: a user in the org "Demo customer", which gets kDemoBalanceMinor of the
// platform's currency as a top-up when it is created.
inline constexpr const char* kDemoCustomerEmail = "demo@gpurent.local";
inline constexpr const char* kDemoCustomerOrg = "Demo customer";
inline constexpr long long kDemoBalanceMinor = 100'000'000;  // 1,000,000.00

// Creates what is missing and prints the admin's and the customer's logins.
void seed_demo(const Config& config, PgPool& pool, identity::IdentityStore& store,
               const inventory::DemoFleetStores& fleet, billing::TopUps& top_ups);

}  // namespace gpurent
