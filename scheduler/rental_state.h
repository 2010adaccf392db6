// The rental state machine (DESIGN.md "State machines"): its states, which moves between them
// are legal, what a customer may ask of a rental in each state, and the named sets of states
// that queries mean. Pure, and table-tested (tests/rental_state_test.cpp); RentalStore refuses
// any move the table does not hold, and SQL is handed the sets as parameters, never literals.
//
//   pending ──► scheduled ──► provisioning ──► active ──► releasing ──► ended
//      │           │  ▲ re-placed  │   │          │
//      └──► cancelled ◄┘           │   └► failed  └──► interrupted (the node failed)
//                                  ├──► releasing (terminated)
//                                  └──► interrupted
//   active ──► provisioning: handed over again (scheduler/handovers.h) — to a spare after a
//   fault or for a maintenance window, or on its node after a reboot or a power action.
#pragma once

#include "core/state_set.h"

#include <array>
#include <optional>
#include <string_view>
#include <vector>

namespace gpurent::scheduler {

enum class RentalState {
  kPending,       // waiting for capacity (wait_for_capacity), its money held
  kScheduled,     // placed: its GPUs are allocated from its start
  kProvisioning,  // started: the agent is preparing the node and the access
  kActive,        // a verified login works; days are charged
  kReleasing,     // ended or terminated: access revoked, the GPUs being wiped
  kEnded,
  kCancelled,  // before its start: nothing was charged
  kFailed,     // provisioning gave up: nothing was charged
  kInterrupted,
};

inline constexpr std::array<RentalState, 9> kAllRentalStates{
    RentalState::kPending,   RentalState::kScheduled, RentalState::kProvisioning,
    RentalState::kActive,    RentalState::kReleasing, RentalState::kEnded,
    RentalState::kCancelled, RentalState::kFailed,    RentalState::kInterrupted};

// The wire and column names ("pending", "scheduled", …), in the enum's order.
inline constexpr std::array<std::string_view, 9> kRentalStateNames{
    "pending", "scheduled", "provisioning", "active",     "releasing",
    "ended",   "cancelled", "failed",       "interrupted"};

inline std::string_view to_string(RentalState state) {
  return kRentalStateNames[static_cast<std::size_t>(state)];
}

// Exact and case-sensitive, as the column stores it.
std::optional<RentalState> parse_rental_state(std::string_view text);

// Whether RentalStore::transition may move a rental from `from` to `to`. A move to the same
// state is legal only for a scheduled rental placed again (moved off a node before its start).
bool can_move(RentalState from, RentalState to);

// The states a rental in `from` may still come to, by one move or several (not `from`
// itself, unless a move leads back to it): what a client waiting for a state asks.
std::vector<RentalState> reachable_from(RentalState from);
bool can_reach(RentalState from, RentalState to);

// What a customer may ask of a rental (the API's `allowed_actions`).
enum class RentalAction {
  kExtend,          // POST /v1/rentals/{id}/extend
  kTerminate,       // POST /v1/rentals/{id}/terminate: cancelled before its start, else released
  kSshCertificate,  // POST /v1/rentals/{id}/ssh-certificate
};
inline constexpr std::array<RentalAction, 3> kAllRentalActions{
    RentalAction::kExtend, RentalAction::kTerminate, RentalAction::kSshCertificate};
std::string_view to_string(RentalAction action);

bool allows(RentalState state, RentalAction action);
std::vector<RentalAction> allowed_actions(RentalState state);

using RentalStates = StateSet<RentalState, kAllRentalStates.size()>;

// States a rental never leaves.
inline constexpr RentalStates kFinalRentalStates{RentalState::kEnded, RentalState::kCancelled,
                                                 RentalState::kFailed, RentalState::kInterrupted};
inline bool is_final(RentalState state) {
  return kFinalRentalStates.contains(state);
}
// Rentals the node serves now: a failing node interrupts them.
inline constexpr RentalStates kOnTheNode{RentalState::kProvisioning, RentalState::kActive,
                                         RentalState::kReleasing};
// Rentals that hold or will hold their node: a draining node drains until none is left.
inline constexpr RentalStates kHoldingTheNode{RentalState::kScheduled, RentalState::kProvisioning,
                                              RentalState::kActive, RentalState::kReleasing};
// Rentals whose GPUs count against the org's limit of GPUs at once.
inline constexpr RentalStates kCountedAgainstLimits{
    RentalState::kScheduled, RentalState::kProvisioning, RentalState::kActive};
// Rentals that went wrong on their node: placement counts them against the node.
inline constexpr RentalStates kWentWrong{RentalState::kFailed, RentalState::kInterrupted};
// Requests waiting for capacity, served in the order they came.
inline constexpr RentalStates kWaitingForCapacity{RentalState::kPending};

// The sets that partial indexes are defined by (migrations/0007_rentals.sql), as SQL text: a
// query that is to use such an index must say the same words, and a parameter cannot (a
// generic plan cannot prove the index's predicate from it). `column` is the state column as
// the query names it. tests/rental_state_test.cpp holds each to its set.
#define GPURENT_SQL_RENTAL_WAITING_FOR_CAPACITY(column) column " = 'pending'"
#define GPURENT_SQL_RENTAL_COUNTED_AGAINST_LIMITS(column) \
  column " IN ('scheduled', 'provisioning', 'active')"
#define GPURENT_SQL_RENTAL_WENT_WRONG(column) column " IN ('failed', 'interrupted')"

}  // namespace gpurent::scheduler
