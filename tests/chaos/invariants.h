// What must hold after every fault, checked on the database itself and against what the
// clients were told. Each violation names the invariant and the key, rental, GPU or ledger
// transaction that breaks it, so a failing run says exactly what went wrong.
#pragma once

#include "tests/chaos/booking_client.h"

#include <string>
#include <vector>

namespace gpurent::testing::chaos {

struct Violation {
  std::string invariant;
  std::string detail;
};

// The database's side: no two live rentals hold one GPU at overlapping times; every ledger
// transaction sums to zero with two entries or more; each org's balances are the replay of
// its entries; each booking's hold is its stored price times its days, posted once, and an
// org's held balance is what its holds still hold; no rental-day is charged twice, and
// every capture posting has its charge.
std::vector<Violation> check_database(const std::string& url);

// The clients' side against the database, for the keys of `records` (the rental's name is
// its key): every 201's rental exists under its key, with the id the client was given; no
// key made more than one rental, or answered two ids; no key refused with a definite answer
// has a rental; no 5xx but a 503 with Retry-After was ever answered.
std::vector<Violation> check_clients(const std::string& url, const std::vector<KeyRecord>& records);

}  // namespace gpurent::testing::chaos
