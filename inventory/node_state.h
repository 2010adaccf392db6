// The node state machine (DESIGN.md "State machines"): which admin actions and system
// events move a node between states. Pure; the store applies it inside a transaction.
#pragma once

#include "core/state_set.h"

#include <array>
#include <optional>
#include <string_view>
#include <vector>

namespace gpurent::inventory {

enum class NodeState { kEnrolling, kAvailable, kMaintenance, kDraining, kFailed, kRetired };

// Admin actions (maintenance, drain, activate, retire) and system events: enrolled (the
// agent finished enrolment), drained (the last rental on a draining node ended), fail
// (critical health or heartbeat lost).
enum class NodeAction { kEnrolled, kActivate, kMaintenance, kDrain, kDrained, kFail, kRetire };

// Lower-case wire names ("enrolling", "drain"); parsing is exact and case-sensitive.
std::string_view to_string(NodeState state);
std::optional<NodeState> parse_node_state(std::string_view text);
std::string_view to_string(NodeAction action);
std::optional<NodeAction> parse_node_action(std::string_view text);

// Whether an admin may request the action; the others only come from the system.
bool is_admin_action(NodeAction action);

// The state after `action`, or nullopt when the machine refuses it from `from`.
std::optional<NodeState> next_state(NodeState from, NodeAction action);

const std::array<NodeState, 6>& all_node_states();
const std::array<NodeAction, 7>& all_node_actions();

// The admin actions the machine takes from `state` (the API's `allowed_actions`), in the
// enum's order.
std::vector<NodeAction> allowed_admin_actions(NodeState state);

using NodeStates = StateSet<NodeState, 6>;

// Only available nodes receive new allocations (health is checked separately).
inline constexpr NodeStates kNodesTakingAllocations{NodeState::kAvailable};
inline bool accepts_allocations(NodeState state) {
  return kNodesTakingAllocations.contains(state);
}
// The same as SQL text, as the partial index nodes_bookable_idx says it
// (migrations/0007_rentals.sql; see GPURENT_SQL_RENTAL_WENT_WRONG for why text).
#define GPURENT_SQL_NODE_TAKING_ALLOCATIONS(column) column " = 'available'"
// Nodes in service: their agents' silence fails them.
inline constexpr NodeStates kNodesInService{NodeState::kAvailable, NodeState::kDraining};
// Nodes whose scheduled rentals never start there: they move to another node before their
// start, or are cancelled free.
inline constexpr NodeStates kNodesOutOfService{NodeState::kMaintenance, NodeState::kDraining,
                                               NodeState::kFailed, NodeState::kRetired};

}  // namespace gpurent::inventory
