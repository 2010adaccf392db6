// Where a rental's money follows its state (DESIGN.md "Money", "State machines"): it starts
// being charged when it becomes active (verified ready), and its billing ends when it leaves
// service: cancelled, failed or ended before it ran are not billed; ended while it ran pays
// the days started; an interruption is credited. The rule is pure; bill_transition applies it.
#pragma once

#include "billing/rental_charges.h"
#include "scheduler/handovers.h"
#include "scheduler/records.h"
#include "scheduler/rental_store.h"

#include <optional>

namespace gpurent::scheduler {

// How the move from `from` to `to` ends the rental's billing; nullopt when it does not.
std::optional<billing::Ending> billing_ending(RentalState from, RentalState to);

// Applies the move to the rental's billing inside the move's transaction: activation starts
// the days' captures (from the rental's period start), an ending settles it. A rental being
// handed over again (scheduler/handovers.h) ran already: its days go on being charged through
// the handover, it ends as an active one would, and its return to active credits the minutes
// the handover cost by the handover policy, once (recorded on the handover's row).
void bill_transition(Tx& tx, billing::RentalCharges& charges, RentalStore& rentals,
                     HandoverStore& handovers, const std::string& rental_id, RentalState from,
                     RentalState to, Timestamp now);

}  // namespace gpurent::scheduler
