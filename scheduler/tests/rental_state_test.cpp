// Tests the rental state machine: every (from, to) pair, every (state, action) cell, the
// named sets and the names SQL is given.
#include "scheduler/rental_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpurent::scheduler {

void PrintTo(RentalState state, std::ostream* os) {
  *os << to_string(state);
}
void PrintTo(RentalAction action, std::ostream* os) {
  *os << to_string(action);
}

namespace rental_state_test {

using S = RentalState;
using A = RentalAction;

// Every legal move; every other pair of the 81 is refused.
const std::set<std::pair<S, S>> kLegalMoves = {
    {S::kPending, S::kScheduled},         // capacity appeared for a waiting request
    {S::kPending, S::kCancelled},         // terminated, or its wait expired
    {S::kScheduled, S::kScheduled},       // placed again: moved off a node before its start
    {S::kScheduled, S::kProvisioning},    // its start
    {S::kScheduled, S::kCancelled},       // terminated, or nowhere to move it
    {S::kProvisioning, S::kScheduled},    // its node failed the handover burn-in: placed again
    {S::kProvisioning, S::kActive},       // a verified login
    {S::kProvisioning, S::kFailed},       // the attempts ran out
    {S::kProvisioning, S::kReleasing},    // terminated
    {S::kProvisioning, S::kInterrupted},  // its node failed
    {S::kActive, S::kProvisioning},       // handed over again: a swap, a reboot, a power action
    {S::kActive, S::kReleasing},          // its end, or terminated
    {S::kActive, S::kInterrupted},        // its node failed
    {S::kReleasing, S::kEnded},           // the wipe succeeded
};

TEST(RentalStateMachine, EveryPairOfStatesIsLegalExactlyWhenTheTableSaysSo) {
  for (S from : kAllRentalStates) {
    for (S to : kAllRentalStates) {
      EXPECT_EQ(can_move(from, to), kLegalMoves.contains({from, to}))
          << to_string(from) << " -> " << to_string(to);
    }
  }
}

TEST(RentalStateMachine, FinalStatesGoNowhereAndEveryOtherGoesSomewhere) {
  for (S from : kAllRentalStates) {
    bool goes = false;
    for (S to : kAllRentalStates) goes = goes || can_move(from, to);
    EXPECT_EQ(goes, !is_final(from)) << to_string(from);
  }
  EXPECT_EQ(kFinalRentalStates.members(),
            (std::vector<S>{S::kEnded, S::kCancelled, S::kFailed, S::kInterrupted}));
}

TEST(RentalStateMachine, ReachableStatesFollowTheMovesAndEndInAFinalState) {
  const std::pair<S, std::vector<S>> cases[] = {
      {S::kPending,
       {S::kScheduled, S::kProvisioning, S::kActive, S::kReleasing, S::kEnded, S::kCancelled,
        S::kFailed, S::kInterrupted}},
      {S::kScheduled,
       {S::kScheduled, S::kProvisioning, S::kActive, S::kReleasing, S::kEnded, S::kCancelled,
        S::kFailed, S::kInterrupted}},
      {S::kProvisioning,
       {S::kScheduled, S::kProvisioning, S::kActive, S::kReleasing, S::kEnded, S::kCancelled,
        S::kFailed, S::kInterrupted}},
      {S::kActive,
       {S::kScheduled, S::kProvisioning, S::kActive, S::kReleasing, S::kEnded, S::kCancelled,
        S::kFailed, S::kInterrupted}},
      {S::kReleasing, {S::kEnded}},
      {S::kEnded, {}},
      {S::kCancelled, {}},
      {S::kFailed, {}},
      {S::kInterrupted, {}},
  };
  for (const auto& [from, reachable] : cases) {
    EXPECT_EQ(reachable_from(from), reachable) << to_string(from);
    for (S to : kAllRentalStates) {
      bool listed = std::find(reachable.begin(), reachable.end(), to) != reachable.end();
      EXPECT_EQ(can_reach(from, to), listed) << to_string(from) << " -> " << to_string(to);
    }
  }
  // A releasing rental never becomes active again: a client waiting for active gives up.
  EXPECT_FALSE(can_reach(S::kReleasing, S::kActive));
}

struct ActionCell {
  S state;
  std::vector<A> allowed;
};

const ActionCell kActions[] = {
    {S::kPending, {A::kTerminate}},
    {S::kScheduled, {A::kExtend, A::kTerminate, A::kSshCertificate}},
    {S::kProvisioning, {A::kExtend, A::kTerminate, A::kSshCertificate}},
    {S::kActive, {A::kExtend, A::kTerminate, A::kSshCertificate}},
    {S::kReleasing, {}},
    {S::kEnded, {}},
    {S::kCancelled, {}},
    {S::kFailed, {}},
    {S::kInterrupted, {}},
};

TEST(RentalStateMachine, EachStateAllowsItsActionsAndNoOthers) {
  ASSERT_EQ(std::size(kActions), kAllRentalStates.size());
  for (const auto& cell : kActions) {
    EXPECT_EQ(allowed_actions(cell.state), cell.allowed) << to_string(cell.state);
    for (A a : kAllRentalActions) {
      bool listed = std::find(cell.allowed.begin(), cell.allowed.end(), a) != cell.allowed.end();
      EXPECT_EQ(allows(cell.state, a), listed) << to_string(cell.state) << " " << to_string(a);
    }
  }
}

TEST(RentalStateMachine, AStateThatAllowsTerminatingCanMoveToWhereTerminatingLeads) {
  for (S s : kAllRentalStates) {
    if (!allows(s, A::kTerminate)) continue;
    EXPECT_TRUE(can_move(s, S::kCancelled) || can_move(s, S::kReleasing)) << to_string(s);
  }
}

TEST(RentalStateMachine, NamesRoundTripAndAreExact) {
  std::set<std::string> names;
  for (S s : kAllRentalStates) {
    names.emplace(to_string(s));
    EXPECT_EQ(parse_rental_state(to_string(s)), s);
  }
  EXPECT_EQ(names.size(), kAllRentalStates.size());
  EXPECT_EQ(parse_rental_state("Active"), std::nullopt);
  EXPECT_EQ(parse_rental_state("active "), std::nullopt);
  EXPECT_EQ(parse_rental_state(""), std::nullopt);
  EXPECT_EQ(to_string(A::kExtend), "extend");
  EXPECT_EQ(to_string(A::kTerminate), "terminate");
  EXPECT_EQ(to_string(A::kSshCertificate), "ssh_certificate");
}

TEST(RentalStateMachine, NamedSetsReachSqlAsTextArrays) {
  EXPECT_EQ(kOnTheNode.sql(), R"({"provisioning","active","releasing"})");
  EXPECT_EQ(kHoldingTheNode.sql(), R"({"scheduled","provisioning","active","releasing"})");
  EXPECT_EQ(kCountedAgainstLimits.sql(), R"({"scheduled","provisioning","active"})");
  EXPECT_EQ(kWentWrong.sql(), R"({"failed","interrupted"})");
  EXPECT_EQ(RentalStates{}.sql(), "{}");
  // Rentals on the node now hold it; a rental holding it is never final.
  for (S s : kAllRentalStates) {
    EXPECT_TRUE(!kOnTheNode.contains(s) || kHoldingTheNode.contains(s)) << to_string(s);
    EXPECT_TRUE(!kHoldingTheNode.contains(s) || !is_final(s)) << to_string(s);
    EXPECT_TRUE(!kWentWrong.contains(s) || is_final(s)) << to_string(s);
  }
}

// The names quoted in an SQL condition, as a text[] literal would list them.
std::string quoted_names(std::string_view condition) {
  std::vector<std::string> names;
  for (std::size_t at = condition.find('\''); at != std::string_view::npos;) {
    std::size_t end = condition.find('\'', at + 1);
    names.emplace_back(condition.substr(at + 1, end - at - 1));
    at = condition.find('\'', end + 1);
  }
  return pg_array_literal(names);
}

TEST(RentalStateMachine, TheSetsPartialIndexesNeedAsTextNameTheirSetsMembers) {
  EXPECT_EQ(quoted_names(GPURENT_SQL_RENTAL_WAITING_FOR_CAPACITY("state")),
            kWaitingForCapacity.sql());
  EXPECT_EQ(quoted_names(GPURENT_SQL_RENTAL_COUNTED_AGAINST_LIMITS("state")),
            kCountedAgainstLimits.sql());
  EXPECT_EQ(quoted_names(GPURENT_SQL_RENTAL_WENT_WRONG("r.state")), kWentWrong.sql());
  EXPECT_EQ(std::string(GPURENT_SQL_RENTAL_WENT_WRONG("r.state")),
            "r.state IN ('failed', 'interrupted')");
}

}  // namespace rental_state_test
}  // namespace gpurent::scheduler
