// The lifecycle worker's pure decisions.
#include "scheduler/lifecycle_rules.h"

#include "core/crypto.h"

#include <algorithm>
#include <map>

namespace gpurent::scheduler {

ProvisioningStep provisioning_step(std::optional<TaskState> provision,
                                   std::optional<TaskState> access, int attempt, int max_attempts,
                                   Timestamp now, Timestamp deadline) {
  auto ended = [&] {
    return attempt + 1 < max_attempts ? ProvisioningStep::kRetry : ProvisioningStep::kFail;
  };
  if (!provision || provision == TaskState::kFailed || access == TaskState::kFailed) {
    return ended();
  }
  if (provision == TaskState::kSucceeded) {
    // Success counts even past the deadline: the work is done.
    if (!access) return ProvisioningStep::kMakeAccess;
    if (access == TaskState::kSucceeded) return ProvisioningStep::kActive;
  }
  return now < deadline ? ProvisioningStep::kWait : ended();
}

ReleasingStep releasing_step(std::optional<TaskState> latest_wipe, int wipes, int max_attempts,
                             Timestamp now, Timestamp deadline) {
  if (latest_wipe == TaskState::kSucceeded) return ReleasingStep::kEnded;
  bool failed = !latest_wipe || *latest_wipe == TaskState::kFailed;
  if (!failed && now < deadline) return ReleasingStep::kWait;
  return wipes < max_attempts ? ReleasingStep::kRetryWipe : ReleasingStep::kEndedUnwiped;
}

std::vector<RentalRecord> round_robin_by_org(std::vector<RentalRecord> waiting) {
  std::vector<std::string> org_order;
  std::map<std::string, std::vector<RentalRecord>> by_org;
  for (auto& r : waiting) {
    if (!by_org.contains(r.org_id)) org_order.push_back(r.org_id);
    by_org[r.org_id].push_back(std::move(r));
  }
  std::vector<RentalRecord> out;
  for (std::size_t round = 0; out.size() < waiting.size(); ++round) {
    for (const auto& org : org_order) {
      auto& list = by_org[org];
      if (round < list.size()) out.push_back(std::move(list[round]));
    }
  }
  return out;
}

int waitlist_position(const std::vector<RentalRecord>& served_order, const RentalRecord& rental) {
  int ahead = 0;
  for (const auto& r : served_order) {
    if (r.id == rental.id) return ahead + 1;
    if (r.gpu_model == rental.gpu_model) ++ahead;
  }
  return 0;
}

std::string rental_login(const std::string& rental_id) {
  return "gpu-" + crypto::sha256_hex(rental_id).substr(0, 10);
}

std::string rental_principal(const std::string& rental_id) {
  return rental_id;
}

}  // namespace gpurent::scheduler
