// A rental's money (DESIGN.md "Money"): booking holds the whole period; each 24-hour day is
// captured from the hold when it starts, once per (rental, day); ending early releases the
// days not started, a rental never delivered (cancelled, failed) releases everything, an
// extension holds its days anew, and an interruption gives back the lost hours of the day
// it happened in. Billing knows a rental only as an id, an org, a price, a number of days
// and, once it runs, the start its days count from. Every method but capture_due runs in
// the caller's transaction, so the money moves with the rental's own change or not at all.
#pragma once

#include "billing/invoice_store.h"
#include "billing/ledger.h"
#include "billing/pricing.h"
#include "core/clock.h"
#include "core/db_pool.h"

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

namespace gpurent::billing {

// What a booking tells billing of its rental.
struct RentalTerms {
  std::string rental_id;
  std::string org_id;
  std::optional<std::string> token_id;  // the API token it was booked through
  std::optional<std::string> actor_user_id;
  std::string description;           // the rental's name, for the history and invoices
  std::int64_t day_price_minor = 0;  // per day, in the price list's basis (net or gross)
  int days = 1;
};

// Monthly spend limits (calendar months in the billing time zone); absent: none.
struct SpendLimits {
  std::optional<std::int64_t> org_monthly_minor;
  std::optional<std::int64_t> token_monthly_minor;
};

// How a rental's billing ends.
enum class Ending {
  kNotDelivered,  // cancelled before its start, failed provisioning, ended while provisioning
  kEnded,         // its period ended, or the customer ended it while it ran
  kInterrupted,   // the hardware failed under it
};

struct RentalChargesOptions {
  PricingPolicy pricing;
  SlaPolicy sla = SlaPolicy::kLostHours;
  // What a handover of a running rental (scheduler/handovers.h) credits for the time it cost.
  SlaPolicy handover = SlaPolicy::kLostMinutes;
  std::string time_zone = "UTC";  // whose calendar months spend limits count
};

class RentalCharges {
 public:
  RentalCharges(const Clock& clock, Ledger& ledger, InvoiceStore& invoices,
                RentalChargesOptions options)
      : clock_(clock), ledger_(ledger), invoices_(invoices), options_(std::move(options)) {}

  // The price a booking of `days` days pays per day, discount applied (what the rental's
  // price snapshot keeps).
  DailyPrice daily_price(std::int64_t list_per_day_minor, int days) const {
    return billing::daily_price(options_.pricing, list_per_day_minor, days);
  }
  // A day's price split into net, tax and the gross amount charged.
  TaxSplit day_amounts(std::int64_t day_price_minor) const {
    return split_price(options_.pricing, day_price_minor);
  }

  // At booking: holds days × the gross day price from the org's balance. Throws Error
  // insufficient_funds (details required, available) when the org's available balance and
  // credit limit do not cover it, quota_exceeded when a monthly spend limit would be passed.
  void hold(Tx& tx, const RentalTerms& terms, const SpendLimits& limits);

  // At an extension: holds `more_days` more at the rental's day price, with the same checks.
  void extend(Tx& tx, const std::string& rental_id, int more_days, const SpendLimits& limits,
              const std::optional<std::string>& actor_user_id);

  // The rental runs (SSH ready): its days count from `period_start`, and each is captured
  // when it starts; those started already are captured now.
  void start(Tx& tx, const std::string& rental_id, Timestamp period_start);

  // Captures, for every running rental, each day that has started by `now` and is not yet
  // charged: a batch of rentals per transaction, claimed with FOR UPDATE SKIP LOCKED, so
  // every replica may run it at once. The number of rental-days captured.
  int capture_due(PgPool& pool, Timestamp now, int batch = 500,
                  const std::atomic<bool>* stopping = nullptr);

  // Ends the rental's billing, once (a second call does nothing): for kEnded and
  // kInterrupted of a running rental the days started by now are captured first; for
  // kInterrupted the SLA credit for the day it happened in is given; every day not captured
  // is released.
  void settle(Tx& tx, const std::string& rental_id, Ending ending, Timestamp now);

  // A running rental lost `lost` of its time to a handover (a swap to a spare, a power
  // action): credits it by the handover policy against the day price charged for the day it
  // began in, once per `handover_id` (the ledger's idempotency key). The amount credited; 0
  // for a rental that is not running, a policy that credits nothing, or a second call.
  std::int64_t credit_handover(Tx& tx, const std::string& rental_id, const std::string& handover_id,
                               std::chrono::seconds lost, Timestamp began, Timestamp now);

  // Whether the rental's days are being charged (it became active and has not settled).
  bool running(Tx& tx, const std::string& rental_id);

  // Whether the rental has billing (booked while billing was on).
  bool knows(Tx& tx, const std::string& rental_id);

  const RentalChargesOptions& options() const { return options_; }

 private:
  struct Meter;
  struct Hold;
  std::optional<Meter> lock_meter(Tx& tx, const std::string& rental_id);
  // Holds `days` days from `first_day` after the checks; the hold's id.
  void place_hold(Tx& tx, const Meter& m, int first_day, int days, const SpendLimits& limits,
                  const std::optional<std::string>& actor_user_id);
  void check_spend(Tx& tx, const Meter& m, std::int64_t amount, const SpendLimits& limits);
  // hold() where no spend limit applies: the meter, the hold and its posting in one
  // statement that locks the org's balances first.
  void hold_covered(Tx& tx, const RentalTerms& terms);
  // Captures the meter's days that have started by `now`; how many.
  int capture_started(Tx& tx, Meter& m, Timestamp now);

  const Clock& clock_;
  Ledger& ledger_;
  InvoiceStore& invoices_;
  RentalChargesOptions options_;
};

}  // namespace gpurent::billing
