// The fleet's nodes and their credentials: enrols, through the real agent's enrolment
// (agent/enrollment.h: a fresh key and CSR each, the node's single-use token), every node of
// the enrolment file that has no certificate in the state folder yet, several at a time;
// then loads the first N nodes' certificates and keys. A second run finds them there and
// enrols nothing.
#pragma once

#include "agent/fleetsim/fleet_options.h"
#include "agent/fleetsim/fleet_runner.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace gpurent::agent::fleetsim {

// The fleet cannot be put together: one line for the operator.
class FleetSetupError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PreparedFleet {
  std::vector<FleetMember> members;
  std::string ca_pem;
  int enrolled = 0;         // enrolled by this run
  int enroll_failures = 0;  // left out: their enrolment failed (the first reason on stderr)
};

// The nodes: the enrolment file's, in its order, or without one every node folder in the
// state folder (sorted), the first `options.agents` of them (all when 0). Progress and
// failed enrolments go to stderr. Throws FleetSetupError.
PreparedFleet prepare_fleet(const FleetOptions& options);

}  // namespace gpurent::agent::fleetsim
