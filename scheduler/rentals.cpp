// Rentals: each use case in one transaction of its own (or the Idempotency-Key unit's, which
// the pool joins: the guard commits a booking with its stored response).
#include "scheduler/rentals.h"

#include "core/error.h"
#include "core/sql.h"
#include "scheduler/rental_state.h"

namespace gpurent::scheduler {
namespace {

// The caller's part of a booking request: their org, who acts, and their token's limits.
BookingRequest from_caller(const Caller& caller, BookingRequest request) {
  request.org_id = caller.org_id;
  request.actor = caller.actor;
  request.token_limits = caller.token_guardrails;
  return request;
}

Error no_such_rental() {
  return Error(ErrorCode::kNotFound, "No such rental.");
}

}  // namespace

RentalRecord Rentals::owned(Tx& tx, const Caller& caller, const std::string& id, bool lock) {
  auto r = lock ? rentals_.lock(tx, caller.org_id, id) : rentals_.get(tx, caller.org_id, id);
  if (!r) throw no_such_rental();
  return *r;
}

RentalView Rentals::view(Tx& tx, const RentalRecord& r) {
  RentalView v{.rental = r};
  if (ssh_) v.ssh = ssh_->details(tx, r);
  return v;
}

// Another org's key is as unknown as none.
void Rentals::check_ssh_keys(Tx& tx, const BookingRequest& r) {
  for (const auto& id : r.ssh_key_ids) {
    if (!ssh_keys_.get(tx, r.org_id, id)) {
      throw Error(
          ErrorCode::kInvalidRequest, "No such SSH key: " + id + ".",
          {{"field", "ssh_key_ids"}, {"reason", "names an SSH key this org does not have"}});
    }
  }
}

// This replica's own change is in its next calendar: the announcement that tells every
// replica reaches this one's listener only a moment after the commit. After the commit: a
// reload before it would see the node without the change.
void Rentals::capacity_changed(const RentalRecord& rental) {
  if (!capacity_ || !rental.node_id) return;
  pool_.after_commit(
      [capacity = capacity_, node = *rental.node_id] { capacity->node_changed(node); });
}

RentalRecord Rentals::book(const Caller& caller, BookingRequest request) {
  request = from_caller(caller, std::move(request));
  auto rental = pool_.transact("rental_book", [&](Tx& tx) {
    check_ssh_keys(tx, request);
    return booking_.book(tx, request);
  });
  capacity_changed(rental);
  // A rental that starts now is the lifecycle's to provision now, not at its next poll: a CI
  // job waits for `active`. After the commit, as the run must see it.
  if (rental.state == RentalState::kScheduled && rental.period.start <= clock_.now()) {
    pool_.after_commit([this] { lifecycle_.due_now(); });
  }
  return rental;
}

Quote Rentals::quote(const Caller& caller, BookingRequest request, NoCapacity* when_unavailable) {
  request = from_caller(caller, std::move(request));
  return pool_.read("rental_quote", [&](Tx& tx) {
    check_ssh_keys(tx, request);
    return booking_.quote(tx, request, when_unavailable);
  });
}

Page<RentalView> Rentals::list(const Caller& caller, const std::optional<RentalState>& state,
                               int limit, const std::optional<std::string>& cursor) {
  return pool_.read("rental_list", [&](Tx& tx) {
    auto page = rentals_.list(tx, caller.org_id, state, limit, cursor);
    Page<RentalView> out{.next_cursor = page.next_cursor};
    out.items.reserve(page.items.size());
    // One statement for every active rental's SSH details, not two per rental.
    std::vector<std::optional<SshDetails>> ssh(page.items.size());
    if (ssh_) ssh = ssh_->details(tx, page.items);
    for (std::size_t i = 0; i < page.items.size(); ++i) {
      out.items.push_back({.rental = page.items[i], .ssh = std::move(ssh[i])});
    }
    return out;
  });
}

RentalView Rentals::show(const Caller& caller, const std::string& id) {
  return pool_.read("rental_get", [&](Tx& tx) {
    auto v = view(tx, owned(tx, caller, id, false));
    if (v.rental.state == RentalState::kPending) v.waitlist = booking_.standing(tx, v.rental);
    return v;
  });
}

std::vector<RentalEvent> Rentals::events(const Caller& caller, const std::string& id) {
  return pool_.read("rental_events", [&](Tx& tx) {
    owned(tx, caller, id, false);
    return rentals_.events(tx, caller.org_id, id);
  });
}

WaitAnswer Rentals::wait(const Caller& caller, const std::string& id, RentalState target) {
  auto v =
      pool_.read("rental_wait", [&](Tx& tx) { return view(tx, owned(tx, caller, id, false)); });
  // Reached, or never will be: the answer is final now.
  bool keep = v.rental.state != target && can_reach(v.rental.state, target);
  return {std::move(v), keep};
}

RentalRecord Rentals::terminate(const Caller& caller, const std::string& id,
                                const std::string& reason) {
  auto rental = pool_.transact("rental_terminate", [&](Tx& tx) {
    auto r = owned(tx, caller, id, true);
    lifecycle_.terminate(tx, r, clock_.now(), reason, caller.actor.user_id);
    return *rentals_.get(tx, caller.org_id, id);
  });
  capacity_changed(rental);
  return rental;
}

RentalRecord Rentals::extend(const Caller& caller, const std::string& id, int more_days) {
  auto extended = pool_.transact("rental_extend", [&](Tx& tx) {
    auto r = owned(tx, caller, id, true);
    return booking_.extend(tx, r, more_days, caller.token_guardrails, caller.actor.user_id);
  });
  capacity_changed(extended);
  return extended;
}

RentalRecord Rentals::reboot(const Caller& caller, const std::string& id) {
  return pool_.transact("rental_reboot", [&](Tx& tx) {
    auto r = owned(tx, caller, id, true);
    lifecycle_.reboot(tx, r, caller.actor.user_id, clock_.now());
    return *rentals_.get(tx, caller.org_id, id);
  });
}

namespace {
constexpr Statement kSetCheckpoint = {
    "rental_set_checkpoint",
    "UPDATE rentals SET checkpoint_command = $3, checkpoint_timeout_s = $4 WHERE id = $1"
    " AND org_id = $2"};
constexpr Statement kGetCheckpoint = {
    "rental_get_checkpoint",
    "SELECT checkpoint_command, checkpoint_timeout_s FROM rentals WHERE id = $1 AND org_id = $2"};
constexpr std::size_t kMaxCheckpointBytes = 4096;
constexpr int kMaxCheckpointSeconds = 86400;
}  // namespace

Rentals::Checkpoint Rentals::set_checkpoint(const Caller& caller, const std::string& id,
                                            const Checkpoint& c) {
  if (c.command && (c.command->empty() || c.command->size() > kMaxCheckpointBytes ||
                    c.command->find('\0') != std::string::npos)) {
    throw Error::invalid_field("command", "must be 1 to 4096 bytes, without NUL");
  }
  if (c.timeout_s < 1 || c.timeout_s > kMaxCheckpointSeconds) {
    throw Error::invalid_field("timeout_s", "must be 1 to 86400 seconds");
  }
  return pool_.transact("rental_set_checkpoint", [&](Tx& tx) {
    owned(tx, caller, id, true);
    tx.exec(kSetCheckpoint, id, caller.org_id, c.command, c.timeout_s);
    return c;
  });
}

Rentals::Checkpoint Rentals::checkpoint(const Caller& caller, const std::string& id) {
  return pool_.read("rental_checkpoint", [&](Tx& tx) {
    owned(tx, caller, id, false);
    auto row = tx.exec(kGetCheckpoint, id, caller.org_id)[0];
    return Checkpoint{optional_field<std::string>(row[0]), row[1].as<int>()};
  });
}

std::vector<Handover> Rentals::handovers(const Caller& caller, const std::string& id) {
  return pool_.read("rental_handovers", [&](Tx& tx) {
    owned(tx, caller, id, false);
    return lifecycle_.handovers().of_rental(tx, id);
  });
}

IssuedUserCertificate Rentals::certificate(const Caller& caller, const std::string& id,
                                           const identity::SshPublicKey& key) {
  if (!ssh_) throw Error(ErrorCode::kNotFound, "This service issues no SSH certificates.");
  CertificateRequester requester{caller.user_id(), caller.actor.token_id};
  return pool_.transact("rental_ssh_certificate", [&](Tx& tx) {
    return ssh_->issue(tx, owned(tx, caller, id, false), key, requester);
  });
}

}  // namespace gpurent::scheduler
