// The double-entry ledger (migrations/0015_ledger.sql): postings in integer minor units of
// one currency, each with an idempotency key, each summing to zero (the database checks it at
// commit), never changed once written. An org's balances are the replay of its entries,
// kept by the database beside them; the row that holds them is also the lock a booking
// takes to spend them. Every method runs in the caller's transaction.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "core/money.h"
#include "core/paging.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::billing {

// An org's `available` money and the part `held` for booked days; the platform's `payments`
// received, `revenue` earned and `grants` given (goodwill and SLA credits).
enum class Account { kAvailable, kHeld, kPayments, kRevenue, kGrants };
std::string_view to_string(Account a);

struct Entry {
  Account account = Account::kAvailable;
  std::int64_t amount_minor = 0;  // signed; the org accounts are the posting's org's
};

struct Posting {
  std::string idempotency_key;
  // top_up, credit, refund, hold, release, capture, sla_credit, reversal
  std::string kind;
  std::string org_id;
  std::optional<std::string> rental_id;
  std::string description;
  Timestamp at;
  std::optional<std::string> actor_user_id;
  std::vector<Entry> entries;
};

struct Balances {
  Money available{0, "XXX"};
  Money held{0, "XXX"};
  Money credit_limit{0, "XXX"};
  // What the org has in all: available plus held.
  Money balance() const { return available + held; }
};

// One posting as the org's history shows it.
struct LedgerRow {
  std::string id;  // "txn_<n>"
  Timestamp at;
  std::string kind;
  std::optional<std::string> rental_id;
  std::string description;
  Money amount{0, "XXX"};  // the change of the org's balance (available + held)
  Money available_change{0, "XXX"};
  Money held_change{0, "XXX"};
};

class Ledger {
 public:
  explicit Ledger(std::string currency) : currency_(std::move(currency)) {}

  // Writes the posting; nullopt, writing nothing, when one with its key exists already (a
  // repeat). Throws std::invalid_argument for a posting that cannot balance or is empty.
  std::optional<long long> post(Tx& tx, const Posting& posting);

  // The org's balances as committed (zero for an org that never had money).
  Balances balances(Tx& tx, const std::string& org_id);
  // The same, locking the org's balances until the transaction ends: what a spend checks
  // and then posts against, so concurrent spends of one org queue here.
  Balances lock(Tx& tx, const std::string& org_id);
  // The balances of each of these orgs, in one statement (an org that never had money is
  // zero, as above).
  std::map<std::string, Balances> balances_of(Tx& tx, const std::vector<std::string>& org_ids);

  void set_credit_limit(Tx& tx, const std::string& org_id, std::int64_t credit_limit_minor);

  // The org's postings, newest first.
  Page<LedgerRow> history(Tx& tx, const std::string& org_id, int limit,
                          const std::optional<std::string>& cursor);

  const std::string& currency() const { return currency_; }
  Money money(std::int64_t minor) const { return Money(minor, currency_); }

  // Told, in the posting's transaction, of every posting written that moved an org's
  // available balance (webhooks watch for it falling below a threshold). Each call adds a
  // hook; set by the process wiring before serving.
  using PostedHook = std::function<void(Tx&, const std::string& org_id)>;
  void on_available_changed(PostedHook hook) { on_available_changed_.push_back(std::move(hook)); }
  // Runs those hooks for a posting written elsewhere in Ledger::post's shape (a booking's
  // hold, written with the hold row in one statement: billing/rental_charges.cpp).
  void available_changed(Tx& tx, const std::string& org_id) {
    for (const auto& hook : on_available_changed_) hook(tx, org_id);
  }

 private:
  std::string currency_;
  std::vector<PostedHook> on_available_changed_;
};

// "txn_<n>" for a posting's id.
std::string transaction_id_text(long long id);
bool is_transaction_id(std::string_view text);

}  // namespace gpurent::billing
