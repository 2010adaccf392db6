// The lifecycle worker's decisions for a rental waiting on its agent tasks, as pure functions
// of the tasks' states, the attempts made and the clock, so they are table-tested without a
// database (scheduler/lifecycle.h applies them).
#pragma once

#include "core/clock.h"
#include "scheduler/records.h"

#include <optional>
#include <string>
#include <vector>

namespace gpurent::scheduler {

enum class ProvisioningStep {
  kWait,        // a task still running and time left: look again later
  kMakeAccess,  // the attempt's provision succeeded and no install_access was made yet
  kActive,      // the attempt's provision and then its install_access succeeded
  kRetry,       // the attempt failed or timed out and attempts remain
  kFail,        // the attempt failed or timed out and it was the last
};

enum class ReleasingStep {
  kWait,          // the wipe is still running and time left
  kEnded,         // the latest wipe succeeded
  kRetryWipe,     // the wipe failed or timed out and attempts remain
  kEndedUnwiped,  // the last wipe failed or timed out: ended, the node goes to maintenance
};

// An attempt is its provision task and, once that succeeded, its install_access task (made
// only then, so the access it installs and the probe certificate it carries are fresh).
// `provision`, `access`: the states of the current attempt's tasks of each kind, absent when
// none was made (no provision counts as failed: nothing was asked of the agent); `attempt`:
// 0-based index of the current attempt out of `max_attempts`; `deadline`: when the current
// attempt's newest task times out. A failure of either task, or a timeout, ends the attempt.
ProvisioningStep provisioning_step(std::optional<TaskState> provision,
                                   std::optional<TaskState> access, int attempt, int max_attempts,
                                   Timestamp now, Timestamp deadline);

// `latest_wipe`: the state of the newest wipe task (absent counts as failed); `wipes`: how many
// wipe tasks were created so far, out of `max_attempts`.
ReleasingStep releasing_step(std::optional<TaskState> latest_wipe, int wipes, int max_attempts,
                             Timestamp now, Timestamp deadline);

// Waiting rentals (given in the order they arrived) in the order the waitlist serves them:
// the order each org joined, taking one of each org in turn, so an org that queued many
// requests cannot keep another org's single one waiting behind all of them, while each org's
// own requests keep their order.
std::vector<RentalRecord> round_robin_by_org(std::vector<RentalRecord> waiting);

// The 1-based place of `rental` among the requests for its GPU model in `served_order` (as
// round_robin_by_org gives it); 0 when it is not there.
int waitlist_position(const std::vector<RentalRecord>& served_order, const RentalRecord& rental);

// The login a rental's engineers get on its node: one per rental, so rentals sharing a node
// never share a login or each other's keys; derived from the rental id, so every replica and
// every retry of the agent's task agree; a name useradd takes ("gpu-" and ten hex digits).
std::string rental_login(const std::string& rental_id);

// The principal a rental's SSH certificates carry and its node's sshd accepts for its login:
// the rental id, unique to the rental.
std::string rental_principal(const std::string& rental_id);

}  // namespace gpurent::scheduler
