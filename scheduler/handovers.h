// A running rental handed over again (issue "Operations that respect the tenant"): to a spare
// node of the same shape when its own failed or a maintenance window takes it (a swap), or on
// its own node after the tenant's reboot or an admin's power action. The rental keeps its id,
// its login and certificates' principal and its billing; it is `provisioning` until the agent
// has checked the access (and, for a swap, provisioned and burnt in the spare) again. Each
// handover is a row (migration 0028); the minutes a fault, a window or a power action cost
// the tenant are credited once when it ends, keyed by the row's id in the ledger.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::scheduler {

enum class HandoverCause { kFault, kMaintenance, kReboot, kPower };
std::string_view to_string(HandoverCause cause);
std::optional<HandoverCause> parse_handover_cause(std::string_view text);
// Whether the tenant is credited the minutes it cost: the platform's doing, not the tenant's.
inline bool credits_lost_time(HandoverCause cause) {
  return cause != HandoverCause::kReboot;
}
// Whether the rental moves to another node (and is provisioned there from scratch) rather
// than coming back on its own after a restart.
inline bool is_swap(HandoverCause cause) {
  return cause == HandoverCause::kFault || cause == HandoverCause::kMaintenance;
}

struct Handover {
  std::string id;  // "hnd_…"
  std::string rental_id;
  HandoverCause cause = HandoverCause::kFault;
  std::string reason;
  std::string from_node_id, to_node_id;
  int attempt_base = 0;
  Timestamp started_at;
  std::optional<Timestamp> ended_at;
  std::optional<std::string> outcome;  // active | interrupted | ended
  std::optional<long long> credited_minor;
};

class HandoverStore {
 public:
  Handover open(Tx& tx, const std::string& rental_id, HandoverCause cause,
                const std::string& reason, const std::string& from_node, const std::string& to_node,
                int attempt_base, Timestamp now);
  // The rental's handover in progress, if any.
  std::optional<Handover> current(Tx& tx, const std::string& rental_id);
  // Ends it; a closed one stays as it was.
  void close(Tx& tx, const std::string& id, Timestamp now, const std::string& outcome);
  // What billing credited for it (rental_billing.h).
  void set_credited(Tx& tx, const std::string& id, long long credited_minor);
  // Every handover of the rental, oldest first (the rental's page).
  std::vector<Handover> of_rental(Tx& tx, const std::string& rental_id);
};

// {id, cause, reason, from_node_id, to_node_id, started_at, ended_at, outcome,
//  credited_minor}
nlohmann::json handover_json(const Handover& h);

}  // namespace gpurent::scheduler
