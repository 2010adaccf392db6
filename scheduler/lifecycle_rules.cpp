// The lifecycle worker's pure decisions.
#include "scheduler/lifecycle_rules.h"

#include <algorithm>

namespace gpurent::scheduler {

ProvisioningStep provisioning_step(const std::vector<TaskState>& current, int attempt,
                                   int max_attempts, Timestamp now, Timestamp deadline) {
  bool all_ok = !current.empty() && std::all_of(current.begin(), current.end(), [](TaskState s) {
    return s == TaskState::kSucceeded;
  });
  if (all_ok) return ProvisioningStep::kActive;
  bool failed = current.empty() || std::any_of(current.begin(), current.end(),
                                               [](TaskState s) { return s == TaskState::kFailed; });
  if (!failed && now < deadline) return ProvisioningStep::kWait;
  return attempt + 1 < max_attempts ? ProvisioningStep::kRetry : ProvisioningStep::kFail;
}

ReleasingStep releasing_step(std::optional<TaskState> latest_wipe, int wipes, int max_attempts,
                             Timestamp now, Timestamp deadline) {
  if (latest_wipe == TaskState::kSucceeded) return ReleasingStep::kEnded;
  bool failed = !latest_wipe || *latest_wipe == TaskState::kFailed;
  if (!failed && now < deadline) return ReleasingStep::kWait;
  return wipes < max_attempts ? ReleasingStep::kRetryWipe : ReleasingStep::kEndedUnwiped;
}

}  // namespace gpurent::scheduler
