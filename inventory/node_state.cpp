// Transitions and wire names of the node state machine.
#include "inventory/node_state.h"

#include <cassert>
#include <cstddef>
#include <initializer_list>

namespace gpurent::inventory {
namespace {

constexpr std::array<NodeState, 6> kStates{NodeState::kEnrolling,   NodeState::kAvailable,
                                           NodeState::kMaintenance, NodeState::kDraining,
                                           NodeState::kFailed,      NodeState::kRetired};
constexpr std::array<std::string_view, 6> kStateNames{"enrolling", "available", "maintenance",
                                                      "draining",  "failed",    "retired"};

constexpr std::array<NodeAction, 7> kActions{
    NodeAction::kEnrolled, NodeAction::kActivate, NodeAction::kMaintenance, NodeAction::kDrain,
    NodeAction::kDrained,  NodeAction::kFail,     NodeAction::kRetire};
constexpr std::array<std::string_view, 7> kActionNames{
    "enrolled", "activate", "maintenance", "drain", "drained", "fail", "retire"};

// The name arrays are indexed by the enumerator's value.
template <typename Enum, std::size_t N>
std::string_view name_of(Enum value, const std::array<std::string_view, N>& names) {
  const auto index = static_cast<std::size_t>(value);
  assert(index < N);
  return names[index];
}

template <typename Enum, std::size_t N>
std::optional<Enum> parse_name(std::string_view text,
                               const std::array<std::string_view, N>& names) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == text) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

// `to` when the node is in one of `allowed`, else a refusal.
std::optional<NodeState> only_from(NodeState from, std::initializer_list<NodeState> allowed,
                                   NodeState to) {
  for (NodeState state : allowed) {
    if (state == from) return to;
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(NodeState state) {
  return name_of(state, kStateNames);
}

std::optional<NodeState> parse_node_state(std::string_view text) {
  return parse_name<NodeState>(text, kStateNames);
}

std::string_view to_string(NodeAction action) {
  return name_of(action, kActionNames);
}

std::optional<NodeAction> parse_node_action(std::string_view text) {
  return parse_name<NodeAction>(text, kActionNames);
}

bool is_admin_action(NodeAction action) {
  return action == NodeAction::kMaintenance || action == NodeAction::kDrain ||
         action == NodeAction::kActivate || action == NodeAction::kRetire;
}

std::optional<NodeState> next_state(NodeState from, NodeAction action) {
  using S = NodeState;
  switch (action) {
    case NodeAction::kEnrolled:
      return only_from(from, {S::kEnrolling}, S::kAvailable);
    case NodeAction::kActivate:
      return only_from(from, {S::kMaintenance}, S::kAvailable);
    case NodeAction::kMaintenance:
      // From draining the admin cuts the drain short; from failed the admin takes the node
      // in hand for repair. Either way it leaves the allocatable pool until activated.
      return only_from(from, {S::kAvailable, S::kDraining, S::kFailed}, S::kMaintenance);
    case NodeAction::kDrain:
      return only_from(from, {S::kAvailable}, S::kDraining);
    case NodeAction::kDrained:
      return only_from(from, {S::kDraining}, S::kMaintenance);
    case NodeAction::kFail:
      // A failed node stays failed until an admin acts; a retired one is gone for good.
      return only_from(from, {S::kEnrolling, S::kAvailable, S::kMaintenance, S::kDraining},
                       S::kFailed);
    case NodeAction::kRetire:
      if (from == S::kRetired) return std::nullopt;
      return S::kRetired;
  }
  assert(false && "unknown NodeAction");
  return std::nullopt;
}

const std::array<NodeState, 6>& all_node_states() {
  return kStates;
}

const std::array<NodeAction, 7>& all_node_actions() {
  return kActions;
}

std::vector<NodeAction> allowed_admin_actions(NodeState state) {
  std::vector<NodeAction> out;
  for (NodeAction a : kActions) {
    if (is_admin_action(a) && next_state(state, a)) out.push_back(a);
  }
  return out;
}

}  // namespace gpurent::inventory
