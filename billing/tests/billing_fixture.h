// The starting point of billing's PostgreSQL tests: a fresh migrated database, orgs inserted
// directly (billing needs only their rows), the test clock, and billing's stores wired as the
// server wires them; plus the invariants every test may check after any step.
#pragma once

#include "billing/admin_money.h"
#include "billing/invoice_store.h"
#include "billing/ledger.h"
#include "billing/rental_charges.h"
#include "billing/top_ups.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/error.h"
#include "core/id.h"
#include "identity/org_admin_store.h"
#include "tests/support/error_code.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <memory>
#include <string>
#include <utility>

namespace gpurent::billing {

class BillingTest : public ::testing::Test {
 protected:
  static RentalChargesOptions default_options() {
    RentalChargesOptions o;
    o.pricing = {
        .discounts = {{7, 5}, {30, 10}}, .vat_basis_points = 2000, .prices_include_tax = true};
    o.sla = SlaPolicy::kLostHours;
    return o;
  }

  explicit BillingTest(RentalChargesOptions options = default_options())
      : charges_(clock_, ledger_, invoices_, std::move(options)) {}

  template <typename Fn>
  auto transact(Fn&& fn) {
    return pool_.transact("billing_test", std::forward<Fn>(fn));
  }
  template <typename Fn>
  auto read(Fn&& fn) {
    return pool_.read("billing_test_read", std::forward<Fn>(fn));
  }

  std::string org(const std::string& name = "Acme") {
    std::string id = new_id(id_prefix::kOrg);
    exec("INSERT INTO orgs (id, name) VALUES ('" + id + "', '" + name + "')");
    return id;
  }

  void top_up(const std::string& org_id, std::int64_t minor) {
    transact([&](Tx& tx) {
      return top_ups_.credit(tx, org_id, Money(minor, "RUB"), CreditKind::kTopUp, "test",
                             std::nullopt);
    });
  }

  Balances balances(const std::string& org_id) {
    return read([&](Tx& tx) { return ledger_.balances(tx, org_id); });
  }

  template <typename Fn>
  static std::string code_of(Fn&& fn) {
    return testing::error_code_of(std::forward<Fn>(fn));
  }

  // The first column of the first row of `sql` (0 for NULL), over a connection of the test's
  // own, outside the pool.
  long long count(const std::string& sql) {
    if (!checker_) checker_ = std::make_unique<pqxx::connection>(db_.url());
    pqxx::nontransaction tx(*checker_);
    auto r = tx.exec(sql);
    return r[0][0].is_null() ? 0 : r[0][0].as<long long>();
  }
  void exec(const std::string& sql) {
    pqxx::connection c(db_.url());
    pqxx::work tx(c);
    tx.exec(sql);
    tx.commit();
  }

  // What must hold after any step, whatever happened before: every ledger transaction sums
  // to zero with two entries or more; each org's kept balances are the replay of its entries;
  // no held balance is negative; no rental-day is charged twice; a resolved hold is exactly
  // captured plus released; invoice totals are the sum of their lines.
  // `postings_only`: postings made by hand, with no holds behind them, check the ledger alone.
  void expect_ledger_sound(bool postings_only = false) {
    EXPECT_EQ(count("SELECT count(*) FROM (SELECT transaction_id FROM ledger_entries"
                    " GROUP BY transaction_id HAVING sum(amount_minor) <> 0 OR count(*) < 2) x"),
              0)
        << "a transaction that does not balance";
    EXPECT_EQ(count("SELECT count(*) FROM ledger_transactions t WHERE NOT EXISTS"
                    " (SELECT 1 FROM ledger_entries e WHERE e.transaction_id = t.id)"),
              0);
    EXPECT_EQ(count("SELECT count(*) FROM billing_accounts a WHERE"
                    " a.available_minor <> coalesce((SELECT sum(amount_minor) FROM ledger_entries e"
                    "   WHERE e.org_id = a.org_id AND e.account = 'available'), 0)"
                    " OR a.held_minor <> coalesce((SELECT sum(amount_minor) FROM ledger_entries e"
                    "   WHERE e.org_id = a.org_id AND e.account = 'held'), 0)"),
              0)
        << "a balance that is not the replay of its entries";
    EXPECT_EQ(count("SELECT count(*) FROM billing_accounts WHERE held_minor < 0"), 0);
    if (postings_only) return;
    EXPECT_EQ(count("SELECT count(*) FROM (SELECT rental_id, idempotency_key FROM"
                    " ledger_transactions WHERE kind = 'capture' GROUP BY 1, 2"
                    " HAVING count(*) > 1) x"),
              0);
    // Each capture posting is exactly one charged day, and the other way round.
    EXPECT_EQ(count("SELECT count(*) FROM ledger_transactions WHERE kind = 'capture'"),
              count("SELECT count(*) FROM billing_charges WHERE amount_minor > 0"));
    EXPECT_EQ(count("SELECT count(*) FROM billing_holds WHERE resolved_at IS NOT NULL AND"
                    " captured_minor + released_minor <> amount_minor"),
              0);
    // Holds, captures and releases agree with the ledger: what is held is what the open
    // holds still hold.
    EXPECT_EQ(count("SELECT count(*) FROM billing_accounts a WHERE a.held_minor <> coalesce(("
                    "SELECT sum(amount_minor - captured_minor - released_minor) FROM"
                    " billing_holds h WHERE h.org_id = a.org_id), 0)"),
              0)
        << "held money that no hold accounts for";
    EXPECT_EQ(count("SELECT count(*) FROM billing_holds h WHERE captured_minor <> coalesce(("
                    "SELECT sum(amount_minor) FROM billing_charges c WHERE c.hold_id = h.id), 0)"),
              0);
    EXPECT_EQ(count("SELECT count(*) FROM invoices i WHERE total_minor <> coalesce(("
                    "SELECT sum(amount_minor) FROM invoice_lines l WHERE l.invoice_id = i.id), 0)"
                    " OR tax_minor <> coalesce((SELECT sum(tax_minor) FROM invoice_lines l"
                    "   WHERE l.invoice_id = i.id), 0)"
                    " OR subtotal_minor + tax_minor <> total_minor"),
              0)
        << "an invoice whose totals are not the sum of its lines";
    // The revenue of each org's rentals is on its invoices, less the credits given.
    EXPECT_EQ(count("SELECT coalesce(sum(amount_minor), 0) FROM billing_charges"),
              count("SELECT coalesce(sum(amount_minor), 0) FROM invoice_lines"
                    " WHERE kind = 'rental_days'"));
    EXPECT_EQ(count("SELECT coalesce(sum(amount_minor), 0) FROM ledger_entries e JOIN"
                    " ledger_transactions t ON t.id = e.transaction_id WHERE t.kind = 'sla_credit'"
                    " AND e.account = 'available'"),
              -count("SELECT coalesce(sum(amount_minor), 0) FROM invoice_lines"
                     " WHERE kind = 'sla_credit'"));
  }

  testing::TestDatabase db_;
  PgPool pool_{{.url = db_.url(), .size = 4}};
  TestClock clock_;
  Ledger ledger_{"RUB"};
  InvoiceStore invoices_{clock_, "RUB", 2000, "UTC"};
  RentalCharges charges_;
  TopUps top_ups_{clock_, ledger_};
  // Identity's own store answers what billing asks of an org, as in the server.
  identity::OrgAdminStore orgs_{clock_};
  AdminMoney money_{pool_, clock_, ledger_, top_ups_, invoices_, orgs_};
  std::unique_ptr<pqxx::connection> checker_;
};

}  // namespace gpurent::billing
