// Booking: the use case that turns a rental request into GPUs held over a period. It runs
// inside the caller's transaction (the booking handler's, with billing's hold in the same
// one): it checks the request against the catalog, the price list and the guardrails, and
// then chooses in memory and claims in the database. The candidates come from the replica's
// CapacityIndex (its copy of the model's nodes, kept current node by node by the capacity
// announcements; loaded in the transaction when announcements are not arriving), placement
// orders them, and each choice in turn is claimed in one statement that writes the rental
// and its allocations only if the chosen node still takes them and its chosen GPUs are
// healthy (RentalStore::create_placed). The exclusion constraint on allocations settles races
// with other bookings on any replica: a choice taken meanwhile fails inside a savepoint, its
// node is marked changed in the copy so that the next read reloads it, and the next choice is
// tried, a bounded number of times. Bookings in flight on this replica see each other's
// choices (InFlightClaims), so they do not all queue for the same GPU. No statement of a
// booking reads rows in proportion to the fleet once the copy is loaded (docs/PERFORMANCE.md,
// "Booking storm").
#pragma once

#include "billing/rental_charges.h"
#include "core/audit.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/money.h"
#include "core/org_directory.h"
#include "inventory/catalog_copy.h"
#include "inventory/price_store.h"
#include "scheduler/candidate_store.h"
#include "scheduler/capacity_index.h"
#include "scheduler/in_flight_claims.h"
#include "scheduler/model_choice.h"
#include "scheduler/placement.h"
#include "scheduler/records.h"
#include "scheduler/rental_store.h"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace gpurent::scheduler {

// When the rental starts: now, an instant, or a calendar date, which means midnight of that
// date in the time zone of the site whose node takes the rental.
struct StartNow {};
struct StartDate {
  std::string date;  // YYYY-MM-DD
};
using Start = std::variant<StartNow, Timestamp, StartDate>;

struct BookingRequest {
  std::string org_id;
  Actor actor;  // the user (and token) booking
  // The model, or, when empty, the constraints every model it may take meets (the cheapest
  // model that fits is booked).
  std::string gpu_model;
  ModelConstraints constraints;
  int gpu_count = 1;
  LinkNeed link_need = LinkNeed::kNvlink;
  Start start;
  int days = 1;
  std::string image_id;
  std::vector<std::string> ssh_key_ids;  // already checked to be the org's
  std::string name;
  bool wait_for_capacity = false;
  // An API token's own limits; the org's are read inside the booking's transaction
  // (OrgDirectory), and the stricter of each holds.
  Guardrails token_limits;
};

// What the booking would get now: the quote, and the rental's first choice of node.
struct Quote {
  std::string gpu_model;  // the model the booking would take (the first tried when none fits)
  Money price_per_day{0, "XXX"};  // the price list's, less the discount for the days
  Money total{0, "XXX"};
  Money list_price_per_day{0, "XXX"};
  int discount_percent = 0;
  bool available = false;
  Period period;                            // at the requested start (the first fitting site's)
  std::optional<Timestamp> earliest_start;  // the soonest start that fits, within the horizon
  std::optional<Placement> preview;
};

// Refused for want of GPUs: the contract's 409 insufficient_capacity with these details.
// An alternative is a shape that fits: another GPU count of the model at the requested start,
// another model (that the image runs on) with the requested count at the requested start, or
// the requested shape at its earliest start.
struct Alternative {
  std::string gpu_model;
  int gpu_count = 0;
  Timestamp start;
};
struct NoCapacity {
  std::optional<Timestamp> earliest_start;  // within the horizon; absent when none
  std::vector<Alternative> alternatives;    // at most kMaxAlternatives
};
inline constexpr std::size_t kMaxAlternatives = 8;

// Where a waiting request stands: its place among the requests for its GPU model in the order
// the waitlist serves them (first come first served, one org at a time), and the earliest
// start its shape would fit at now, ignoring the requests ahead of it.
struct WaitlistStanding {
  int position = 0;
  std::optional<Timestamp> estimated_start;
};

struct BookingOptions {
  std::chrono::seconds cleaning_window{30 * 60};
  // How many placement choices refused for an overlap (a booking made meanwhile) are
  // tried before the request counts as unplaceable now.
  int max_attempts = 16;
  // How far ahead a start may lie, and how far the search for an earliest start looks.
  std::chrono::hours horizon{24 * 90};
  std::chrono::seconds pending_for{24 * 3600};  // a waiting request expires after this
};

class Booking {
 public:
  // `orgs` is where every check reads the org's limits as they stand in its
  // transaction: a booking, an extension, and a waiting request when it comes up.
  // `catalog` answers the catalog and price reads from memory while it can;
  // `capacity` is where bookings and quotes choose from; `candidates` loads the waitlist's
  // candidates (whose transaction may hold writes of
  // its own that the shared copy must not take in).
  Booking(const Clock& clock, inventory::CatalogCopy& catalog, RentalStore& rentals,
          CandidateStore& candidates, CapacityIndex& capacity, OrgDirectory& orgs,
          BookingOptions options)
      : clock_(clock),
        catalog_(catalog),
        rentals_(rentals),
        candidates_(candidates),
        capacity_(capacity),
        orgs_(orgs),
        options_(options) {}

  // Books the rental: a `scheduled` rental with its GPUs allocated, or, when nothing fits
  // and the request asked to wait, a `pending` one. Throws Error: invalid_request (naming
  // the field), incompatible_image, quota_exceeded; and NoCapacity (as InsufficientCapacity
  // below) when nothing fits and it may not wait.
  RentalRecord book(Tx& tx, const BookingRequest& request);

  // The same checks and search as book(), writing nothing; with the alternatives when
  // nothing fits.
  Quote quote(Tx& tx, const BookingRequest& request, NoCapacity* when_unavailable = nullptr);

  // The waitlist's placement: allocates GPUs for a `pending` rental, as book() would for its
  // shape, starting at its requested start or now when that has passed (the days stay as
  // booked), and sets its node, GPUs and period. The rental stays `pending`: the caller moves
  // it to `scheduled` in the same transaction. False when nothing fits now; nothing written.
  // Also moves a scheduled rental whose node left service (its allocations dropped first).
  // Never onto `exclude_nodes` (a maintenance window's).
  bool place_pending(Tx& tx, const RentalRecord& rental,
                     const std::vector<std::string>& exclude_nodes = {});

  // A running rental's rest, [from, its end) and the cleaning window after, on other GPUs of
  // the same model, count and link need (a swap to a spare, scheduler/handovers.h): allocated
  // and set as where it runs, its period unchanged, never on `exclude_nodes` (the node it
  // leaves). False when nothing fits; the caller holds out of its reach the GPUs that must not
  // be chosen (unwiped ones) while it places.
  bool place_rest(Tx& tx, const RentalRecord& rental, Timestamp from,
                  const std::vector<std::string>& exclude_nodes);

  // Whether a waiting rental may be placed as its org's max_concurrent_gpus stands now: a
  // request is held to the limit when it comes up, not only when it queued (it keeps
  // waiting, and expires if that lasts).
  bool within_limits(Tx& tx, const RentalRecord& rental);

  // Adds `more_days` to a rental that has not ended (scheduled, provisioning or active), on
  // the same GPUs: its period, the allocations' end and its days move together. Throws
  // invalid_state for a rental in another state, invalid_request (days) past
  // limits::kMaxRentalDays, quota_exceeded past the stricter max_days of the org and
  // `token_limits`, and InsufficientCapacity when the GPUs are booked after it (nothing
  // changed). The rental as extended. Not a state change, so no event row. With billing, the
  // extension's days are held too (insufficient_funds, quota_exceeded past the org's or the
  // token's monthly spend limit).
  RentalRecord extend(Tx& tx, const RentalRecord& locked, int more_days,
                      const Guardrails& token_limits = {},
                      const std::optional<std::string>& actor_user_id = std::nullopt);

  // A pending rental's place in the waitlist and its estimated start.
  WaitlistStanding standing(Tx& tx, const RentalRecord& rental);

  const BookingOptions& options() const { return options_; }

  // Billing, set by the process wiring: the discount for the days in the price snapshot, and
  // a hold for every booking and extension in its transaction. Unset: no money moves (the
  // scheduler's own tests).
  void charge_with(billing::RentalCharges* charges) { charges_ = charges; }

 private:
  struct Option;
  struct Checked;
  Checked check(Tx& tx, const BookingRequest& request);
  std::vector<Option> options_for(Tx& tx, const BookingRequest& request,
                                  const inventory::ImageRecord& image, Timestamp now);
  std::optional<Option> option_for(Tx& tx, const inventory::GpuModelRecord& model,
                                   const BookingRequest& request, Timestamp now);
  // The soonest start, `first_day` days or more after the option's own, within the horizon.
  std::optional<Timestamp> earliest_start(Tx& tx, const Option& option, int gpu_count,
                                          LinkNeed need, int days, int first_day);
  // The model's candidates over `window`: from the copy, or loaded in `tx` when `from_copy`
  // is false.
  CapacityIndex::Candidates candidates_of(Tx& tx, const std::string& model, const Period& window,
                                          bool from_copy = true);
  NoCapacity no_capacity(Tx& tx, const BookingRequest& request, const Checked& checked);

  const Clock& clock_;
  inventory::CatalogCopy& catalog_;
  RentalStore& rentals_;
  CandidateStore& candidates_;
  CapacityIndex& capacity_;
  OrgDirectory& orgs_;
  BookingOptions options_;
  InFlightClaims claims_;
  billing::RentalCharges* charges_ = nullptr;
  // Holds the money for a rental just created (scheduled or waiting).
  void hold_for(Tx& tx, const RentalRecord& rental, const BookingRequest& request,
                const Guardrails& org);
};

// Thrown by Booking::book when nothing fits now; the API answers 409 insufficient_capacity
// with Retry-After.
class InsufficientCapacity : public std::runtime_error {
 public:
  explicit InsufficientCapacity(
      NoCapacity details,
      const std::string& message = "No GPUs of that shape are free for that period.")
      : std::runtime_error(message), details_(std::move(details)) {}
  const NoCapacity& details() const { return details_; }

 private:
  NoCapacity details_;
};

}  // namespace gpurent::scheduler
