// The ledger against a real PostgreSQL: the database itself refuses a transaction that does
// not balance and any change to posted rows; a repeated key posts nothing; balances are the
// replay of the entries; the history pages newest first.
#include "billing/tests/billing_fixture.h"

#include <gtest/gtest.h>

namespace gpurent::billing {
namespace ledger_pgtest {

class LedgerTest : public BillingTest {};

TEST_F(LedgerTest, TheDatabaseRefusesATransactionThatDoesNotBalance) {
  std::string acme = org();
  auto commit = [&](const std::string& entries) {
    pqxx::connection c(db_.url());
    pqxx::work tx(c);
    auto id = tx.exec(
                    "INSERT INTO ledger_transactions (idempotency_key, kind, org_id,"
                    " description, currency, at) VALUES ('k-' || gen_random_uuid(), 'credit', '" +
                    acme + "', 'by hand', 'RUB', now()) RETURNING id")[0][0]
                  .as<std::string>();
    if (!entries.empty()) {
      std::string sql =
          "INSERT INTO ledger_entries (transaction_id, account, org_id, amount_minor)"
          " VALUES " +
          entries;
      for (std::size_t at; (at = sql.find("$T")) != std::string::npos;) sql.replace(at, 2, id);
      for (std::size_t at; (at = sql.find("$O")) != std::string::npos;) {
        sql.replace(at, 2, "'" + acme + "'");
      }
      tx.exec(sql);
    }
    tx.commit();
  };
  EXPECT_ANY_THROW(commit("($T, 'available', $O, 100), ($T, 'grants', NULL, -99)"));
  EXPECT_ANY_THROW(commit("($T, 'available', $O, 100)"));  // one entry
  EXPECT_ANY_THROW(commit(""));                            // none
  commit("($T, 'available', $O, 100), ($T, 'grants', NULL, -100)");
  // An entry added later to a balanced transaction unbalances it: refused too.
  long long first = count("SELECT min(id) FROM ledger_transactions");
  EXPECT_ANY_THROW(
      exec("INSERT INTO ledger_entries (transaction_id, account, org_id, amount_minor)"
           " VALUES (" +
           std::to_string(first) + ", 'grants', NULL, -5)"));
  EXPECT_EQ(count("SELECT count(*) FROM ledger_transactions"), 1);
  EXPECT_EQ(balances(acme).available.amount_minor(), 100);
  // An org account without its org, or a platform account with one, is refused as well.
  EXPECT_ANY_THROW(commit("($T, 'available', NULL, 100), ($T, 'grants', NULL, -100)"));
  EXPECT_ANY_THROW(commit("($T, 'available', $O, 100), ($T, 'grants', $O, -100)"));
  expect_ledger_sound();
}

TEST_F(LedgerTest, PostedRowsAreNeverChangedOrDeleted) {
  std::string acme = org();
  top_up(acme, 5'000);
  for (const char* sql :
       {"UPDATE ledger_entries SET amount_minor = amount_minor * 2", "DELETE FROM ledger_entries",
        "UPDATE ledger_transactions SET description = 'changed'", "DELETE FROM ledger_transactions",
        "TRUNCATE ledger_entries", "TRUNCATE ledger_transactions CASCADE"}) {
    SCOPED_TRACE(sql);
    EXPECT_ANY_THROW(exec(sql));
  }
  EXPECT_EQ(count("SELECT sum(amount_minor) FROM ledger_entries WHERE account = 'available'"),
            5'000);
  EXPECT_EQ(balances(acme).available.amount_minor(), 5'000);
}

TEST_F(LedgerTest, ARepeatedKeyPostsNothingAndBadPostingsAreRefusedBeforeTheDatabase) {
  std::string acme = org();
  Posting p{.idempotency_key = "payment:pay_1",
            .kind = "top_up",
            .org_id = acme,
            .description = "Payment pay_1",
            .at = clock_.now(),
            .entries = {{Account::kPayments, -700}, {Account::kAvailable, 700}}};
  auto first = transact([&](Tx& tx) { return ledger_.post(tx, p); });
  auto again = transact([&](Tx& tx) { return ledger_.post(tx, p); });
  EXPECT_TRUE(first);
  EXPECT_FALSE(again);
  EXPECT_EQ(balances(acme).available.amount_minor(), 700);
  Posting unbalanced = p;
  unbalanced.idempotency_key = "other";
  unbalanced.entries = {{Account::kPayments, -700}, {Account::kAvailable, 600}};
  EXPECT_THROW(transact([&](Tx& tx) { return ledger_.post(tx, unbalanced); }),
               std::invalid_argument);
  unbalanced.entries = {{Account::kAvailable, 0}, {Account::kPayments, 0}};
  EXPECT_THROW(transact([&](Tx& tx) { return ledger_.post(tx, unbalanced); }),
               std::invalid_argument);
  expect_ledger_sound();
}

TEST_F(LedgerTest, BalancesAreTheReplayOfTheEntriesAndTheHistoryPagesNewestFirst) {
  std::string acme = org();
  std::string other = org("Other");
  for (int i = 1; i <= 7; ++i) top_up(acme, i * 100);
  top_up(other, 1);
  transact([&](Tx& tx) {
    return ledger_.post(tx, {.idempotency_key = "hold:x",
                             .kind = "hold",
                             .org_id = acme,
                             .description = "Held",
                             .at = clock_.now(),
                             .entries = {{Account::kAvailable, -250}, {Account::kHeld, 250}}});
  });
  auto b = balances(acme);
  EXPECT_EQ(b.available.amount_minor(), 2'800 - 250);
  EXPECT_EQ(b.held.amount_minor(), 250);
  EXPECT_EQ(b.balance().amount_minor(), 2'800);
  EXPECT_EQ(b.available.currency(), "RUB");
  EXPECT_EQ(balances(new_id(id_prefix::kOrg)).balance().amount_minor(), 0);

  std::vector<LedgerRow> all;
  std::optional<std::string> cursor;
  for (int pages = 0; pages < 10; ++pages) {
    auto page = read([&](Tx& tx) { return ledger_.history(tx, acme, 3, cursor); });
    for (auto& r : page.items) all.push_back(r);
    if (!page.next_cursor) break;
    cursor = page.next_cursor;
  }
  ASSERT_EQ(all.size(), 8u);  // another org's posting is not in it
  EXPECT_EQ(all[0].kind, "hold");
  EXPECT_EQ(all[0].amount.amount_minor(), 0);  // money moved within the org
  EXPECT_EQ(all[0].available_change.amount_minor(), -250);
  EXPECT_EQ(all[0].held_change.amount_minor(), 250);
  EXPECT_EQ(all[1].amount.amount_minor(), 700);
  EXPECT_EQ(all[7].amount.amount_minor(), 100);
  for (std::size_t i = 1; i < all.size(); ++i) EXPECT_NE(all[i].id, all[i - 1].id);
  EXPECT_THROW(read([&](Tx& tx) { return ledger_.history(tx, acme, 3, std::string("x.y")); }),
               Error);
  expect_ledger_sound(/*postings_only=*/true);
}

}  // namespace ledger_pgtest
}  // namespace gpurent::billing
