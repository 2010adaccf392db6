// Holds, captures, releases and SLA credits of rentals, each posted to the ledger with a key
// that names what it is for ("capture:<rental>:<day>", "release:<hold>", "sla:<rental>"), so
// a repeat posts nothing; the meter row of the rental, locked first, orders everything one
// rental's billing does.
#include "billing/rental_charges.h"

#include "core/error.h"
#include "core/sql.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <vector>

namespace gpurent::billing {
namespace {

constexpr Statement kInsertMeter = {
    "billing_meter_insert",
    "INSERT INTO billing_rentals (rental_id, org_id, token_id, description, currency,"
    " day_gross_minor, day_net_minor, day_tax_minor, days, state, created_at)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'held', $10::timestamptz)"};

constexpr Statement kLockMeter = {
    "billing_meter_lock",
    "SELECT org_id, token_id, description, day_gross_minor, day_net_minor, day_tax_minor, days,"
    " state, " SQL_MICROS("period_start") ", next_day, credited_minor"
    " FROM billing_rentals WHERE rental_id = $1 FOR UPDATE"};

constexpr Statement kKnows = {"billing_meter_exists",
                              "SELECT 1 FROM billing_rentals WHERE rental_id = $1"};

constexpr Statement kSetMeter = {
    "billing_meter_set",
    "UPDATE billing_rentals SET state = $2, period_start = $3::timestamptz, next_day = $4,"
    " next_due_at = $5::timestamptz, days = $6, credited_minor = $7 WHERE rental_id = $1"};

constexpr Statement kOpenHolds = {
    "billing_holds_open",
    "SELECT id, first_day, days, day_gross_minor, amount_minor, captured_minor, released_minor"
    " FROM billing_holds WHERE rental_id = $1 AND resolved_at IS NULL ORDER BY first_day"
    " FOR UPDATE"};

constexpr Statement kInsertHold = {
    "billing_hold_insert",
    "INSERT INTO billing_holds (rental_id, org_id, token_id, first_day, days, day_gross_minor,"
    " amount_minor, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::timestamptz)"
    " RETURNING id"};

// A booking's meter, hold and hold posting in one statement, when no spend limit has to be
// counted first: the org's balances row is locked (`acct`), and only if it covers the
// amount are the meter, the hold and the posting written, each reading the one before, so
// the lock comes first. The posting is Ledger::post's shape (a transaction keyed
// "hold:<id>" and its two entries), skipped for an amount of zero as there. No row back when
// the org has no balances row yet; otherwise what it could spend and the hold's id (NULL when
// not covered: nothing written). $14/$15 the accounts the hold moves money from and to. One round
// trip where there were five, and the org's row is locked from here to COMMIT only: every booking
// of one org queues on it.
constexpr Statement kHoldCovered = {
    "billing_hold_covered",
    "WITH acct AS (SELECT available_minor + credit_limit_minor AS spendable"
    " FROM billing_accounts WHERE org_id = $2 FOR UPDATE),"
    " m AS (INSERT INTO billing_rentals (rental_id, org_id, token_id, description, currency,"
    " day_gross_minor, day_net_minor, day_tax_minor, days, state, created_at)"
    " SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, 'held', $10::timestamptz FROM acct"
    " WHERE acct.spendable >= $11 RETURNING rental_id),"
    " h AS (INSERT INTO billing_holds (rental_id, org_id, token_id, first_day, days,"
    " day_gross_minor, amount_minor, created_at)"
    " SELECT m.rental_id, $2, $3, 0, $9, $6, $11, $10::timestamptz FROM m RETURNING id),"
    " t AS (INSERT INTO ledger_transactions (idempotency_key, kind, org_id, rental_id,"
    " description, currency, at, actor_user_id)"
    " SELECT 'hold:' || h.id, 'hold', $2, $1, $12, $5, $10::timestamptz, $13 FROM h"
    " WHERE $11 > 0 RETURNING id),"
    " e AS (INSERT INTO ledger_entries (transaction_id, account, org_id, amount_minor)"
    " SELECT t.id, x.account, $2, x.amount FROM t,"
    " (VALUES ($14::text, -$11::bigint), ($15::text, $11::bigint)) AS x (account, amount))"
    " SELECT acct.spendable, (SELECT id FROM h) FROM acct"};

// A hold all of whose days are captured is resolved by the capture of its last day.
constexpr Statement kCaptureFromHold = {
    "billing_hold_capture",
    "UPDATE billing_holds SET captured_minor = captured_minor + $2,"
    " resolved_at = CASE WHEN captured_minor + $2 + released_minor = amount_minor"
    " THEN $3::timestamptz END WHERE id = $1 AND resolved_at IS NULL"};

constexpr Statement kReleaseHold = {
    "billing_hold_release",
    "UPDATE billing_holds SET released_minor = released_minor + $2, resolved_at = $3::timestamptz"
    " WHERE id = $1 AND resolved_at IS NULL"};

constexpr Statement kInsertCharge = {
    "billing_charge_insert",
    "INSERT INTO billing_charges (rental_id, day, hold_id, transaction_id, amount_minor,"
    " day_start, charged_at) VALUES ($1, $2, $3, $4, $5, $6::timestamptz, $7::timestamptz)"
    " ON CONFLICT (rental_id, day) DO NOTHING RETURNING day"};

constexpr Statement kChargeOf = {
    "billing_charge_of",
    "SELECT amount_minor FROM billing_charges WHERE rental_id = $1 AND day = $2"};

// What an org (or a token) committed this calendar month: holds placed, less what was
// released of them.
constexpr Statement kSpentByOrg = {
    "billing_spent_by_org",
    "SELECT coalesce(sum(amount_minor - released_minor), 0)::bigint FROM billing_holds"
    " WHERE org_id = $1"
    " AND created_at >= (date_trunc('month', $2::timestamptz AT TIME ZONE $3) AT TIME ZONE $3)"};
constexpr Statement kSpentByToken = {
    "billing_spent_by_token",
    "SELECT coalesce(sum(amount_minor - released_minor), 0)::bigint FROM billing_holds"
    " WHERE token_id = $1"
    " AND created_at >= (date_trunc('month', $2::timestamptz AT TIME ZONE $3) AT TIME ZONE $3)"};

// The batch is then worked in org order (see capture_due), not in the claim's.
constexpr Statement kDue = {
    "billing_meters_due",
    "SELECT rental_id, org_id FROM billing_rentals WHERE next_due_at <= $1::timestamptz"
    " ORDER BY next_due_at LIMIT $2 FOR UPDATE SKIP LOCKED"};

std::int64_t times_days(std::int64_t per_day, int days) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(per_day, static_cast<std::int64_t>(days), &out)) {
    throw Error::invalid_field("days", "make an amount too large to hold");
  }
  return out;
}

std::string days_text(int n) {
  return std::to_string(n) + (n == 1 ? " day" : " days");
}

// "1 minute", "17 minutes": a handover's lost time, rounded up as its credit counts it.
std::string minutes_text(std::chrono::seconds lost) {
  long long minutes = (lost.count() + 59) / 60;
  return std::to_string(minutes) + (minutes == 1 ? " minute" : " minutes");
}

}  // namespace

struct RentalCharges::Meter {
  std::string rental_id;
  std::string org_id;
  std::optional<std::string> token_id;
  std::string description;
  TaxSplit day;
  int days = 0;
  std::string state;  // held, running, settled
  std::optional<Timestamp> period_start;
  int next_day = 0;
  std::int64_t credited = 0;
};

struct RentalCharges::Hold {
  long long id = 0;
  int first_day = 0;
  int days = 0;
  std::int64_t day_gross = 0;
  std::int64_t amount = 0;
  std::int64_t captured = 0;
  std::int64_t released = 0;
};

namespace {

void save(Tx& tx, const RentalCharges& self, const std::string& rental_id, const std::string& state,
          std::optional<Timestamp> start, int next_day, int days, std::int64_t credited) {
  (void)self;
  std::optional<std::string> due;
  if (state == "running" && start && next_day < days) {
    due = sql_timestamp(day_start(*start, next_day));
  }
  tx.exec(kSetMeter, rental_id, state, start ? std::optional(sql_timestamp(*start)) : std::nullopt,
          next_day, due, days, credited);
}

}  // namespace

std::optional<RentalCharges::Meter> RentalCharges::lock_meter(Tx& tx,
                                                              const std::string& rental_id) {
  auto rows = tx.exec(kLockMeter, rental_id);
  if (rows.empty()) return std::nullopt;
  const auto& r = rows[0];
  Meter m;
  m.rental_id = rental_id;
  m.org_id = r[0].as<std::string>();
  m.token_id = optional_field<std::string>(r[1]);
  m.description = r[2].as<std::string>();
  m.day = {r[4].as<std::int64_t>(), r[5].as<std::int64_t>(), r[3].as<std::int64_t>()};
  m.days = r[6].as<int>();
  m.state = r[7].as<std::string>();
  m.period_start = read_optional_timestamp(r[8]);
  m.next_day = r[9].as<int>();
  m.credited = r[10].as<std::int64_t>();
  return m;
}

bool RentalCharges::knows(Tx& tx, const std::string& rental_id) {
  return !tx.exec(kKnows, rental_id).empty();
}

void RentalCharges::check_spend(Tx& tx, const Meter& m, std::int64_t amount,
                                const SpendLimits& limits) {
  Timestamp now = clock_.now();
  auto refuse = [&](const char* whose, std::int64_t limit, std::int64_t spent) {
    throw Error(ErrorCode::kQuotaExceeded,
                std::string("This would pass the ") + whose + " monthly spend limit of " +
                    std::to_string(limit) + " (minor units); " + std::to_string(spent) +
                    " is committed this month.",
                {{"limit", "spend_limit"},
                 {"scope", whose},
                 {"spend_limit", ledger_.money(limit).to_json()},
                 {"spent", ledger_.money(spent).to_json()},
                 {"requested", ledger_.money(amount).to_json()}});
  };
  if (limits.org_monthly_minor) {
    auto spent = tx.exec(kSpentByOrg, m.org_id, sql_timestamp(now), options_.time_zone)[0][0]
                     .as<std::int64_t>();
    if (spent + amount > *limits.org_monthly_minor) {
      refuse("org's", *limits.org_monthly_minor, spent);
    }
  }
  if (limits.token_monthly_minor && m.token_id) {
    auto spent = tx.exec(kSpentByToken, *m.token_id, sql_timestamp(now), options_.time_zone)[0][0]
                     .as<std::int64_t>();
    if (spent + amount > *limits.token_monthly_minor) {
      refuse("token's", *limits.token_monthly_minor, spent);
    }
  }
}

void RentalCharges::place_hold(Tx& tx, const Meter& m, int first_day, int days,
                               const SpendLimits& limits,
                               const std::optional<std::string>& actor_user_id) {
  std::int64_t amount = times_days(m.day.gross_minor, days);
  // The org's balances are locked before the spend is counted, so two bookings of one org
  // (on any replicas) check one after the other and the second sees the first's hold.
  auto balances = ledger_.lock(tx, m.org_id);
  check_spend(tx, m, amount, limits);
  std::int64_t spendable = balances.available.amount_minor() + balances.credit_limit.amount_minor();
  if (amount > spendable) {
    throw Error(ErrorCode::kInsufficientFunds,
                "The balance does not cover " + days_text(days) + " of this rental; top it up.",
                {{"required", ledger_.money(amount).to_json()},
                 {"available", ledger_.money(std::max<std::int64_t>(spendable, 0)).to_json()}});
  }
  Timestamp now = clock_.now();
  auto id = tx.exec(kInsertHold, m.rental_id, m.org_id, m.token_id, first_day, days,
                    m.day.gross_minor, amount, sql_timestamp(now))[0][0]
                .as<long long>();
  if (amount == 0) return;
  ledger_.post(tx, {.idempotency_key = "hold:" + std::to_string(id),
                    .kind = "hold",
                    .org_id = m.org_id,
                    .rental_id = m.rental_id,
                    .description = "Held for " + days_text(days) + " of " + m.description,
                    .at = now,
                    .actor_user_id = actor_user_id,
                    .entries = {{Account::kAvailable, -amount}, {Account::kHeld, amount}}});
}

void RentalCharges::hold(Tx& tx, const RentalTerms& t, const SpendLimits& limits) {
  bool counts_spend = limits.org_monthly_minor || (limits.token_monthly_minor && t.token_id);
  if (!counts_spend) {
    hold_covered(tx, t);
    return;
  }
  Meter m;
  m.rental_id = t.rental_id;
  m.org_id = t.org_id;
  m.token_id = t.token_id;
  m.description = t.description;
  m.day = day_amounts(t.day_price_minor);
  m.days = t.days;
  m.state = "held";
  tx.exec(kInsertMeter, m.rental_id, m.org_id, m.token_id, m.description, ledger_.currency(),
          m.day.gross_minor, m.day.net_minor, m.day.tax_minor, m.days, sql_timestamp(clock_.now()));
  place_hold(tx, m, 0, t.days, limits, t.actor_user_id);
}

void RentalCharges::hold_covered(Tx& tx, const RentalTerms& t) {
  TaxSplit day = day_amounts(t.day_price_minor);
  std::int64_t amount = times_days(day.gross_minor, t.days);
  Timestamp now = clock_.now();
  auto run = [&] {
    return tx.exec(
        kHoldCovered, t.rental_id, t.org_id, t.token_id, t.description, ledger_.currency(),
        day.gross_minor, day.net_minor, day.tax_minor, t.days, sql_timestamp(now), amount,
        "Held for " + days_text(t.days) + " of " + t.description, t.actor_user_id,
        std::string(to_string(Account::kAvailable)), std::string(to_string(Account::kHeld)));
  };
  auto rows = run();
  if (rows.empty()) {
    // The org's first money: its balances row is made (zero) and the hold tried on it.
    ledger_.lock(tx, t.org_id);
    rows = run();
  }
  if (rows[0][1].is_null()) {
    std::int64_t spendable = rows[0][0].as<std::int64_t>();
    throw Error(ErrorCode::kInsufficientFunds,
                "The balance does not cover " + days_text(t.days) + " of this rental; top it up.",
                {{"required", ledger_.money(amount).to_json()},
                 {"available", ledger_.money(std::max<std::int64_t>(spendable, 0)).to_json()}});
  }
  if (amount > 0) ledger_.available_changed(tx, t.org_id);
}

void RentalCharges::extend(Tx& tx, const std::string& rental_id, int more_days,
                           const SpendLimits& limits,
                           const std::optional<std::string>& actor_user_id) {
  auto m = lock_meter(tx, rental_id);
  if (!m || m->state == "settled") return;  // booked before billing, or over
  place_hold(tx, *m, m->days, more_days, limits, actor_user_id);
  m->days += more_days;
  save(tx, *this, rental_id, m->state, m->period_start, m->next_day, m->days, m->credited);
}

void RentalCharges::start(Tx& tx, const std::string& rental_id, Timestamp period_start) {
  auto m = lock_meter(tx, rental_id);
  if (!m || m->state != "held") return;
  m->state = "running";
  m->period_start = period_start;
  capture_started(tx, *m, clock_.now());
  save(tx, *this, rental_id, m->state, m->period_start, m->next_day, m->days, m->credited);
}

int RentalCharges::capture_started(Tx& tx, Meter& m, Timestamp now) {
  if (m.state != "running" || !m.period_start) return 0;
  int last = std::min(m.days - 1, day_at(*m.period_start, now));
  if (last < m.next_day) return 0;
  std::vector<Hold> holds;
  for (const auto& r : tx.exec(kOpenHolds, m.rental_id)) {
    holds.push_back({r[0].as<long long>(), r[1].as<int>(), r[2].as<int>(), r[3].as<std::int64_t>(),
                     r[4].as<std::int64_t>(), r[5].as<std::int64_t>(), r[6].as<std::int64_t>()});
  }
  int captured = 0;
  for (int day = m.next_day; day <= last; ++day) {
    auto hold = std::find_if(holds.begin(), holds.end(), [&](const Hold& h) {
      return day >= h.first_day && day < h.first_day + h.days;
    });
    // Every day of a rental lies in one of its holds; a day without one was released already.
    if (hold == holds.end()) continue;
    Timestamp starts = day_start(*m.period_start, day);
    std::optional<long long> txn;
    if (hold->day_gross > 0) {
      txn = ledger_.post(
          tx,
          {.idempotency_key = "capture:" + m.rental_id + ":" + std::to_string(day),
           .kind = "capture",
           .org_id = m.org_id,
           .rental_id = m.rental_id,
           .description = "Day " + std::to_string(day + 1) + " of " + m.description,
           .at = now,
           .entries = {{Account::kHeld, -hold->day_gross}, {Account::kRevenue, hold->day_gross}}});
      if (!txn) continue;  // captured already
    }
    if (tx.exec(kInsertCharge, m.rental_id, day, hold->id, txn, hold->day_gross,
                sql_timestamp(starts), sql_timestamp(now))
            .empty()) {
      continue;
    }
    tx.exec(kCaptureFromHold, hold->id, hold->day_gross, sql_timestamp(now));
    hold->captured += hold->day_gross;
    invoices_.add_rental_day(tx, m.org_id, m.rental_id, m.description, starts,
                             {m.day.net_minor, m.day.tax_minor, m.day.gross_minor});
    ++captured;
  }
  m.next_day = last + 1;
  return captured;
}

int RentalCharges::capture_due(PgPool& pool, Timestamp now, int batch,
                               const std::atomic<bool>* stopping) {
  int total = 0;
  for (;;) {
    if (stopping && stopping->load()) break;
    auto [claimed, captured] = pool.transact("billing_capture_due", [&](Tx& tx) {
      int n = 0;
      auto ids = tx.exec(kDue, sql_timestamp(now), batch);
      // Every lock a capture takes beyond its meter belongs to the rental's org (its balances
      // row, its month's draft invoice). Taken in org order, two replicas' batches never wait
      // on each other in a cycle: in the claim's order they deadlocked (docs/PERFORMANCE.md).
      std::vector<std::pair<std::string, std::string>> by_org;
      for (const auto& row : ids)
        by_org.emplace_back(row[1].as<std::string>(), row[0].as<std::string>());
      std::sort(by_org.begin(), by_org.end());
      for (const auto& [org, rental] : by_org) {
        auto m = lock_meter(tx, rental);
        if (!m) continue;
        n += capture_started(tx, *m, now);
        save(tx, *this, m->rental_id, m->state, m->period_start, m->next_day, m->days, m->credited);
      }
      return std::make_pair(static_cast<int>(ids.size()), n);
    });
    total += captured;
    if (claimed < batch) break;
  }
  return total;
}

std::int64_t RentalCharges::credit_handover(Tx& tx, const std::string& rental_id,
                                            const std::string& handover_id,
                                            std::chrono::seconds lost, Timestamp began,
                                            Timestamp now) {
  auto m = lock_meter(tx, rental_id);
  if (!m || m->state != "running" || !m->period_start) return 0;
  // The day it began in is charged by now (capture_started runs at activation and daily).
  capture_started(tx, *m, now);
  save(tx, *this, m->rental_id, m->state, m->period_start, m->next_day, m->days, m->credited);
  int day = std::max(0, day_at(*m->period_start, began));
  auto charged = tx.exec(kChargeOf, rental_id, day);
  if (charged.empty()) return 0;
  std::int64_t credit = sla_credit_minor(options_.handover, charged[0][0].as<std::int64_t>(), lost);
  if (credit <= 0) return 0;
  if (!ledger_.post(tx,
                    {.idempotency_key = "handover:" + handover_id,
                     .kind = "sla_credit",
                     .org_id = m->org_id,
                     .rental_id = rental_id,
                     .description = "Credit for " + minutes_text(lost) + " of " + m->description +
                                    " lost to a handover",
                     .at = now,
                     .entries = {{Account::kGrants, -credit}, {Account::kAvailable, credit}}})) {
    return 0;
  }
  m->credited += credit;
  save(tx, *this, m->rental_id, m->state, m->period_start, m->next_day, m->days, m->credited);
  auto split = split_gross(options_.pricing.vat_basis_points, -credit);
  invoices_.add_credit(
      tx, m->org_id, rental_id,
      "Credit: " + minutes_text(lost) + " of " + m->description + " lost to a handover", now,
      {split.net_minor, split.tax_minor, split.gross_minor});
  return credit;
}

bool RentalCharges::running(Tx& tx, const std::string& rental_id) {
  auto m = lock_meter(tx, rental_id);
  return m && m->state == "running";
}

void RentalCharges::settle(Tx& tx, const std::string& rental_id, Ending ending, Timestamp now) {
  auto m = lock_meter(tx, rental_id);
  if (!m || m->state == "settled") return;
  bool ran = m->state == "running";
  if (ran && ending != Ending::kNotDelivered) capture_started(tx, *m, now);
  if (ran && ending == Ending::kInterrupted) {
    int day = day_at(*m->period_start, now);
    auto charged = tx.exec(kChargeOf, rental_id, day);
    if (!charged.empty()) {
      auto lost = std::chrono::duration_cast<std::chrono::seconds>(
          day_start(*m->period_start, day + 1) - now);
      std::int64_t credit = sla_credit_minor(options_.sla, charged[0][0].as<std::int64_t>(), lost);
      if (credit > 0 &&
          ledger_.post(tx,
                       {.idempotency_key = "sla:" + rental_id,
                        .kind = "sla_credit",
                        .org_id = m->org_id,
                        .rental_id = rental_id,
                        .description = "SLA credit for the interruption of " + m->description,
                        .at = now,
                        .entries = {{Account::kGrants, -credit}, {Account::kAvailable, credit}}})) {
        m->credited += credit;
        auto split = split_gross(options_.pricing.vat_basis_points, -credit);
        invoices_.add_credit(tx, m->org_id, rental_id,
                             "SLA credit: interruption of " + m->description, now,
                             {split.net_minor, split.tax_minor, split.gross_minor});
      }
    }
  }
  for (const auto& r : tx.exec(kOpenHolds, rental_id)) {
    long long hold_id = r[0].as<long long>();
    std::int64_t day_gross = r[3].as<std::int64_t>();
    std::int64_t rest = r[4].as<std::int64_t>() - r[5].as<std::int64_t>() - r[6].as<std::int64_t>();
    if (rest > 0) {
      ledger_.post(
          tx,
          {.idempotency_key = "release:" + std::to_string(hold_id),
           .kind = "release",
           .org_id = m->org_id,
           .rental_id = rental_id,
           .description = "Released " +
                          days_text(static_cast<int>(rest / std::max<std::int64_t>(day_gross, 1))) +
                          " not used of " + m->description,
           .at = now,
           .entries = {{Account::kHeld, -rest}, {Account::kAvailable, rest}}});
    }
    tx.exec(kReleaseHold, hold_id, rest, sql_timestamp(now));
  }
  save(tx, *this, rental_id, "settled", m->period_start, m->next_day, m->days, m->credited);
}

}  // namespace gpurent::billing
