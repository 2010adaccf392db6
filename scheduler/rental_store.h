// Rentals and their GPU allocations: creation, placement, state transitions with their event
// rows, the tenant and admin listings, and the claims the lifecycle worker and the waitlist
// make. Every method runs inside the caller's transaction (core/db_pool.h "Tx").
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "core/money.h"
#include "core/paging.h"
#include "inventory/node_state.h"
#include "scheduler/placement.h"
#include "scheduler/records.h"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpurent::scheduler {

// Writers of one GPU's allocations take turns (bookings, windows): without this, two that
// insert overlapping allocations at the same moment each wait for the other's transaction
// inside the exclusion check, and PostgreSQL breaks the deadlock only after deadlock_timeout
// (1 s), failing one of them with 40P01 instead of the exclusion violation the booking can
// act on. Taken in GPU id order, these transaction-level advisory locks
// (pg_advisory_xact_lock(kAllocationLockSpace + gpu id)) cannot deadlock among themselves, and
// unlike row locks on gpus they do not make the agents' health updates wait. The top byte 'A'
// keeps the keys apart from the migrator's lock.
inline constexpr long long kAllocationLockSpace = 0x41LL << 56;

// A booking as the use case decided it. A scheduled rental is created with its placement and
// then allocate()d in the same transaction; a pending one (waiting for capacity) has none.
struct NewRental {
  std::string org_id;
  std::string created_by;  // user id
  std::optional<std::string> created_by_token;
  std::string name;
  RentalState state = RentalState::kScheduled;  // kScheduled or kPending
  std::string gpu_model;
  int gpu_count = 1;
  LinkNeed link_need = LinkNeed::kNvlink;
  std::optional<std::string> node_id;  // required for kScheduled, absent for kPending
  std::vector<int> gpu_indices;
  Period period;  // the rental's own period, without the cleaning window
  int days = 1;
  std::string image_id;
  std::vector<std::string> ssh_key_ids;
  Money price_per_day{0, "XXX"};
  long long price_id = 0;  // the price-list row (prices.id) the price came from
  bool wait_for_capacity = false;
  std::optional<Timestamp> pending_expires_at;
  std::string reason = "booked";  // the first event row's reason
};

// A GPU a tenant could reach whose wipe has not succeeded since (migrations/0019).
struct UnwipedGpu {
  long long gpu_id = 0;
  std::string node_id;
  int index = 0;
};

// Admin listing filters; an absent one matches everything.
struct RentalFilter {
  std::optional<std::string> org_id;
  std::optional<RentalState> state;
  std::optional<std::string> node_id;
};

class RentalStore {
 public:
  explicit RentalStore(const Clock& clock) : clock_(clock) {}

  // Inserts the rental (state kScheduled or kPending, else std::invalid_argument) and its
  // first event row, in one statement. Allocations are separate: allocate().
  RentalRecord create(Tx& tx, const NewRental& rental);

  // create() and allocate() of a scheduled rental (its node and GPU indices set) over
  // `occupies`, in one statement, if its node still takes allocations and is healthy and
  // each of its GPUs exists and is not failing; nullopt, writing nothing, when not. Another
  // rental holding one of the GPUs throws ConstraintViolation as allocate() does (run it in
  // tx.attempt()); the GPUs' turn locks are taken first, as there.
  std::optional<RentalRecord> create_placed(Tx& tx, const NewRental& rental,
                                            const Period& occupies);

  // Reserves the GPUs `gpu_indices` of `node_id` for the rental over `occupies` (its period
  // plus the cleaning window): one allocation row per GPU, and the rental's node and GPU
  // indices set to match, in one statement. Another rental holding one of those GPUs over an
  // overlapping period throws ConstraintViolation (kExclusionViolation,
  // "allocations_no_overlap"); the booking runs this inside tx.attempt() and tries its next
  // candidate. Bookings of the same GPUs take turns (a transaction-level lock per GPU, held
  // until the caller's transaction ends), so a loser sees the violation at once rather than
  // a deadlock. An unknown rental, node or GPU index throws std::invalid_argument.
  void allocate(Tx& tx, const std::string& rental_id, const std::string& node_id,
                const std::vector<int>& gpu_indices, const Period& occupies);

  // Sets where a rental runs without allocating (a pending rental placed later calls
  // allocate(), which does this too), and its period when it moved. False for an unknown
  // rental.
  bool set_placement(Tx& tx, const std::string& rental_id, const std::string& node_id,
                     const std::vector<int>& gpu_indices,
                     const std::optional<Period>& period = std::nullopt);

  // The org's rental; another org's (or an unknown id) is nullopt, so a tenant cannot learn
  // that it exists.
  std::optional<RentalRecord> get(Tx& tx, const std::string& org_id, const std::string& id);
  // Any org's rental, for workers and platform admins.
  std::optional<RentalRecord> get_any(Tx& tx, const std::string& id);

  // get() and get_any() with the row locked (FOR UPDATE) until the caller's transaction
  // ends: terminate, extend and every transition of one rental queue here.
  std::optional<RentalRecord> lock(Tx& tx, const std::string& org_id, const std::string& id);
  std::optional<RentalRecord> lock_any(Tx& tx, const std::string& id);
  // lock_any() without waiting: nullopt also when another transaction holds the row.
  std::optional<RentalRecord> try_lock_any(Tx& tx, const std::string& id);

  // The org's rentals, newest first by (created_at, id) — a CI pipeline books many, and its
  // current ones belong on the first page — optionally of one state, after `cursor`
  // (invalid_request naming `cursor` for one that is not from a rental list).
  Page<RentalRecord> list(Tx& tx, const std::string& org_id,
                          const std::optional<RentalState>& state, int limit,
                          const std::optional<std::string>& cursor);
  // Every org's rentals for platform admins, same order and cursor.
  Page<RentalRecord> list_all(Tx& tx, const RentalFilter& filter, int limit,
                              const std::optional<std::string>& cursor);

  // Moves the rental from `from` to `to` and writes the event row, in one statement, only if
  // it is in `from` now; false otherwise (another replica moved it first, or the caller's
  // view is stale). Clears next_check_at: a check time belongs to the state it was set in.
  // The store does not judge the move itself; the lifecycle does.
  bool transition(Tx& tx, const std::string& id, RentalState from, RentalState to,
                  const std::string& reason,
                  const std::optional<std::string>& actor_user_id = std::nullopt);

  // Told of every move transition() (and expire_pending()) makes, in its transaction, right
  // after it is written (a move to the same state too: a scheduled rental re-placed):
  // billing's holds and captures follow the rental's state this way, whichever path moved it
  // (scheduler/rental_billing.h), and webhooks write their events into the same transaction.
  // Each call adds a hook; they run in the order added. Set by the process wiring before
  // serving.
  using TransitionHook =
      std::function<void(Tx&, const std::string& id, RentalState from, RentalState to)>;
  void on_transition(TransitionHook hook) { on_transition_.push_back(std::move(hook)); }
  // Told of every rental create() writes, in its transaction (its first state, scheduled or
  // pending, is no move from anything).
  using CreatedHook = std::function<void(Tx&, const RentalRecord&)>;
  void on_created(CreatedHook hook) { on_created_.push_back(std::move(hook)); }

  // When the lifecycle worker should look at a provisioning or releasing rental again
  // (nullopt: never by itself). False for an unknown rental.
  bool set_next_check(Tx& tx, const std::string& id, std::optional<Timestamp> at);
  // Counts one provisioning retry; the count after it (0 for an unknown rental).
  int add_attempt(Tx& tx, const std::string& id);

  // The rental's state changes, oldest first; empty for another org's rental.
  std::vector<RentalEvent> events(Tx& tx, const std::string& org_id, const std::string& id);

  // Early termination: every allocation of the rental that reaches past `at` +
  // `cleaning_window` ends there instead (one that would not start before then is removed),
  // so the GPUs are free for others after the wipe. The rental's period is left as booked.
  // The number of allocations changed.
  int end_allocations(Tx& tx, const std::string& rental_id, Timestamp at,
                      std::chrono::microseconds cleaning_window);
  // Cancellation: removes every allocation of the rental. The number removed.
  int drop_allocations(Tx& tx, const std::string& rental_id);
  // Extension: the rental's period now ends at `new_end` over `new_days` days, and its
  // allocations at `new_end` + `cleaning_window`. GPUs booked by someone else in the
  // added time throw ConstraintViolation (kExclusionViolation) — run it inside tx.attempt()
  // to answer insufficient_capacity. Only moves later: a `new_end` not after the current end
  // changes nothing and is false, as is an unknown rental.
  bool extend_allocations(Tx& tx, const std::string& rental_id, Timestamp new_end, int new_days,
                          std::chrono::microseconds cleaning_window);
  // The rental's allocations as (GPU index, occupied period), by index.
  std::vector<std::pair<int, Period>> allocations(Tx& tx, const std::string& rental_id);

  // Claims up to `limit` rentals whose lifecycle step is due at `now` — scheduled ones whose
  // start has come, active ones whose end has come, provisioning and releasing ones past
  // their check time — earliest first, locked until the caller's transaction ends. Rows
  // another transaction holds are skipped (FOR UPDATE SKIP LOCKED), so the worker runs on
  // every replica at once and no rental is handled twice.
  std::vector<RentalRecord> due(Tx& tx, Timestamp now, int limit);

  // The waitlist in the order it was joined (created_at, id), locked. Not SKIP LOCKED: a
  // second replica waits for the first rather than serving a later request ahead of an
  // earlier one.
  std::vector<RentalRecord> pending_in_order(Tx& tx, int limit);
  // Ids of the rentals running on a node now: provisioning, active or releasing.
  std::vector<std::string> running_on(Tx& tx, const std::string& node_id);
  // The same, unlocked, for reading a waiting rental's place.
  std::vector<RentalRecord> waiting(Tx& tx, int limit = 1000);
  // Scheduled rentals (not started yet) whose node is out of service (kNodesOutOfService:
  // maintenance, draining, failed, retired), soonest start first, locked; rows another
  // transaction holds are skipped.
  std::vector<RentalRecord> stranded(Tx& tx, int limit);

  // The unwiped GPUs of the model's nodes, by GPU id.
  std::vector<UnwipedGpu> unwiped_gpus(Tx& tx, const std::string& gpu_model);
  // Allocations of the rental on the GPUs `gpu_ids` over `occupies`, on each one that is free
  // then (the others are busy then anyway): a placement made next in the transaction sees
  // them taken. The ids held, for let_go() once the placement is made. Takes the GPUs'
  // allocation locks, as allocate() does.
  std::vector<long long> hold_gpus(Tx& tx, const std::string& rental_id,
                                   const std::vector<long long>& gpu_ids, const Period& occupies);
  void let_go(Tx& tx, const std::string& rental_id, const std::vector<long long>& gpu_ids);
  // Cancels every pending rental whose pending_expires_at has come, with an event row each,
  // in one statement; rows another transaction holds are left for the next run. The
  // cancelled rentals (their holds are the caller's to release).
  std::vector<RentalRecord> expire_pending(Tx& tx, Timestamp now);

  // The node's rentals, newest first (the admin node view).
  std::vector<RentalRecord> node_rentals(Tx& tx, const std::string& node_id, int limit);

  // GPUs the org holds or has booked: the gpu_count of its scheduled, provisioning and
  // active rentals (the max_concurrent_gpus guardrail).
  int active_gpu_count(Tx& tx, const std::string& org_id);

 private:
  const Clock& clock_;
  std::vector<TransitionHook> on_transition_;
  std::vector<CreatedHook> on_created_;
};

}  // namespace gpurent::scheduler
