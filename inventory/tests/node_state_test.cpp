// Tests the node state machine: every (state, action) cell and the wire names.
#include "inventory/node_state.h"

#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpurent::inventory {

// Readable failure messages for gtest.
void PrintTo(NodeState state, std::ostream* os) {
  *os << to_string(state);
}
void PrintTo(NodeAction action, std::ostream* os) {
  *os << to_string(action);
}

namespace node_state_test {

using S = NodeState;
using A = NodeAction;

constexpr std::optional<NodeState> kRefused = std::nullopt;

struct Cell {
  NodeState from;
  NodeAction action;
  std::optional<NodeState> expected;
};

// The whole machine, row by row: one line per state, one cell per action.
const Cell kMachine[] = {
    {S::kEnrolling, A::kEnrolled, S::kAvailable},
    {S::kEnrolling, A::kActivate, kRefused},
    {S::kEnrolling, A::kMaintenance, kRefused},
    {S::kEnrolling, A::kDrain, kRefused},
    {S::kEnrolling, A::kDrained, kRefused},
    {S::kEnrolling, A::kFail, S::kFailed},
    {S::kEnrolling, A::kRetire, S::kRetired},

    {S::kAvailable, A::kEnrolled, kRefused},
    {S::kAvailable, A::kActivate, kRefused},
    {S::kAvailable, A::kMaintenance, S::kMaintenance},
    {S::kAvailable, A::kDrain, S::kDraining},
    {S::kAvailable, A::kDrained, kRefused},
    {S::kAvailable, A::kFail, S::kFailed},
    {S::kAvailable, A::kRetire, S::kRetired},

    {S::kMaintenance, A::kEnrolled, kRefused},
    {S::kMaintenance, A::kActivate, S::kAvailable},
    {S::kMaintenance, A::kMaintenance, kRefused},
    {S::kMaintenance, A::kDrain, kRefused},
    {S::kMaintenance, A::kDrained, kRefused},
    {S::kMaintenance, A::kFail, S::kFailed},
    {S::kMaintenance, A::kRetire, S::kRetired},

    {S::kDraining, A::kEnrolled, kRefused},
    {S::kDraining, A::kActivate, kRefused},
    {S::kDraining, A::kMaintenance, S::kMaintenance},
    {S::kDraining, A::kDrain, kRefused},
    {S::kDraining, A::kDrained, S::kMaintenance},
    {S::kDraining, A::kFail, S::kFailed},
    {S::kDraining, A::kRetire, S::kRetired},

    {S::kFailed, A::kEnrolled, kRefused},
    {S::kFailed, A::kActivate, kRefused},
    {S::kFailed, A::kMaintenance, S::kMaintenance},
    {S::kFailed, A::kDrain, kRefused},
    {S::kFailed, A::kDrained, kRefused},
    {S::kFailed, A::kFail, kRefused},
    {S::kFailed, A::kRetire, S::kRetired},

    {S::kRetired, A::kEnrolled, kRefused},
    {S::kRetired, A::kActivate, kRefused},
    {S::kRetired, A::kMaintenance, kRefused},
    {S::kRetired, A::kDrain, kRefused},
    {S::kRetired, A::kDrained, kRefused},
    {S::kRetired, A::kFail, kRefused},
    {S::kRetired, A::kRetire, kRefused},
};

TEST(NodeStateMachine, EveryStateAndActionPair) {
  for (const Cell& cell : kMachine) {
    SCOPED_TRACE(std::string(to_string(cell.from)) + " + " + std::string(to_string(cell.action)));
    EXPECT_EQ(next_state(cell.from, cell.action), cell.expected);
  }
}

TEST(NodeStateMachine, TableCoversEveryPairOnce) {
  std::set<std::pair<NodeState, NodeAction>> seen;
  for (const Cell& cell : kMachine) {
    EXPECT_TRUE(seen.emplace(cell.from, cell.action).second)
        << "duplicate " << to_string(cell.from) << " + " << to_string(cell.action);
  }
  EXPECT_EQ(seen.size(), all_node_states().size() * all_node_actions().size());
  EXPECT_EQ(seen.size(), 42u);
}

TEST(NodeStateMachine, OnlyAvailableAcceptsAllocations) {
  for (NodeState state : all_node_states()) {
    SCOPED_TRACE(to_string(state));
    EXPECT_EQ(accepts_allocations(state), state == S::kAvailable);
  }
}

TEST(NodeStateMachine, AllowedAdminActionsAreTheAdminCellsThatMove) {
  const std::pair<NodeState, std::vector<NodeAction>> cases[] = {
      {S::kEnrolling, {A::kRetire}},
      {S::kAvailable, {A::kMaintenance, A::kDrain, A::kRetire}},
      {S::kMaintenance, {A::kActivate, A::kRetire}},
      {S::kDraining, {A::kMaintenance, A::kRetire}},
      {S::kFailed, {A::kMaintenance, A::kRetire}},
      {S::kRetired, {}},
  };
  for (const auto& [state, actions] : cases) {
    SCOPED_TRACE(to_string(state));
    EXPECT_EQ(allowed_admin_actions(state), actions);
  }
}

TEST(NodeStateMachine, NamedSetsReachSqlAsTextArrays) {
  EXPECT_EQ(kNodesTakingAllocations.sql(), R"({"available"})");
  EXPECT_EQ(kNodesInService.sql(), R"({"available","draining"})");
  EXPECT_EQ(kNodesOutOfService.sql(), R"({"maintenance","draining","failed","retired"})");
  // As nodes_bookable_idx says it (the only member, quoted).
  EXPECT_EQ(std::string(GPURENT_SQL_NODE_TAKING_ALLOCATIONS("n.state")), "n.state = 'available'");
  EXPECT_EQ(kNodesTakingAllocations.members(), std::vector<NodeState>{S::kAvailable});
  for (NodeState state : all_node_states()) {
    SCOPED_TRACE(to_string(state));
    // A node that takes allocations is in service, and a node in service that takes none is
    // out of service for the rentals scheduled on it.
    EXPECT_TRUE(!kNodesTakingAllocations.contains(state) || kNodesInService.contains(state));
    EXPECT_NE(kNodesTakingAllocations.contains(state),
              kNodesOutOfService.contains(state) || state == S::kEnrolling);
  }
}

TEST(NodeStateMachine, AdminActions) {
  const std::pair<NodeAction, bool> cases[] = {
      {A::kEnrolled, false}, {A::kActivate, true}, {A::kMaintenance, true}, {A::kDrain, true},
      {A::kDrained, false},  {A::kFail, false},    {A::kRetire, true},
  };
  for (const auto& [action, admin] : cases) {
    SCOPED_TRACE(to_string(action));
    EXPECT_EQ(is_admin_action(action), admin);
  }
}

TEST(NodeStateNames, RoundTrip) {
  const std::pair<NodeState, std::string_view> states[] = {
      {S::kEnrolling, "enrolling"}, {S::kAvailable, "available"}, {S::kMaintenance, "maintenance"},
      {S::kDraining, "draining"},   {S::kFailed, "failed"},       {S::kRetired, "retired"},
  };
  for (const auto& [state, name] : states) {
    EXPECT_EQ(to_string(state), name);
    EXPECT_EQ(parse_node_state(name), state);
  }
  for (NodeState state : all_node_states()) {
    EXPECT_EQ(parse_node_state(to_string(state)), state);
  }
}

TEST(NodeActionNames, RoundTrip) {
  const std::pair<NodeAction, std::string_view> actions[] = {
      {A::kEnrolled, "enrolled"}, {A::kActivate, "activate"}, {A::kMaintenance, "maintenance"},
      {A::kDrain, "drain"},       {A::kDrained, "drained"},   {A::kFail, "fail"},
      {A::kRetire, "retire"},
  };
  for (const auto& [action, name] : actions) {
    EXPECT_EQ(to_string(action), name);
    EXPECT_EQ(parse_node_action(name), action);
  }
  for (NodeAction action : all_node_actions()) {
    EXPECT_EQ(parse_node_action(to_string(action)), action);
  }
}

TEST(NodeStateNames, ParseRejectsUnknownAndCaseVariants) {
  for (std::string_view bad : {"", "Available", "AVAILABLE", "available ", " available",
                               "kAvailable", "active", "drain", "fail", "Retired", "enrolled"}) {
    EXPECT_FALSE(parse_node_state(bad).has_value()) << '"' << bad << '"';
  }
}

TEST(NodeActionNames, ParseRejectsUnknownAndCaseVariants) {
  for (std::string_view bad : {"", "Drain", "DRAIN", "drain ", "draining", "failed", "enrolling",
                               "Retire", "activated", "kDrain"}) {
    EXPECT_FALSE(parse_node_action(bad).has_value()) << '"' << bad << '"';
  }
}

}  // namespace node_state_test
}  // namespace gpurent::inventory
