// What the scheduler's stores hand out: rentals, their state changes and agent tasks as plain
// typed values (Timestamp, Period, enums, Money), read from PostgreSQL, formatted by api/.
#pragma once

#include "core/clock.h"
#include "core/money.h"
#include "scheduler/placement.h"
#include "scheduler/rental_state.h"

#include <nlohmann/json.hpp>

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::scheduler {

// "nvlink" | "any", as the API's `interconnect` and the rentals.link_need column say it.
inline std::string_view to_string(LinkNeed need) {
  return need == LinkNeed::kNvlink ? "nvlink" : "any";
}
inline std::optional<LinkNeed> parse_link_need(std::string_view text) {
  if (text == "nvlink") return LinkNeed::kNvlink;
  if (text == "any") return LinkNeed::kAny;
  return std::nullopt;
}

struct RentalRecord {
  std::string id;  // "rnt_…"
  std::string org_id;
  std::string name;
  RentalState state = RentalState::kPending;
  std::string gpu_model;
  int gpu_count = 0;
  LinkNeed link_need = LinkNeed::kNvlink;
  std::optional<std::string> node_id;  // absent until placed
  std::vector<int> gpu_indices;        // ascending as placed; empty until placed
  // The rental's own period, half-open, without the cleaning window its allocations add.
  Period period;
  int days = 0;
  std::string image_id;
  std::vector<std::string> ssh_key_ids;
  // The price snapshot taken at booking, and the price-list row it came from. "XXX" (ISO
  // 4217's "no currency") only in a default-constructed record.
  Money price_per_day{0, "XXX"};
  long long price_id = 0;
  bool wait_for_capacity = false;
  std::optional<Timestamp> pending_expires_at;
  Timestamp created_at;
  std::string created_by;  // user id
  std::optional<std::string> created_by_token;
  Timestamp state_changed_at;
  int attempts = 0;  // provisioning retries
  std::optional<Timestamp> next_check_at;

  // The whole period's price: per day times days.
  Money total_price() const { return price_per_day.times(days); }
};

// One state change, oldest first in a rental's history; the first has no from_state.
struct RentalEvent {
  long long id = 0;
  Timestamp at;
  std::optional<RentalState> from_state;
  RentalState to_state = RentalState::kPending;
  std::string reason;
  std::optional<std::string> actor_user_id;  // absent for the system's own steps
};

// burn_in: the node's GPUs and links measured (agent_proto/burn_in/figures.h), before a
// handover and after a release.
// doctor: the same measured, on a live rental's node, without the load tests unless the tenant
// allows them (scheduler/doctor.h).
enum class TaskKind {
  kProvision,
  kInstallAccess,
  kRevokeAccess,
  kWipe,
  kBurnIn,
  kDoctor,
  kNotice,
  kReboot
};
enum class TaskState { kQueued, kDelivered, kSucceeded, kFailed };

inline constexpr std::array<std::string_view, 8> kTaskKindNames{
    "provision", "install_access", "revoke_access", "wipe",
    "burn_in",   "doctor",         "notice",        "reboot"};
inline constexpr std::array<std::string_view, 4> kTaskStateNames{"queued", "delivered", "succeeded",
                                                                 "failed"};

inline std::string_view to_string(TaskKind kind) {
  return kTaskKindNames[static_cast<std::size_t>(kind)];
}
inline std::string_view to_string(TaskState state) {
  return kTaskStateNames[static_cast<std::size_t>(state)];
}
inline std::optional<TaskKind> parse_task_kind(std::string_view text) {
  for (std::size_t i = 0; i < kTaskKindNames.size(); ++i) {
    if (kTaskKindNames[i] == text) return static_cast<TaskKind>(i);
  }
  return std::nullopt;
}
inline std::optional<TaskState> parse_task_state(std::string_view text) {
  for (std::size_t i = 0; i < kTaskStateNames.size(); ++i) {
    if (kTaskStateNames[i] == text) return static_cast<TaskState>(i);
  }
  return std::nullopt;
}

// Work for a node's agent (agent_tasks).
struct AgentTask {
  std::string id;  // "tsk_…"
  std::string node_id;
  std::optional<std::string> rental_id;  // absent for node housekeeping
  TaskKind kind = TaskKind::kProvision;
  nlohmann::json payload = nlohmann::json::object();
  TaskState state = TaskState::kQueued;
  int attempts = 0;  // deliveries so far
  Timestamp created_at;
  Timestamp updated_at;
  std::optional<std::string> result_message;
  // When the agent must have started it at the latest; absent: the delivery's default.
  std::optional<Timestamp> deadline;
};

}  // namespace gpurent::scheduler
