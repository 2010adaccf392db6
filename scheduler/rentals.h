// Rentals: the customer's use cases on their rentals, one method each (API.md "Rentals").
// Each owns its transaction and reads what it needs from other modules inside it: a booking
// checks the SSH keys it names and the org's guardrails in the transaction that allocates
// the GPUs, so a key deleted or a limit lowered meanwhile cannot slip through. Every method
// sees only the caller's org: another org's rental is as unknown as none (not_found).
#pragma once

#include "core/caller.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/paging.h"
#include "identity/ssh_key_store.h"
#include "identity/ssh_public_key.h"
#include "scheduler/booking.h"
#include "scheduler/capacity_index.h"
#include "scheduler/lifecycle.h"
#include "scheduler/records.h"
#include "scheduler/rental_store.h"
#include "scheduler/ssh_access.h"

#include <optional>
#include <string>
#include <vector>

namespace gpurent::scheduler {

// A rental as its owner sees it: the record, the SSH details while it is active, and, from
// show(), where a waiting request stands.
struct RentalView {
  RentalRecord rental;
  std::optional<SshDetails> ssh;
  std::optional<WaitlistStanding> waitlist;
};

// What GET …/wait answers now: the rental, and whether to look again (it is not in the
// target state yet and can still come to it).
struct WaitAnswer {
  RentalView view;
  bool keep_waiting = false;
};

class Rentals {
 public:
  // `ssh` absent: no certificates and no SSH details. `capacity` absent: no in-memory
  // calendar to tell of this replica's own changes.
  Rentals(PgPool& pool, const Clock& clock, Booking& booking, Lifecycle& lifecycle,
          RentalStore& rentals, identity::SshKeyStore& ssh_keys, SshAccess* ssh,
          CapacityIndex* capacity)
      : pool_(pool),
        clock_(clock),
        booking_(booking),
        lifecycle_(lifecycle),
        rentals_(rentals),
        ssh_keys_(ssh_keys),
        ssh_(ssh),
        capacity_(capacity) {}

  // Books `request` (its org, actor and token limits are the caller's). Throws as
  // Booking::book does, and invalid_request naming ssh_key_ids for a key the org does not
  // have.
  RentalRecord book(const Caller& caller, BookingRequest request);
  // The booking's price and availability, writing nothing; `when_unavailable` gets the
  // alternatives when nothing fits.
  Quote quote(const Caller& caller, BookingRequest request, NoCapacity* when_unavailable);

  Page<RentalView> list(const Caller& caller, const std::optional<RentalState>& state, int limit,
                        const std::optional<std::string>& cursor);
  RentalView show(const Caller& caller, const std::string& id);
  // The rental's state changes, oldest first.
  std::vector<RentalEvent> events(const Caller& caller, const std::string& id);
  // The rental now; keep_waiting while `target` is still ahead of it.
  WaitAnswer wait(const Caller& caller, const std::string& id, RentalState target);

  // Lifecycle::terminate, on the rental locked.
  RentalRecord terminate(const Caller& caller, const std::string& id, const std::string& reason);
  // Booking::extend with the caller's token limits (the org's are read inside).
  RentalRecord extend(const Caller& caller, const std::string& id, int more_days);
  // SshAccess::issue for the caller (the user, and the token when one acted). Only with ssh.
  IssuedUserCertificate certificate(const Caller& caller, const std::string& id,
                                    const identity::SshPublicKey& key);

  // Lifecycle::reboot, on the rental locked: the tenant's soft reboot of its whole node.
  RentalRecord reboot(const Caller& caller, const std::string& id);
  // The command the agent runs as the rental's login when a notice reaches its node, and its
  // time limit (1 s to 24 h); none clears it. invalid_request for an empty, over-long
  // (4 KiB) or NUL-holding command or a limit out of range.
  struct Checkpoint {
    std::optional<std::string> command;
    int timeout_s = 600;
  };
  Checkpoint set_checkpoint(const Caller& caller, const std::string& id,
                            const Checkpoint& checkpoint);
  Checkpoint checkpoint(const Caller& caller, const std::string& id);
  // The rental's handovers (swaps, reboots, power actions), oldest first.
  std::vector<Handover> handovers(const Caller& caller, const std::string& id);

  bool issues_certificates() const { return ssh_ != nullptr; }

 private:
  RentalView view(Tx& tx, const RentalRecord& r);
  // The caller's rental, or not_found.
  RentalRecord owned(Tx& tx, const Caller& caller, const std::string& id, bool lock);
  void check_ssh_keys(Tx& tx, const BookingRequest& request);
  void capacity_changed(const RentalRecord& rental);

  PgPool& pool_;
  const Clock& clock_;
  Booking& booking_;
  Lifecycle& lifecycle_;
  RentalStore& rentals_;
  identity::SshKeyStore& ssh_keys_;
  SshAccess* ssh_;
  CapacityIndex* capacity_;
};

}  // namespace gpurent::scheduler
