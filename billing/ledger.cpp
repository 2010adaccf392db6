// The ledger's statements: one round trip per posting (the transaction row and its entries
// in one statement), balances from the row the database keeps.
#include "billing/ledger.h"

#include "core/pg_array.h"
#include "core/sql.h"

#include <charconv>
#include <stdexcept>

namespace gpurent::billing {
namespace {

// The transaction row unless its key exists, then its entries; nothing when it did.
constexpr Statement kPost = {
    "ledger_post",
    "WITH t AS (INSERT INTO ledger_transactions (idempotency_key, kind, org_id, rental_id,"
    " description, currency, at, actor_user_id)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7::timestamptz, $8)"
    " ON CONFLICT (idempotency_key) DO NOTHING RETURNING id),"
    " e AS (INSERT INTO ledger_entries (transaction_id, account, org_id, amount_minor)"
    " SELECT t.id, x.account, CASE WHEN x.account IN ('available', 'held') THEN $3 END,"
    " x.amount FROM t, unnest($9::text[], $10::bigint[]) AS x (account, amount))"
    " SELECT id FROM t"};

constexpr Statement kBalances = {
    "ledger_balances",
    "SELECT available_minor, held_minor, credit_limit_minor FROM billing_accounts"
    " WHERE org_id = $1"};

constexpr Statement kBalancesOf = {
    "ledger_balances_of",
    "SELECT org_id, available_minor, held_minor, credit_limit_minor FROM billing_accounts"
    " WHERE org_id = ANY($1::text[])"};

// The row is made first when missing, so there is always one to lock.
constexpr Statement kEnsureAccount = {
    "ledger_ensure_account",
    "INSERT INTO billing_accounts (org_id) VALUES ($1) ON CONFLICT (org_id) DO NOTHING"};
constexpr Statement kLock = {
    "ledger_lock",
    "SELECT available_minor, held_minor, credit_limit_minor FROM billing_accounts"
    " WHERE org_id = $1 FOR UPDATE"};

constexpr Statement kSetCreditLimit = {
    "ledger_set_credit_limit",
    "INSERT INTO billing_accounts (org_id, credit_limit_minor) VALUES ($1, $2)"
    " ON CONFLICT (org_id) DO UPDATE SET credit_limit_minor = EXCLUDED.credit_limit_minor,"
    " updated_at = now()"};

constexpr Statement kHistory = {
    "ledger_history",
    "SELECT t.id, " SQL_MICROS("t.at") ", t.kind, t.rental_id, t.description,"
    " coalesce(sum(e.amount_minor) FILTER (WHERE e.account = 'available'), 0),"
    " coalesce(sum(e.amount_minor) FILTER (WHERE e.account = 'held'), 0)"
    " FROM ledger_transactions t JOIN ledger_entries e ON e.transaction_id = t.id"
    " WHERE t.org_id = $1 AND t.id < $2"
    " GROUP BY t.id ORDER BY t.id DESC LIMIT $3"};

bool is_org_account(Account a) {
  return a == Account::kAvailable || a == Account::kHeld;
}

bool transaction_id_valid(std::string_view text) {
  return is_transaction_id(text);
}

long long transaction_number(std::string_view text) {
  long long n = 0;
  std::from_chars(text.data() + 4, text.data() + text.size(), n);
  return n;
}

}  // namespace

std::string_view to_string(Account a) {
  switch (a) {
    case Account::kAvailable:
      return "available";
    case Account::kHeld:
      return "held";
    case Account::kPayments:
      return "payments";
    case Account::kRevenue:
      return "revenue";
    case Account::kGrants:
      return "grants";
  }
  return "available";
}

std::string transaction_id_text(long long id) {
  return "txn_" + std::to_string(id);
}

bool is_transaction_id(std::string_view text) {
  if (text.size() < 5 || text.size() > 24 || text.substr(0, 4) != "txn_") return false;
  for (char c : text.substr(4)) {
    if (c < '0' || c > '9') return false;
  }
  return text[4] != '0';
}

std::optional<long long> Ledger::post(Tx& tx, const Posting& p) {
  if (p.entries.size() < 2) throw std::invalid_argument("a posting needs two entries or more");
  std::int64_t sum = 0;
  std::vector<std::string> accounts;
  std::vector<std::int64_t> amounts;
  for (const auto& e : p.entries) {
    if (e.amount_minor == 0) throw std::invalid_argument("a ledger entry moves some money");
    if (__builtin_add_overflow(sum, e.amount_minor, &sum)) {
      throw std::overflow_error("ledger posting overflows");
    }
    accounts.emplace_back(to_string(e.account));
    amounts.push_back(e.amount_minor);
    if (is_org_account(e.account) && p.org_id.empty()) {
      throw std::invalid_argument("an org account needs the posting's org");
    }
  }
  if (sum != 0) throw std::invalid_argument("a posting must sum to zero");
  auto rows = tx.exec(kPost, p.idempotency_key, p.kind, p.org_id, p.rental_id, p.description,
                      currency_, sql_timestamp(p.at), p.actor_user_id, pg_array_literal(accounts),
                      pg_array_literal(amounts));
  if (rows.empty()) return std::nullopt;
  if (!on_available_changed_.empty()) {
    bool moved_available = false;
    for (const auto& e : p.entries) moved_available |= e.account == Account::kAvailable;
    if (moved_available) {
      for (const auto& hook : on_available_changed_) hook(tx, p.org_id);
    }
  }
  return rows[0][0].as<long long>();
}

Balances Ledger::balances(Tx& tx, const std::string& org_id) {
  Balances b{money(0), money(0), money(0)};
  auto rows = tx.exec(kBalances, org_id);
  if (!rows.empty()) {
    b = {money(rows[0][0].as<std::int64_t>()), money(rows[0][1].as<std::int64_t>()),
         money(rows[0][2].as<std::int64_t>())};
  }
  return b;
}

std::map<std::string, Balances> Ledger::balances_of(Tx& tx,
                                                    const std::vector<std::string>& org_ids) {
  std::map<std::string, Balances> out;
  for (const auto& id : org_ids) out[id] = Balances{money(0), money(0), money(0)};
  if (org_ids.empty()) return out;
  for (const auto& row : tx.exec(kBalancesOf, pg_array_literal(org_ids))) {
    out[row[0].as<std::string>()] = {money(row[1].as<std::int64_t>()),
                                     money(row[2].as<std::int64_t>()),
                                     money(row[3].as<std::int64_t>())};
  }
  return out;
}

Balances Ledger::lock(Tx& tx, const std::string& org_id) {
  tx.exec(kEnsureAccount, org_id);
  auto rows = tx.exec(kLock, org_id);
  return {money(rows[0][0].as<std::int64_t>()), money(rows[0][1].as<std::int64_t>()),
          money(rows[0][2].as<std::int64_t>())};
}

void Ledger::set_credit_limit(Tx& tx, const std::string& org_id, std::int64_t credit_limit_minor) {
  tx.exec(kSetCreditLimit, org_id, credit_limit_minor);
}

Page<LedgerRow> Ledger::history(Tx& tx, const std::string& org_id, int limit,
                                const std::optional<std::string>& cursor) {
  long long before = std::numeric_limits<long long>::max();
  if (cursor) before = transaction_number(decode_cursor(*cursor, &transaction_id_valid).id);
  auto rows = tx.exec(kHistory, org_id, before, limit + 1);
  return page_of<LedgerRow>(
      rows, limit,
      [&](const pqxx::row& row) {
        auto available = row[5].as<std::int64_t>();
        auto held = row[6].as<std::int64_t>();
        return LedgerRow{.id = transaction_id_text(row[0].as<long long>()),
                         .at = read_timestamp(row[1]),
                         .kind = row[2].as<std::string>(),
                         .rental_id = optional_field<std::string>(row[3]),
                         .description = row[4].as<std::string>(),
                         .amount = money(available + held),
                         .available_change = money(available),
                         .held_change = money(held)};
      },
      [](const LedgerRow& r) {
        return Keyset{r.at, r.id};
      });
}

}  // namespace gpurent::billing
