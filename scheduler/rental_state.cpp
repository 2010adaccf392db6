// The rental state machine's transition table and the customer's actions per state.
#include "scheduler/rental_state.h"

namespace gpurent::scheduler {
namespace {

using S = RentalState;

// Where each state may go, indexed by the enum's value.
constexpr std::array<RentalStates, kAllRentalStates.size()> kMoves{{
    /* pending */ {S::kScheduled, S::kCancelled},
    /* scheduled */ {S::kScheduled, S::kProvisioning, S::kCancelled},
    /* provisioning */ {S::kScheduled, S::kActive, S::kFailed, S::kReleasing, S::kInterrupted},
    /* active */ {S::kProvisioning, S::kReleasing, S::kInterrupted},
    /* releasing */ {S::kEnded},
    /* ended */ {},
    /* cancelled */ {},
    /* failed */ {},
    /* interrupted */ {},
}};

constexpr std::array<std::string_view, kAllRentalActions.size()> kActionNames{"extend", "terminate",
                                                                              "ssh_certificate"};

// Where each action may be asked, indexed by the action's value.
constexpr std::array<RentalStates, kAllRentalActions.size()> kActionStates{{
    /* extend */ {S::kScheduled, S::kProvisioning, S::kActive},
    /* terminate */ {S::kPending, S::kScheduled, S::kProvisioning, S::kActive},
    /* ssh_certificate */ {S::kScheduled, S::kProvisioning, S::kActive},
}};

}  // namespace

std::optional<RentalState> parse_rental_state(std::string_view text) {
  for (std::size_t i = 0; i < kRentalStateNames.size(); ++i) {
    if (kRentalStateNames[i] == text) return kAllRentalStates[i];
  }
  return std::nullopt;
}

bool can_move(RentalState from, RentalState to) {
  return kMoves[static_cast<std::size_t>(from)].contains(to);
}

std::vector<RentalState> reachable_from(RentalState from) {
  std::array<bool, kAllRentalStates.size()> seen{};
  std::vector<RentalState> frontier{from};
  while (!frontier.empty()) {
    RentalState at = frontier.back();
    frontier.pop_back();
    for (RentalState next : kMoves[static_cast<std::size_t>(at)].members()) {
      auto i = static_cast<std::size_t>(next);
      if (seen[i]) continue;
      seen[i] = true;
      frontier.push_back(next);
    }
  }
  std::vector<RentalState> out;
  for (RentalState s : kAllRentalStates) {
    if (seen[static_cast<std::size_t>(s)]) out.push_back(s);
  }
  return out;
}

bool can_reach(RentalState from, RentalState to) {
  for (RentalState s : reachable_from(from)) {
    if (s == to) return true;
  }
  return false;
}

std::string_view to_string(RentalAction action) {
  return kActionNames[static_cast<std::size_t>(action)];
}

bool allows(RentalState state, RentalAction action) {
  return kActionStates[static_cast<std::size_t>(action)].contains(state);
}

std::vector<RentalAction> allowed_actions(RentalState state) {
  std::vector<RentalAction> out;
  for (RentalAction a : kAllRentalActions) {
    if (allows(state, a)) out.push_back(a);
  }
  return out;
}

}  // namespace gpurent::scheduler
