// InvoiceStore against a real PostgreSQL: charged days gather on one line per rental and
// price, months follow the store's time zone, credits are lines of their own, totals are the
// sums of the lines, concurrent charges all land, finalisation numbers are gap-free per year
// however many finalisers run, issued invoices cannot be edited even by hand, tenants see
// only their own, lists page; and the CSV export's amounts, quoting and formula guard.
#include "billing/invoice_store.h"

#include "core/db_errors.h"
#include "core/error.h"
#include "core/id.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <chrono>
#include <latch>
#include <limits>
#include <set>
#include <thread>
#include <vector>

namespace gpurent::billing {
namespace invoice_store_pgtest {

// A time in UTC.
Timestamp utc(int y, unsigned m, unsigned d, int hour = 12, int minute = 0) {
  std::chrono::sys_days day{std::chrono::year{y} / std::chrono::month{m} / std::chrono::day{d}};
  return std::chrono::time_point_cast<Timestamp::duration>(day + std::chrono::hours(hour) +
                                                           std::chrono::minutes(minute));
}

// A day's price with 20% VAT on the net.
UnitAmounts price(std::int64_t net) {
  return {net, net / 5, net + net / 5};
}

class InvoiceStoreTest : public ::testing::Test {
 protected:
  template <typename Fn>
  auto transact(Fn&& fn) {
    return pool_.transact("invoice_test", std::forward<Fn>(fn));
  }
  template <typename Fn>
  auto read(Fn&& fn) {
    return pool_.read("invoice_test_read", std::forward<Fn>(fn));
  }

  std::string create_org() {
    static constexpr Statement kInsertOrg = {"invoice_test_insert_org",
                                             "INSERT INTO orgs (id, name) VALUES ($1, 'Org')"};
    std::string id = new_id(id_prefix::kOrg);
    transact([&](Tx& tx) { tx.exec(kInsertOrg, id); });
    return id;
  }

  void add_day(const std::string& org, const std::string& rental, Timestamp at,
               const UnitAmounts& unit, const std::string& description = "1x L4-24GB") {
    transact([&](Tx& tx) { store_.add_rental_day(tx, org, rental, description, at, unit); });
  }

  void add_credit(const std::string& org, const std::string& rental, Timestamp at,
                  const UnitAmounts& credit) {
    transact([&](Tx& tx) { store_.add_credit(tx, org, rental, "SLA credit", at, credit); });
  }

  Page<InvoiceRecord> list(const std::string& org, int limit = 500,
                           const std::optional<std::string>& cursor = std::nullopt) {
    return read([&](Tx& tx) { return store_.list(tx, org, limit, cursor); });
  }

  std::optional<InvoiceRecord> get(const std::string& org, const std::string& id) {
    return read([&](Tx& tx) { return store_.get(tx, org, id); });
  }

  // The org's invoice for the month starting on `period_start`, with its lines.
  InvoiceRecord invoice(const std::string& org, const std::string& period_start) {
    for (const auto& i : list(org).items) {
      if (i.period_start == period_start) return *get(org, i.id);
    }
    ADD_FAILURE() << "no invoice of " << org << " for " << period_start;
    return {};
  }

  int finalise(Timestamp now, int batch = 500) { return store_.finalise_due(pool_, now, batch); }

  // The first column of the first row of `sql`, read over a connection of its own.
  long long count(const std::string& sql) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx.exec(sql)[0][0].as<long long>();
  }

  // The constraint that refused `sql`, or "" when it ran.
  std::string refusal(const std::string& sql) {
    try {
      transact([&](Tx& tx) { tx.exec_fixed(sql); });
      return "";
    } catch (const ConstraintViolation& e) {
      return e.constraint();
    }
  }

  // Every invoice's totals add up and are the sums of its lines.
  void expect_totals_are_lines() {
    EXPECT_EQ(
        count("SELECT count(*) FROM invoices WHERE subtotal_minor + tax_minor <> total_minor"), 0);
    EXPECT_EQ(count("SELECT count(*) FROM invoices i WHERE (i.subtotal_minor, i.tax_minor,"
                    " i.total_minor) <> (SELECT coalesce(sum(amount_net_minor), 0),"
                    " coalesce(sum(tax_minor), 0), coalesce(sum(amount_minor), 0)"
                    " FROM invoice_lines l WHERE l.invoice_id = i.id)"),
              0);
  }

  testing::TestDatabase db_;
  PgPool pool_{{.url = db_.url(), .size = 8}};
  TestClock clock_;
  // UTC+3 all year, so a month there starts at 21:00 UTC the day before.
  InvoiceStore store_{clock_, "RUB", 2000, "Europe/Moscow"};
};

TEST_F(InvoiceStoreTest, DaysGatherOnOneLinePerRentalAndUnitPrice) {
  auto org = create_org();
  auto a = new_id(id_prefix::kRental), b = new_id(id_prefix::kRental);
  for (unsigned d = 1; d <= 3; ++d) add_day(org, a, utc(2026, 3, d), price(10'000));
  add_day(org, a, utc(2026, 3, 4), price(15'000));  // extended at a new price
  add_day(org, b, utc(2026, 3, 4), price(10'000));
  add_day(org, a, utc(2026, 3, 5), price(15'000));

  auto inv = invoice(org, "2026-03-01");
  EXPECT_EQ(inv.status, "draft");
  EXPECT_FALSE(inv.number);
  EXPECT_FALSE(inv.issued_at);
  EXPECT_EQ(inv.period_end, "2026-04-01");
  EXPECT_EQ(inv.currency, "RUB");
  EXPECT_EQ(inv.vat_basis_points, 2000);
  ASSERT_EQ(inv.lines.size(), 3u);
  const auto& first = inv.lines[0];
  EXPECT_EQ(first.kind, "rental_days");
  EXPECT_EQ(first.rental_id, a);
  EXPECT_EQ(first.description, "1x L4-24GB");
  EXPECT_EQ(first.days, 3);
  EXPECT_EQ(first.unit.net_minor, 10'000);
  EXPECT_EQ(first.unit.tax_minor, 2'000);
  EXPECT_EQ(first.unit.gross_minor, 12'000);
  EXPECT_EQ(first.amount_net_minor, 30'000);
  EXPECT_EQ(first.tax_minor, 6'000);
  EXPECT_EQ(first.amount_minor, 36'000);
  EXPECT_EQ(inv.lines[1].rental_id, a);
  EXPECT_EQ(inv.lines[1].days, 2);
  EXPECT_EQ(inv.lines[1].amount_minor, 36'000);
  EXPECT_EQ(inv.lines[2].rental_id, b);
  EXPECT_EQ(inv.lines[2].days, 1);
  EXPECT_EQ(inv.subtotal_minor, 30'000 + 30'000 + 10'000);
  EXPECT_EQ(inv.tax_minor, 6'000 + 6'000 + 2'000);
  EXPECT_EQ(inv.total_minor, 36'000 + 36'000 + 12'000);
  EXPECT_EQ(count("SELECT count(*) FROM invoices"), 1);
  expect_totals_are_lines();
}

// The invoice's tax is the sum of the lines' per-unit tax, not the rate applied again to the
// subtotal: with a price whose tax was rounded, the two differ, and the lines win.
TEST_F(InvoiceStoreTest, TaxIsTheSumOfTheLinesTax) {
  auto org = create_org();
  const UnitAmounts odd{8'333, 1'667, 10'000};  // 10,000 gross at 20%: 8,333.33 net, rounded
  for (unsigned d = 1; d <= 3; ++d) add_day(org, "rnt_x", utc(2026, 3, d), odd);
  auto inv = invoice(org, "2026-03-01");
  EXPECT_EQ(inv.subtotal_minor, 24'999);
  EXPECT_EQ(inv.tax_minor, 5'001);  // 20% of 24,999 would be 5,000
  EXPECT_EQ(inv.total_minor, 30'000);
}

TEST_F(InvoiceStoreTest, MonthsFollowTheStoresTimeZone) {
  auto org = create_org();
  // 23:30 UTC on 31 March is 02:30 on 1 April in Moscow: April's invoice.
  add_day(org, "rnt_a", utc(2026, 3, 31, 23, 30), price(10'000));
  // 20:59 UTC is still 23:59 on 31 March there.
  add_day(org, "rnt_a", utc(2026, 3, 31, 20, 59), price(10'000));
  auto april = invoice(org, "2026-04-01");
  EXPECT_EQ(april.period_end, "2026-05-01");
  ASSERT_EQ(april.lines.size(), 1u);
  EXPECT_EQ(april.lines[0].days, 1);
  auto march = invoice(org, "2026-03-01");
  ASSERT_EQ(march.lines.size(), 1u);
  EXPECT_EQ(march.lines[0].days, 1);

  // A store on UTC puts the same moment in March.
  InvoiceStore utc_store(clock_, "RUB", 2000);
  auto other = create_org();
  transact([&](Tx& tx) {
    utc_store.add_rental_day(tx, other, "rnt_b", "1x L4-24GB", utc(2026, 3, 31, 23, 30),
                             price(10'000));
  });
  auto listed = list(other).items;
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].period_start, "2026-03-01");
  EXPECT_EQ(listed[0].period_end, "2026-04-01");
}

TEST_F(InvoiceStoreTest, CreditsAreLinesOfTheirOwnAndLowerTheTotals) {
  auto org = create_org();
  add_day(org, "rnt_a", utc(2026, 3, 1), price(10'000));
  add_day(org, "rnt_a", utc(2026, 3, 2), price(10'000));
  add_credit(org, "rnt_a", utc(2026, 3, 2), {-5'000, -1'000, -6'000});
  add_credit(org, "rnt_a", utc(2026, 3, 3), {-5'000, -1'000, -6'000});
  auto inv = invoice(org, "2026-03-01");
  ASSERT_EQ(inv.lines.size(), 3u);
  for (int i : {1, 2}) {
    const auto& credit = inv.lines[static_cast<std::size_t>(i)];
    EXPECT_EQ(credit.kind, "sla_credit");
    EXPECT_EQ(credit.description, "SLA credit");
    EXPECT_EQ(credit.days, 0);
    EXPECT_EQ(credit.amount_net_minor, -5'000);
    EXPECT_EQ(credit.tax_minor, -1'000);
    EXPECT_EQ(credit.amount_minor, -6'000);
    EXPECT_EQ(credit.unit.gross_minor, -6'000);
  }
  EXPECT_EQ(inv.subtotal_minor, 10'000);
  EXPECT_EQ(inv.tax_minor, 2'000);
  EXPECT_EQ(inv.total_minor, 12'000);
  expect_totals_are_lines();

  // A credit that is not negative, or whose parts do not add up, is refused before writing.
  EXPECT_THROW(add_credit(org, "rnt_a", utc(2026, 3, 3), {5'000, 1'000, 6'000}),
               std::invalid_argument);
  EXPECT_THROW(add_credit(org, "rnt_a", utc(2026, 3, 3), {-5'000, -1'000, -5'000}),
               std::invalid_argument);
  EXPECT_THROW(add_day(org, "rnt_a", utc(2026, 3, 3), {10'000, 2'000, 12'001}),
               std::invalid_argument);
  EXPECT_THROW(add_day(org, "rnt_a", utc(2026, 3, 3), {-10'000, 2'000, -8'000}),
               std::invalid_argument);
  EXPECT_THROW(add_day(org, "rnt_a", utc(2026, 3, 3), price(1), ""), std::invalid_argument);
  EXPECT_EQ(count("SELECT count(*) FROM invoice_lines"), 3);
}

// Charges of different rentals of one org, each in its own transaction, from two threads at
// once, month after month: both race to create each month's draft and to move its totals,
// and every day lands.
TEST_F(InvoiceStoreTest, ConcurrentChargesOfOneOrgAllLand) {
  auto org = create_org();
  constexpr unsigned kMonths = 6;
  constexpr unsigned kDays = 10;
  std::latch go(2);
  std::string failed[2];
  auto charge = [&](int i, const std::string& rental) {
    go.arrive_and_wait();
    try {
      for (unsigned m = 1; m <= kMonths; ++m) {
        for (unsigned d = 1; d <= kDays; ++d) add_day(org, rental, utc(2026, m, d), price(10'000));
      }
    } catch (const std::exception& e) {
      failed[i] = e.what();
    }
  };
  std::thread a(charge, 0, "rnt_a"), b(charge, 1, "rnt_b");
  a.join();
  b.join();
  EXPECT_EQ(failed[0], "");
  EXPECT_EQ(failed[1], "");
  auto invoices = list(org).items;
  ASSERT_EQ(invoices.size(), kMonths);
  for (const auto& inv : invoices) {
    SCOPED_TRACE(inv.period_start);
    ASSERT_EQ(inv.lines.size(), 2u);
    EXPECT_EQ(inv.lines[0].days, static_cast<int>(kDays));
    EXPECT_EQ(inv.lines[1].days, static_cast<int>(kDays));
    EXPECT_EQ(inv.total_minor, static_cast<std::int64_t>(2 * kDays * 12'000));
  }
  expect_totals_are_lines();
}

// The same race made certain: the first charge of the month is still uncommitted (its draft
// not yet visible) when the second starts; the second waits for it and adds to its draft.
TEST_F(InvoiceStoreTest, ASecondChargeWaitsForTheFirstsNewDraft) {
  auto org = create_org();
  std::latch first_added(1);
  std::thread first([&] {
    transact([&](Tx& tx) {
      store_.add_rental_day(tx, org, "rnt_a", "1x L4-24GB", utc(2026, 3, 5), price(10'000));
      first_added.count_down();
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    });
  });
  first_added.wait();
  add_day(org, "rnt_b", utc(2026, 3, 6), price(20'000));
  first.join();
  auto invoices = list(org).items;
  ASSERT_EQ(invoices.size(), 1u);
  EXPECT_EQ(invoices[0].period_start, "2026-03-01");
  ASSERT_EQ(invoices[0].lines.size(), 2u);
  EXPECT_EQ(invoices[0].total_minor, 12'000 + 24'000);
  expect_totals_are_lines();
}

TEST_F(InvoiceStoreTest, FinalisingNumbersEachYearWithoutGapsAcrossOrgs) {
  std::vector<std::string> orgs;
  for (int i = 0; i < 3; ++i) orgs.push_back(create_org());
  for (const auto& org : orgs) {
    add_day(org, "rnt_a", utc(2025, 11, 10), price(10'000));
    add_day(org, "rnt_a", utc(2025, 12, 10), price(10'000));
    add_day(org, "rnt_a", utc(2026, 1, 10), price(10'000));
    add_day(org, "rnt_a", utc(2026, 2, 10), price(10'000));
    add_day(org, "rnt_a", utc(2026, 3, 10), price(10'000));  // the current month
  }
  const Timestamp now = utc(2026, 3, 15);
  EXPECT_EQ(finalise(now, 2), 12);  // in batches of two
  EXPECT_EQ(finalise(now, 2), 0);

  std::set<std::string> numbers;
  for (const auto& org : orgs) {
    for (const auto& inv : list(org).items) {
      SCOPED_TRACE(inv.period_start);
      if (inv.period_start == "2026-03-01") {
        EXPECT_EQ(inv.status, "draft");
        EXPECT_FALSE(inv.number);
        continue;
      }
      EXPECT_EQ(inv.status, "issued");
      ASSERT_TRUE(inv.number);
      EXPECT_EQ(inv.number->substr(0, 4), inv.period_start.substr(0, 4));
      EXPECT_EQ(inv.issued_at, now);
      numbers.insert(*inv.number);
    }
  }
  std::set<std::string> expected = {"2025-000001", "2025-000002", "2025-000003", "2025-000004",
                                    "2025-000005", "2025-000006", "2026-000001", "2026-000002",
                                    "2026-000003", "2026-000004", "2026-000005", "2026-000006"};
  EXPECT_EQ(numbers, expected);
  // Older months first: November's three before December's.
  EXPECT_EQ(count("SELECT count(*) FROM invoices WHERE period_start = '2025-11-01'"
                  " AND number > '2025-000003'"),
            0);

  // The next month's invoices go on from where the year stopped.
  const Timestamp april = utc(2026, 4, 2);
  EXPECT_EQ(finalise(april), 3);
  EXPECT_EQ(count("SELECT count(*) FROM invoices WHERE period_start = '2026-03-01'"
                  " AND number IN ('2026-000007', '2026-000008', '2026-000009')"),
            3);
  EXPECT_EQ(count("SELECT last_number FROM invoice_numbers WHERE year = 2026"), 9);
  EXPECT_EQ(count("SELECT last_number FROM invoice_numbers WHERE year = 2025"), 6);
  expect_totals_are_lines();
}

// The month is over at midnight in the store's zone, not in UTC: the draft of the month
// that `now` is still in is left alone.
TEST_F(InvoiceStoreTest, TheCurrentMonthsDraftIsNotFinalised) {
  auto org = create_org();
  add_day(org, "rnt_a", utc(2026, 3, 10), price(10'000));
  const Timestamp midnight_moscow = utc(2026, 3, 31, 21, 0);  // 1 April 00:00 there
  EXPECT_EQ(finalise(midnight_moscow - std::chrono::microseconds(1)), 0);
  EXPECT_EQ(list(org).items.at(0).status, "draft");
  EXPECT_EQ(finalise(midnight_moscow), 1);
  auto inv = invoice(org, "2026-03-01");
  EXPECT_EQ(inv.status, "issued");
  EXPECT_EQ(inv.number, "2026-000001");
}

// A day charged for a month already issued cannot change that invoice: it goes on the next
// month's draft.
TEST_F(InvoiceStoreTest, ALateChargeGoesOnTheNextDraft) {
  auto org = create_org();
  add_day(org, "rnt_a", utc(2026, 3, 30), price(10'000));
  ASSERT_EQ(finalise(utc(2026, 4, 1, 6)), 1);
  add_day(org, "rnt_a", utc(2026, 3, 31), price(10'000));
  auto march = invoice(org, "2026-03-01");
  EXPECT_EQ(march.status, "issued");
  ASSERT_EQ(march.lines.size(), 1u);
  EXPECT_EQ(march.lines[0].days, 1);
  EXPECT_EQ(march.total_minor, 12'000);
  auto april = invoice(org, "2026-04-01");
  EXPECT_EQ(april.status, "draft");
  ASSERT_EQ(april.lines.size(), 1u);
  EXPECT_EQ(april.lines[0].days, 1);
}

// A charge that arrives while a finaliser is issuing its month waits for the issue, then
// goes on the next draft rather than failing against the issued invoice.
TEST_F(InvoiceStoreTest, AChargeMeetingAnIssueInProgressGoesOnTheNextDraft) {
  auto org = create_org();
  add_day(org, "rnt_a", utc(2026, 3, 30), price(10'000));
  const auto march = list(org).items.at(0).id;
  pqxx::connection c(db_.url());
  pqxx::work issuing(c);
  issuing.exec(
      "UPDATE invoices SET status = 'issued', number = '2026-000001',"
      " issued_at = now() WHERE id = " +
      issuing.quote(march));
  std::string failed;
  std::thread charge([&] {
    try {
      add_day(org, "rnt_a", utc(2026, 3, 31), price(10'000));
    } catch (const std::exception& e) {
      failed = e.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the charge waits on the row
  issuing.commit();
  charge.join();
  EXPECT_EQ(failed, "");
  EXPECT_EQ(invoice(org, "2026-03-01").total_minor, 12'000);
  auto april = invoice(org, "2026-04-01");
  EXPECT_EQ(april.status, "draft");
  ASSERT_EQ(april.lines.size(), 1u);
  EXPECT_EQ(april.lines[0].days, 1);
}

// Two finalisers (replicas) at once over drafts of two years, in small batches: every draft
// is issued once, and each year's numbers run from 1 with no gap and no repeat.
TEST_F(InvoiceStoreTest, ConcurrentFinalisersNumberWithoutGapsOrDuplicates) {
  constexpr int kOrgs = 40;
  for (int i = 0; i < kOrgs; ++i) {
    auto org = create_org();
    add_day(org, "rnt_a", utc(2025, 12, 5), price(10'000));
    add_day(org, "rnt_a", utc(2026, 1, 5), price(10'000));
    add_day(org, "rnt_a", utc(2026, 2, 5), price(10'000));
  }
  const Timestamp now = utc(2026, 3, 2);
  std::latch go(2);
  int issued[2] = {0, 0};
  std::string failed[2];
  auto run = [&](int i) {
    go.arrive_and_wait();
    try {
      issued[i] = store_.finalise_due(pool_, now, 3);
    } catch (const std::exception& e) {
      failed[i] = e.what();
    }
  };
  std::thread a(run, 0), b(run, 1);
  a.join();
  b.join();
  EXPECT_EQ(failed[0], "");
  EXPECT_EQ(failed[1], "");
  EXPECT_EQ(issued[0] + issued[1], 3 * kOrgs);
  EXPECT_EQ(count("SELECT count(*) FROM invoices WHERE status = 'issued'"), 3 * kOrgs);
  for (auto [year, n] : {std::pair{2025, kOrgs}, std::pair{2026, 2 * kOrgs}}) {
    SCOPED_TRACE(year);
    const std::string of_year = " FROM invoices WHERE number LIKE '" + std::to_string(year) + "-%'";
    EXPECT_EQ(count("SELECT count(DISTINCT number)" + of_year), n);
    EXPECT_EQ(count("SELECT min(right(number, 6)::int)" + of_year), 1);
    EXPECT_EQ(count("SELECT max(right(number, 6)::int)" + of_year), n);
    EXPECT_EQ(count("SELECT last_number FROM invoice_numbers WHERE year = " + std::to_string(year)),
              n);
  }
}

// A draft a charge is writing to (the charge's transaction still open) is skipped, not
// waited for; the next run issues it with the next number.
TEST_F(InvoiceStoreTest, ADraftBeingChargedIsLeftForTheNextRun) {
  auto busy = create_org(), idle = create_org();
  add_day(busy, "rnt_a", utc(2026, 1, 5), price(10'000));
  add_day(idle, "rnt_b", utc(2026, 1, 5), price(10'000));
  std::latch charged(1), finalised(1);
  std::thread charge([&] {
    transact([&](Tx& tx) {
      store_.add_rental_day(tx, busy, "rnt_a", "1x L4-24GB", utc(2026, 1, 6), price(10'000));
      charged.count_down();
      finalised.wait();
    });
  });
  charged.wait();
  int issued = -1;
  try {
    issued = finalise(utc(2026, 2, 2));
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
  finalised.count_down();
  EXPECT_EQ(issued, 1);
  charge.join();
  EXPECT_EQ(list(idle).items.at(0).number, "2026-000001");
  auto waited = invoice(busy, "2026-01-01");
  EXPECT_EQ(waited.status, "draft");
  ASSERT_EQ(waited.lines.size(), 1u);
  EXPECT_EQ(waited.lines[0].days, 2);
  EXPECT_EQ(finalise(utc(2026, 2, 2)), 1);
  EXPECT_EQ(invoice(busy, "2026-01-01").number, "2026-000002");
}

// A batch that fails rolls its numbers back with it: here a draft whose totals were edited
// by hand away from its lines, which the database will not issue.
TEST_F(InvoiceStoreTest, AFailedFinalisationGivesItsNumbersBack) {
  auto org = create_org();
  add_day(org, "rnt_a", utc(2026, 1, 5), price(10'000));
  add_day(org, "rnt_a", utc(2026, 2, 5), price(10'000));
  auto january = invoice(org, "2026-01-01").id;
  ASSERT_EQ(refusal("UPDATE invoices SET subtotal_minor = subtotal_minor + 1,"
                    " total_minor = total_minor + 1 WHERE id = '" +
                    january + "'"),
            "");
  try {
    finalise(utc(2026, 3, 2));
    ADD_FAILURE() << "issued an invoice whose totals are not its lines";
  } catch (const ConstraintViolation& e) {
    EXPECT_EQ(e.constraint(), "invoices_totals_are_lines");
  }
  EXPECT_EQ(count("SELECT count(*) FROM invoices WHERE status = 'draft'"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM invoice_numbers"), 0);

  ASSERT_EQ(refusal("UPDATE invoices SET subtotal_minor = subtotal_minor - 1,"
                    " total_minor = total_minor - 1 WHERE id = '" +
                    january + "'"),
            "");
  EXPECT_EQ(finalise(utc(2026, 3, 2)), 2);
  EXPECT_EQ(invoice(org, "2026-01-01").number, "2026-000001");
  EXPECT_EQ(invoice(org, "2026-02-01").number, "2026-000002");
}

// An issued invoice is a document: the database refuses every edit of it and its lines,
// whoever tries, except moving its status on to paid or void, once.
TEST_F(InvoiceStoreTest, IssuedInvoicesRefuseEditsAtTheDatabase) {
  auto org = create_org();
  add_day(org, "rnt_a", utc(2026, 1, 5), price(10'000));
  add_day(org, "rnt_b", utc(2026, 1, 5), price(10'000));
  ASSERT_EQ(finalise(utc(2026, 2, 2)), 1);
  const auto id = invoice(org, "2026-01-01").id;
  const std::string where = " WHERE id = '" + id + "'";
  const std::string lines_of = " WHERE invoice_id = '" + id + "'";
  const std::string kInvoices = "invoices_final_once_issued";
  const std::string kLines = "invoice_lines_final_once_issued";

  EXPECT_EQ(refusal("UPDATE invoices SET total_minor = total_minor + 1,"
                    " tax_minor = tax_minor + 1" +
                    where),
            kInvoices);
  EXPECT_EQ(refusal("UPDATE invoices SET number = '2026-000099'" + where), kInvoices);
  EXPECT_EQ(refusal("UPDATE invoices SET issued_at = now()" + where), kInvoices);
  EXPECT_EQ(
      refusal("UPDATE invoices SET status = 'draft', number = NULL, issued_at = NULL" + where),
      kInvoices);
  EXPECT_EQ(refusal("UPDATE invoices SET status = 'paid', total_minor = total_minor + 1,"
                    " subtotal_minor = subtotal_minor + 1" +
                    where),
            kInvoices);
  EXPECT_EQ(refusal("DELETE FROM invoices" + where), kInvoices);
  EXPECT_EQ(refusal("UPDATE invoice_lines SET description = 'changed'" + lines_of), kLines);
  EXPECT_EQ(refusal("DELETE FROM invoice_lines" + lines_of), kLines);
  EXPECT_EQ(refusal("INSERT INTO invoice_lines (invoice_id, kind, rental_id, description, days,"
                    " unit_net_minor, unit_tax_minor, unit_gross_minor, amount_net_minor,"
                    " tax_minor, amount_minor) VALUES ('" +
                    id + "', 'sla_credit', 'rnt_a', 'x', 0, -1, 0, -1, -1, 0, -1)"),
            kLines);
  EXPECT_EQ(count("SELECT count(*) FROM invoice_lines WHERE description = 'changed'"), 0);

  // A draft may be edited (the store does), but not paid without being issued.
  add_day(org, "rnt_a", utc(2026, 2, 5), price(10'000));
  const auto draft = invoice(org, "2026-02-01").id;
  EXPECT_EQ(
      refusal("UPDATE invoice_lines SET description = 'fixed' WHERE invoice_id = '" + draft + "'"),
      "");
  EXPECT_EQ(refusal("UPDATE invoices SET status = 'paid', number = '2026-000002',"
                    " issued_at = now() WHERE id = '" +
                    draft + "'"),
            kInvoices);

  // issued → paid, and nothing after.
  EXPECT_EQ(refusal("UPDATE invoices SET status = 'paid'" + where), "");
  EXPECT_EQ(invoice(org, "2026-01-01").status, "paid");
  EXPECT_EQ(refusal("UPDATE invoices SET status = 'void'" + where), kInvoices);
  EXPECT_EQ(refusal("UPDATE invoices SET status = 'issued'" + where), kInvoices);
  EXPECT_EQ(invoice(org, "2026-01-01").total_minor, 24'000);
}

// The row checks hold a line's amounts to its days and unit, and an invoice's total to its
// subtotal and tax.
TEST_F(InvoiceStoreTest, RowChecksKeepAmountsConsistent) {
  auto org = create_org();
  add_day(org, "rnt_a", utc(2026, 1, 5), price(10'000));
  const auto id = invoice(org, "2026-01-01").id;
  const std::string lines_of = " WHERE invoice_id = '" + id + "'";
  EXPECT_NE(refusal("UPDATE invoice_lines SET days = 2" + lines_of), "");
  EXPECT_NE(refusal("UPDATE invoice_lines SET amount_minor = amount_minor + 1" + lines_of), "");
  EXPECT_NE(refusal("UPDATE invoice_lines SET unit_tax_minor = 0" + lines_of), "");
  EXPECT_NE(refusal("UPDATE invoices SET total_minor = total_minor + 1 WHERE id = '" + id + "'"),
            "");
  EXPECT_NE(refusal("UPDATE invoices SET period_end = '2026-03-01' WHERE id = '" + id + "'"), "");
  EXPECT_EQ(refusal("UPDATE invoice_lines SET days = 2, amount_net_minor = 20000,"
                    " tax_minor = 4000, amount_minor = 24000" +
                    lines_of),
            "");
}

TEST_F(InvoiceStoreTest, TenantsSeeOnlyTheirOwnInvoices) {
  auto mine = create_org(), theirs = create_org();
  add_day(mine, "rnt_a", utc(2026, 1, 5), price(10'000));
  add_day(theirs, "rnt_b", utc(2026, 1, 5), price(20'000));
  const auto my_id = list(mine).items.at(0).id;
  const auto their_id = list(theirs).items.at(0).id;
  EXPECT_TRUE(get(mine, my_id));
  EXPECT_FALSE(get(mine, their_id));
  EXPECT_FALSE(get(theirs, my_id));
  EXPECT_FALSE(get(mine, new_id(id_prefix::kInvoice)));
  auto listed = list(mine).items;
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].id, my_id);
  ASSERT_EQ(listed[0].lines.size(), 1u);
  EXPECT_EQ(listed[0].lines[0].rental_id, "rnt_a");
}

TEST_F(InvoiceStoreTest, ListsPageNewestMonthFirst) {
  auto org = create_org(), other = create_org();
  for (unsigned m = 1; m <= 7; ++m) {
    add_day(org, "rnt_a", utc(2026, m, 5), price(10'000));
    add_day(org, "rnt_b", utc(2026, m, 6), price(10'000));
  }
  add_day(other, "rnt_c", utc(2026, 4, 5), price(10'000));
  std::vector<std::string> months;
  std::optional<std::string> cursor;
  std::vector<std::size_t> sizes;
  do {
    auto page = list(org, 3, cursor);
    sizes.push_back(page.items.size());
    for (const auto& inv : page.items) {
      months.push_back(inv.period_start);
      EXPECT_EQ(inv.lines.size(), 2u);
      EXPECT_EQ(inv.org_id, org);
    }
    cursor = page.next_cursor;
  } while (cursor);
  EXPECT_EQ(sizes, (std::vector<std::size_t>{3, 3, 1}));
  EXPECT_EQ(months,
            (std::vector<std::string>{"2026-07-01", "2026-06-01", "2026-05-01", "2026-04-01",
                                      "2026-03-01", "2026-02-01", "2026-01-01"}));
  // Exactly a page: no cursor to an empty page.
  EXPECT_FALSE(list(org, 7).next_cursor);

  for (const std::string bad : {"nonsense", "1.rnt_000000000000000000000", "-1.inv_x"}) {
    SCOPED_TRACE(bad);
    try {
      list(org, 3, bad);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
      EXPECT_EQ(e.details().value("field", ""), "cursor");
    }
  }
}

TEST_F(InvoiceStoreTest, CsvOfAStoredInvoice) {
  auto org = create_org();
  add_day(org, "rnt_a", utc(2026, 1, 5), {102'875, 20'575, 123'450}, "8x H100, \"train\"");
  add_day(org, "rnt_a", utc(2026, 1, 6), {102'875, 20'575, 123'450}, "8x H100, \"train\"");
  add_credit(org, "rnt_a", utc(2026, 1, 6), {-2'500, -500, -3'000});
  EXPECT_EQ(invoice_csv(invoice(org, "2026-01-01")),
            "\"kind\",\"rental_id\",\"description\",\"days\",\"unit_price\",\"amount_net\","
            "\"tax\",\"amount\",\"currency\"\r\n"
            "\"rental_days\",\"rnt_a\",\"8x H100, \"\"train\"\"\",2,1234.50,2057.50,411.50,"
            "2469.00,\"RUB\"\r\n"
            "\"sla_credit\",\"rnt_a\",\"SLA credit\",0,-30.00,-25.00,-5.00,-30.00,\"RUB\"\r\n"
            "\"subtotal\",,\"Net\",,,,,2032.50,\"RUB\"\r\n"
            "\"tax\",,\"VAT 20.00%\",,,,,406.50,\"RUB\"\r\n"
            "\"total\",,\"Total\",,,,,2439.00,\"RUB\"\r\n");
}

TEST(InvoiceCsvTest, TextIsQuotedAndFormulasAreDefused) {
  InvoiceRecord inv;
  inv.currency = "RUB";
  inv.vat_basis_points = 1850;
  for (const char* description :
       {"=HYPERLINK(\"http://x\")", "+1", "-2+3", "@SUM(A1)", "\tx", "\rx", "a\r\nb", "ok=1"}) {
    inv.lines.push_back({.kind = "rental_days",
                         .rental_id = "rnt_a",
                         .description = description,
                         .days = 1,
                         .unit = {100, 0, 100},
                         .amount_net_minor = 100,
                         .tax_minor = 0,
                         .amount_minor = 100});
  }
  inv.lines[1].rental_id = "=1+1";
  auto csv = invoice_csv(inv);
  EXPECT_NE(csv.find("\"'=HYPERLINK(\"\"http://x\"\")\""), std::string::npos) << csv;
  EXPECT_NE(csv.find("\"'=1+1\",\"'+1\""), std::string::npos) << csv;
  EXPECT_NE(csv.find("\"'-2+3\""), std::string::npos) << csv;
  EXPECT_NE(csv.find("\"'@SUM(A1)\""), std::string::npos) << csv;
  EXPECT_NE(csv.find("\"'\tx\""), std::string::npos) << csv;
  EXPECT_NE(csv.find("\"'\rx\""), std::string::npos) << csv;
  EXPECT_NE(csv.find("\"a\r\nb\""), std::string::npos) << csv;  // kept whole inside its quotes
  EXPECT_NE(csv.find("\"ok=1\""), std::string::npos) << csv;    // only a leading sign counts
  EXPECT_NE(csv.find("\"VAT 18.50%\""), std::string::npos) << csv;
  // Negative amounts are numbers, not text: no quote, no guard.
  inv.lines.clear();
  inv.subtotal_minor = inv.total_minor = -1'050;
  csv = invoice_csv(inv);
  EXPECT_NE(csv.find(",-10.50,\"RUB\"\r\n"), std::string::npos) << csv;
  EXPECT_EQ(csv.find("'-"), std::string::npos) << csv;
}

TEST(InvoiceCsvTest, AmountsAreExactDecimals) {
  EXPECT_EQ(decimal_amount(0), "0.00");
  EXPECT_EQ(decimal_amount(5), "0.05");
  EXPECT_EQ(decimal_amount(-5), "-0.05");
  EXPECT_EQ(decimal_amount(-100), "-1.00");
  EXPECT_EQ(decimal_amount(123'450), "1234.50");
  EXPECT_EQ(decimal_amount(std::numeric_limits<std::int64_t>::max()), "92233720368547758.07");
  EXPECT_EQ(decimal_amount(std::numeric_limits<std::int64_t>::min()), "-92233720368547758.08");
  EXPECT_EQ(vat_rate_percent(2000), "20.00");
  EXPECT_EQ(vat_rate_percent(0), "0.00");
  EXPECT_EQ(vat_rate_percent(1850), "18.50");
}

}  // namespace invoice_store_pgtest
}  // namespace gpurent::billing
