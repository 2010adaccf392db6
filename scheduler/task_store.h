// Agent tasks: the work the control plane hands a node's agent (provision, install or revoke
// access, wipe), delivered at least once and finished once.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "scheduler/records.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gpurent::scheduler {

class TaskStore {
 public:
  explicit TaskStore(const Clock& clock) : clock_(clock) {}

  // A new task in `queued`. `payload` must be a JSON object (std::invalid_argument
  // otherwise). `deadline`: when the agent must have started it at the latest (the task
  // message's deadline); absent, the delivery gives it its default.
  AgentTask create(Tx& tx, const std::string& node_id, const std::optional<std::string>& rental_id,
                   TaskKind kind, const nlohmann::json& payload,
                   std::optional<Timestamp> deadline = std::nullopt);

  std::optional<AgentTask> get(Tx& tx, const std::string& id);

  // The rental's tasks, oldest first.
  std::vector<AgentTask> for_rental(Tx& tx, const std::string& rental_id);

  // What to send the node's agent, oldest first: its unfinished tasks, `queued` and
  // `delivered` alike, since a delivery the agent did not acknowledge before a reconnect is
  // sent again (the agent runs each id once).
  std::vector<AgentTask> queued_for_node(Tx& tx, const std::string& node_id, int limit);

  // The node's tasks not sent yet, oldest first, marked delivered: callers at once get
  // disjoint sets (FOR UPDATE SKIP LOCKED), so each is sent once unless a reconnect resends.
  std::vector<AgentTask> claim_queued(Tx& tx, const std::string& node_id, int limit);

  // Nodes with a task not sent yet: what the agent listener's poll looks for, should a
  // task's notification have been missed.
  std::vector<std::string> nodes_with_queued(Tx& tx, int limit);

  // Records one more delivery (queued or delivered → delivered). False for an unknown or
  // finished task.
  bool mark_delivered(Tx& tx, const std::string& id);

  // The agent's outcome: succeeded or failed with its message, only from queued or
  // delivered; false when the task is unknown or already finished (a repeated report).
  // `result`: what the agent reported with it, kept for whoever reads it (a doctor's figures).
  bool complete(Tx& tx, const std::string& id, bool ok, const std::string& message,
                const std::optional<nlohmann::json>& result = std::nullopt);
  // The result kept with the task; none when it has none (or there is no such task).
  std::optional<nlohmann::json> result(Tx& tx, const std::string& id);

 private:
  const Clock& clock_;
};

}  // namespace gpurent::scheduler
