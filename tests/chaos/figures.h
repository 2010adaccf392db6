// One scenario of the chaos suite and its figures: what the clients booked and saw, each
// fault and how long until a booking sent after it succeeded, and the invariants broken.
#pragma once

#include "tests/chaos/booking_client.h"
#include "tests/chaos/invariants.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gpurent::testing::chaos {

struct Fault {
  std::string name;
  SteadyTime at;
  int replica = -1;  // the replica it struck, when one
};

struct Phase {
  std::string name;
  std::vector<KeyRecord> records;
  std::vector<Fault> faults;
  std::vector<Violation> violations;
  nlohmann::json extra = nlohmann::json::object();  // figures of the scenario's own
  double seconds = 0;
  int gave_up_in_storm = 0;  // keys whose five attempts all failed, before the late retries
};

// From the fault until the first 201 of an attempt sent after it (to its replica, when
// `replica_only` and the fault struck one); nullopt when none succeeded.
std::optional<double> recovery_seconds(const Phase& phase, const Fault& fault, bool replica_only);

// The phase's figures as JSON: keys, acknowledged, refused by code, gave up, attempts,
// retries, every status seen, 503s with and without Retry-After, other 5xx, no-answers,
// recovery per fault, the invariants broken with counts.
nlohmann::json phase_figures(const Phase& phase);

// The same for people: a few lines, then up to `per_invariant` violations of each kind.
std::string phase_report(const Phase& phase, int per_invariant = 10);

}  // namespace gpurent::testing::chaos
