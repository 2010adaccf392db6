// The rental's state moves as billing events.
#include "scheduler/rental_billing.h"

namespace gpurent::scheduler {

std::optional<billing::Ending> billing_ending(RentalState from, RentalState to) {
  switch (to) {
    case RentalState::kCancelled:
    case RentalState::kFailed:
      return billing::Ending::kNotDelivered;
    case RentalState::kReleasing:
      // Ended by the customer or its period while it ran; ended during provisioning it never
      // ran, and is not billed.
      return from == RentalState::kActive ? billing::Ending::kEnded
                                          : billing::Ending::kNotDelivered;
    case RentalState::kInterrupted:
      return from == RentalState::kActive ? billing::Ending::kInterrupted
                                          : billing::Ending::kNotDelivered;
    default:
      return std::nullopt;
  }
}

void bill_transition(Tx& tx, billing::RentalCharges& charges, RentalStore& rentals,
                     HandoverStore& handovers, const std::string& rental_id, RentalState from,
                     RentalState to, Timestamp now) {
  std::optional<Handover> handover;
  if (from == RentalState::kProvisioning) handover = handovers.current(tx, rental_id);
  if (to == RentalState::kActive) {
    if (handover) {
      if (credits_lost_time(handover->cause)) {
        auto lost = std::chrono::duration_cast<std::chrono::seconds>(now - handover->started_at);
        auto credited =
            charges.credit_handover(tx, rental_id, handover->id, lost, handover->started_at, now);
        if (credited > 0) handovers.set_credited(tx, handover->id, credited);
      }
      return;
    }
    if (auto r = rentals.get_any(tx, rental_id)) charges.start(tx, rental_id, r->period.start);
    return;
  }
  RentalState billed_from = handover ? RentalState::kActive : from;
  if (auto ending = billing_ending(billed_from, to)) charges.settle(tx, rental_id, *ending, now);
}

}  // namespace gpurent::scheduler
