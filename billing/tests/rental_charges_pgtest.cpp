// Rentals' money against a real PostgreSQL, with the test clock: a booking needs the money
// (or the credit), each day is captured once when it starts whoever runs the job, an early
// end releases the days not started, what never ran costs nothing, an interruption is
// credited once, an extension holds its days, monthly spend limits hold; and random
// sequences of all of it keep the ledger sound after every step.
#include "billing/tests/billing_fixture.h"

#include <gtest/gtest.h>

#include <latch>
#include <map>
#include <random>
#include <thread>

namespace gpurent::billing {
namespace rental_charges_pgtest {

using std::chrono::hours;
using std::chrono::minutes;

class RentalChargesTest : public BillingTest {
 protected:
  RentalTerms terms(const std::string& org_id, std::int64_t per_day, int days,
                    std::optional<std::string> token = std::nullopt) {
    return {.rental_id = new_id(id_prefix::kRental),
            .org_id = org_id,
            .token_id = std::move(token),
            .description = "rental " + std::to_string(++n_),
            .day_price_minor = per_day,
            .days = days};
  }
  std::string book(const RentalTerms& t, const SpendLimits& limits = {}) {
    transact([&](Tx& tx) {
      charges_.hold(tx, t, limits);
      return 0;
    });
    return t.rental_id;
  }
  void start(const std::string& rental, Timestamp at) {
    transact([&](Tx& tx) {
      charges_.start(tx, rental, at);
      return 0;
    });
  }
  void settle(const std::string& rental, Ending ending) {
    transact([&](Tx& tx) {
      charges_.settle(tx, rental, ending, clock_.now());
      return 0;
    });
  }
  void extend(const std::string& rental, int days, const SpendLimits& limits = {}) {
    transact([&](Tx& tx) {
      charges_.extend(tx, rental, days, limits, std::nullopt);
      return 0;
    });
  }
  int capture() { return charges_.capture_due(pool_, clock_.now(), 7); }
  long long charged_days(const std::string& rental) {
    return count("SELECT count(*) FROM billing_charges WHERE rental_id = '" + rental + "'");
  }
  int n_ = 0;
};

TEST_F(RentalChargesTest, ABookingHoldsItsWholePeriodOnlyWhenTheMoneyOrCreditCoversIt) {
  std::string acme = org();
  top_up(acme, 250'000);
  auto refused = [&](std::int64_t per_day, int days) {
    try {
      book(terms(acme, per_day, days));
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInsufficientFunds);
      return e.details();
    }
    ADD_FAILURE() << "booked without the money";
    return nlohmann::json();
  };
  auto details = refused(100'000, 3);
  EXPECT_EQ(details["required"], Money(300'000, "RUB").to_json());
  EXPECT_EQ(details["available"], Money(250'000, "RUB").to_json());
  EXPECT_EQ(balances(acme).held.amount_minor(), 0);  // nothing written
  EXPECT_EQ(count("SELECT count(*) FROM billing_rentals"), 0);

  book(terms(acme, 100'000, 2));
  auto b = balances(acme);
  EXPECT_EQ(b.available.amount_minor(), 50'000);
  EXPECT_EQ(b.held.amount_minor(), 200'000);
  EXPECT_EQ(b.balance().amount_minor(), 250'000);
  refused(60'000, 1);
  // Trusted with credit, the org may go below zero, down to its limit and no further.
  transact([&](Tx& tx) {
    ledger_.set_credit_limit(tx, acme, 100'000);
    return 0;
  });
  book(terms(acme, 150'000, 1));
  EXPECT_EQ(balances(acme).available.amount_minor(), -100'000);
  refused(1, 1);
  // A free rental needs nothing and moves nothing.
  book(terms(acme, 0, 3));
  expect_ledger_sound();
}

TEST_F(RentalChargesTest, EachDayIsCapturedOnceWhenItStartsWhoeverRunsTheJob) {
  std::string acme = org();
  top_up(acme, 1'000'000);
  std::string r = book(terms(acme, 100'000, 3));
  EXPECT_EQ(capture(), 0);  // held, not running: nothing to capture
  Timestamp started = clock_.now();
  start(r, started);
  EXPECT_EQ(charged_days(r), 1);  // the first day started with it
  EXPECT_EQ(capture(), 0);
  clock_.advance(hours(23));
  EXPECT_EQ(capture(), 0);
  clock_.advance(hours(1));
  // Four replicas' jobs at once: the second day is charged once.
  std::latch go(4);
  std::vector<std::thread> jobs;
  std::atomic<int> captured{0};
  for (int i = 0; i < 4; ++i) {
    jobs.emplace_back([&] {
      go.arrive_and_wait();
      captured += charges_.capture_due(pool_, clock_.now());
    });
  }
  for (auto& t : jobs) t.join();
  EXPECT_EQ(captured.load(), 1);
  EXPECT_EQ(charged_days(r), 2);
  clock_.advance(hours(30));  // past the third day and the end
  EXPECT_EQ(capture(), 1);
  EXPECT_EQ(capture(), 0);
  EXPECT_EQ(charged_days(r), 3);
  auto b = balances(acme);
  EXPECT_EQ(b.held.amount_minor(), 0);
  EXPECT_EQ(b.balance().amount_minor(), 700'000);
  EXPECT_EQ(count("SELECT count(*) FROM billing_holds WHERE resolved_at IS NOT NULL"), 1);
  settle(r, Ending::kEnded);
  settle(r, Ending::kEnded);
  EXPECT_EQ(count("SELECT count(*) FROM ledger_transactions WHERE kind = 'release'"), 0);
  // The invoice of the month has the rental's line: three days at the day's price, VAT in it.
  EXPECT_EQ(count("SELECT sum(days) FROM invoice_lines WHERE rental_id = '" + r + "'"), 3);
  EXPECT_EQ(count("SELECT sum(amount_minor) FROM invoice_lines WHERE rental_id = '" + r + "'"),
            300'000);
  EXPECT_EQ(count("SELECT sum(tax_minor) FROM invoice_lines WHERE rental_id = '" + r + "'"),
            3 * 16'667);
  expect_ledger_sound();
}

// Replicas capturing at once, each batch touching many orgs' balances and draft invoices:
// every day is captured once and no batch deadlocks with another (batches lock orgs in one
// order; in the order of the claim they deadlocked).
TEST_F(RentalChargesTest, ConcurrentCapturesAcrossManyOrgsNeitherRepeatNorDeadlock) {
  std::vector<std::string> orgs;
  for (int i = 0; i < 6; ++i) {
    orgs.push_back(org("Org " + std::to_string(i)));
    top_up(orgs.back(), 100'000'000);
  }
  std::vector<std::string> rentals;
  for (int i = 0; i < 120; ++i) {
    rentals.push_back(book(terms(orgs[(i * 7) % orgs.size()], 10'000 + i, 3)));
  }
  // Started in an order that mixes the orgs, so a claim (by due time) takes them mixed too.
  for (const auto& r : rentals) start(r, clock_.now());
  clock_.advance(hours(24));
  long long deadlocks_before =
      count("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()");
  std::latch go(4);
  std::atomic<int> captured{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> capturers;
  for (int i = 0; i < 4; ++i) {
    capturers.emplace_back([&] {
      PgPool own{{.url = db_.url(), .size = 2}};
      go.arrive_and_wait();
      try {
        captured += charges_.capture_due(own, clock_.now(), 5);
      } catch (const std::exception&) {
        ++failed;
      }
    });
  }
  for (auto& t : capturers) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(captured.load(), 120);
  EXPECT_EQ(count("SELECT count(*) FROM billing_charges WHERE day = 1"), 120);
  EXPECT_EQ(count("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"),
            deadlocks_before);
  expect_ledger_sound();
}

TEST_F(RentalChargesTest, EndingEarlyReleasesTheDaysNotStartedAndNeverDeliveredCostsNothing) {
  std::string acme = org();
  top_up(acme, 1'000'000);
  std::string ended = book(terms(acme, 100'000, 5));
  start(ended, clock_.now());
  clock_.advance(hours(24) + minutes(1));  // in the second day, before the job ran
  settle(ended, Ending::kEnded);
  EXPECT_EQ(charged_days(ended), 2);  // the day in progress is paid
  std::string cancelled = book(terms(acme, 100'000, 2));
  settle(cancelled, Ending::kNotDelivered);
  std::string failed = book(terms(acme, 100'000, 2));  // provisioning failed: never ran
  settle(failed, Ending::kNotDelivered);
  EXPECT_EQ(charged_days(cancelled), 0);
  EXPECT_EQ(charged_days(failed), 0);
  EXPECT_EQ(count("SELECT count(*) FROM ledger_transactions WHERE kind = 'release'"), 3);
  auto b = balances(acme);
  EXPECT_EQ(b.held.amount_minor(), 0);
  EXPECT_EQ(b.balance().amount_minor(), 1'000'000 - 200'000);
  EXPECT_EQ(count("SELECT count(*) FROM billing_holds WHERE resolved_at IS NULL"), 0);
  expect_ledger_sound();
}

TEST_F(RentalChargesTest, AnInterruptionCreditsTheLostHoursOfItsDayOnce) {
  std::string acme = org();
  top_up(acme, 1'000'000);
  std::string r = book(terms(acme, 240'000, 3));
  start(r, clock_.now());
  clock_.advance(hours(24) + hours(5) + minutes(30));  // day 2, 18 h 30 min left of it
  settle(r, Ending::kInterrupted);
  settle(r, Ending::kInterrupted);
  EXPECT_EQ(charged_days(r), 2);
  // 18.5 h rounded up to 19 h of a 240,000 day: 190,000 back; the third day released.
  EXPECT_EQ(count("SELECT sum(amount_minor) FROM ledger_entries e JOIN ledger_transactions t"
                  " ON t.id = e.transaction_id WHERE t.kind = 'sla_credit'"
                  " AND e.account = 'available'"),
            190'000);
  auto b = balances(acme);
  EXPECT_EQ(b.held.amount_minor(), 0);
  EXPECT_EQ(b.balance().amount_minor(), 1'000'000 - 480'000 + 190'000);
  EXPECT_EQ(count("SELECT count(*) FROM invoice_lines WHERE kind = 'sla_credit'"), 1);
  // Interrupted before it ran: nothing charged, nothing credited.
  std::string early = book(terms(acme, 240'000, 1));
  settle(early, Ending::kInterrupted);
  EXPECT_EQ(charged_days(early), 0);
  EXPECT_EQ(count("SELECT count(*) FROM ledger_transactions WHERE kind = 'sla_credit'"), 1);
  expect_ledger_sound();
}

TEST_F(RentalChargesTest, AnExtensionHoldsItsDaysAndIsRefusedWithoutTheMoney) {
  std::string acme = org();
  top_up(acme, 350'000);
  std::string r = book(terms(acme, 100'000, 2));
  start(r, clock_.now());
  extend(r, 1);
  EXPECT_EQ(balances(acme).held.amount_minor(), 200'000);  // day 1 captured; days 2, 3 held
  EXPECT_EQ(code_of([&] { extend(r, 1); }), "insufficient_funds");
  clock_.advance(hours(72));
  EXPECT_EQ(capture(), 2);
  EXPECT_EQ(charged_days(r), 3);
  EXPECT_EQ(balances(acme).balance().amount_minor(), 50'000);
  EXPECT_EQ(count("SELECT count(*) FROM billing_holds WHERE resolved_at IS NOT NULL"), 2);
  expect_ledger_sound();
}

TEST_F(RentalChargesTest, MonthlySpendLimitsOfTheOrgAndTheTokenAreKept) {
  std::string acme = org();
  top_up(acme, 10'000'000);
  SpendLimits org_limit{.org_monthly_minor = 500'000};
  book(terms(acme, 100'000, 3), org_limit);
  try {
    book(terms(acme, 100'000, 3), org_limit);
    ADD_FAILURE() << "past the org's limit";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kQuotaExceeded);
    EXPECT_EQ(e.details()["spent"], Money(300'000, "RUB").to_json());
    EXPECT_EQ(e.details()["requested"], Money(300'000, "RUB").to_json());
  }
  // Released money no longer counts against the month.
  std::string cancelled = book(terms(acme, 100'000, 2), org_limit);
  settle(cancelled, Ending::kNotDelivered);
  book(terms(acme, 100'000, 2), org_limit);
  // A token's limit counts only what was booked through it.
  SpendLimits token_limit{.token_monthly_minor = 150'000};
  book(terms(acme, 100'000, 1, "tok_a"), token_limit);
  EXPECT_EQ(code_of([&] { book(terms(acme, 100'000, 1, "tok_a"), token_limit); }),
            "quota_exceeded");
  book(terms(acme, 100'000, 1, "tok_b"), token_limit);
  // The next calendar month starts afresh.
  clock_.advance(hours(24 * 32));
  book(terms(acme, 100'000, 5), org_limit);
  expect_ledger_sound();
}

TEST_F(RentalChargesTest, ConcurrentBookingsNeverSpendMoreThanTheBalance) {
  std::string acme = org();
  top_up(acme, 1'000'000);
  constexpr int kClients = 8;
  std::latch go(kClients);
  std::atomic<int> booked{0}, refused{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&] {
      go.arrive_and_wait();
      for (int j = 0; j < 5; ++j) {
        auto code = code_of([&] { book(terms(acme, 30'000, 1)); });
        (code == "none" ? booked : refused)++;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(booked.load(), 33);  // 33 × 30,000 ≤ 1,000,000 < 34 × 30,000
  EXPECT_EQ(refused.load(), 40 - 33);
  EXPECT_EQ(balances(acme).available.amount_minor(), 10'000);
  expect_ledger_sound();
}

TEST_F(RentalChargesTest, PaymentsAreAppliedOncePerPaymentId) {
  std::string acme = org();
  PaymentEvent paid{.payment_id = "pay_1",
                    .type = "payment.succeeded",
                    .org_id = acme,
                    .amount = Money(500'000, "RUB")};
  auto apply = [&](const PaymentEvent& e, const std::string& sha) {
    return transact([&](Tx& tx) { return top_ups_.apply_payment(tx, e, sha); });
  };
  EXPECT_EQ(apply(paid, "h1"), PaymentOutcome::kApplied);
  EXPECT_EQ(apply(paid, "h1"), PaymentOutcome::kRepeated);
  EXPECT_EQ(balances(acme).available.amount_minor(), 500'000);
  EXPECT_EQ(code_of([&] { apply(paid, "another body"); }), "conflict");
  PaymentEvent refund{.payment_id = "pay_1r",
                      .type = "payment.refunded",
                      .org_id = acme,
                      .amount = Money(200'000, "RUB")};
  EXPECT_EQ(apply(refund, "h2"), PaymentOutcome::kApplied);
  EXPECT_EQ(balances(acme).available.amount_minor(), 300'000);
  PaymentEvent stranger = paid;
  stranger.payment_id = "pay_2";
  stranger.org_id = new_id(id_prefix::kOrg);
  EXPECT_EQ(code_of([&] { apply(stranger, "h3"); }), "invalid_request");
  PaymentEvent dollars = paid;
  dollars.payment_id = "pay_3";
  dollars.amount = Money(100, "USD");
  EXPECT_EQ(code_of([&] { apply(dollars, "h4"); }), "invalid_request");
  expect_ledger_sound();
}

// An issued invoice is corrected by a credit note: a numbered document of its own, the
// money back on the balance, never more than the invoice, never of a draft.
TEST_F(RentalChargesTest, ACreditNoteCorrectsAnIssuedInvoiceWithoutEditingIt) {
  std::string acme = org();
  top_up(acme, 1'000'000);
  std::string r = book(terms(acme, 120'000, 2));
  start(r, clock_.now());
  clock_.advance(hours(24));
  capture();
  auto draft = read([&](Tx& tx) { return invoices_.list(tx, acme, 10, std::nullopt); }).items;
  ASSERT_EQ(draft.size(), 1u);
  std::string invoice = draft[0].id;
  // As a platform admin asks for one (AdminMoney: the note, its money and its audit row).
  const Caller admin{.actor = {.user_id = new_id(id_prefix::kUser), .request_id = "req-note"}};
  exec("INSERT INTO users (id, email, password_hash, is_platform_admin) VALUES ('" +
       *admin.actor.user_id + "', 'root@example.com', 'x', true)");
  auto note_of = [&](const std::string& id, std::int64_t amount) {
    return money_.credit_note(admin, id, Money(amount, "RUB"), "goodwill for a slow start");
  };
  EXPECT_EQ(code_of([&] { money_.credit_note(admin, invoice, Money(1'000, "EUR"), "x"); }),
            "invalid_request")
      << "another currency";
  EXPECT_EQ(code_of([&] { note_of(invoice, 1'000); }), "invalid_state") << "a draft still grows";
  clock_.advance(hours(24 * 40));
  EXPECT_GE(invoices_.finalise_due(pool_, clock_.now()), 1);
  auto issued = *read([&](Tx& tx) { return invoices_.get(tx, acme, invoice); });
  ASSERT_EQ(issued.status, "issued");
  ASSERT_EQ(issued.total_minor, 240'000);

  auto note = note_of(invoice, 60'000);
  EXPECT_EQ(note.kind, "credit_note");
  EXPECT_EQ(note.corrects_invoice_id, invoice);
  EXPECT_EQ(note.status, "issued");
  EXPECT_EQ(note.total_minor, -60'000);
  EXPECT_EQ(note.tax_minor, -10'000);  // 20 % VAT within 60,000
  ASSERT_EQ(note.lines.size(), 1u);
  EXPECT_EQ(note.lines[0].kind, "correction");
  // The next number of the same year's series, with no gap.
  int year = std::stoi(issued.number->substr(0, 4));
  ASSERT_TRUE(note.number);
  EXPECT_GT(*note.number, *issued.number);
  EXPECT_EQ(
      count("SELECT last_number FROM invoice_numbers WHERE year = " + std::to_string(year)),
      count("SELECT count(*) FROM invoices WHERE number LIKE '" + std::to_string(year) + "-%'"));
  EXPECT_EQ(balances(acme).available.amount_minor(), 1'000'000 - 240'000 + 60'000);
  // At most what is left of the invoice; not a note of a note.
  EXPECT_EQ(code_of([&] { note_of(invoice, 180'001); }), "invalid_request");
  EXPECT_EQ(code_of([&] { note_of(note.id, 1); }), "invalid_state");
  note_of(invoice, 180'000);
  EXPECT_EQ(code_of([&] { note_of(invoice, 1); }), "invalid_request");
  // The invoice itself never changed, and the notes cannot be edited either.
  auto after = *read([&](Tx& tx) { return invoices_.get(tx, acme, invoice); });
  EXPECT_EQ(after.total_minor, 240'000);
  EXPECT_ANY_THROW(
      exec("UPDATE invoice_lines SET amount_minor = -1, amount_net_minor = -1,"
           " tax_minor = 0, unit_net_minor = -1, unit_tax_minor = 0,"
           " unit_gross_minor = -1 WHERE kind = 'correction'"));
  EXPECT_EQ(balances(acme).balance().amount_minor(), 1'000'000);
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'billing.credit_note'"
                  " AND org_id = '" +
                  acme + "' AND actor_user_id = '" + *admin.actor.user_id + "'"),
            2)
      << "one audit row for each note issued, none for a refused one";
  expect_ledger_sound();
}

// Random sequences of top-ups, payments (some delivered twice), bookings, starts, days
// passing with the capture job (sometimes run twice), extensions, ends, failures and
// interruptions, with retried calls; after every step the ledger is sound, no org went below
// its credit limit, and every rental's charged days are what its story says.
TEST_F(RentalChargesTest, RandomSequencesKeepTheLedgerSound) {
  unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<std::string> orgs{org("A"), org("B"), org("C")};
  std::map<std::string, std::int64_t> credit_limit;
  for (const auto& o : orgs) credit_limit[o] = 0;
  transact([&](Tx& tx) {
    ledger_.set_credit_limit(tx, orgs[2], 200'000);
    return 0;
  });
  credit_limit[orgs[2]] = 200'000;
  struct Story {
    std::string org;
    std::string state = "held";  // held, running, settled
    std::optional<Timestamp> start;
    int days = 0;
    std::optional<Timestamp> settled_at;
    Ending ending = Ending::kEnded;
  };
  std::map<std::string, Story> rentals;
  std::vector<std::string> payment_ids;
  auto any_in = [&](const std::string& state) -> std::optional<std::string> {
    std::vector<std::string> ids;
    for (const auto& [id, s] : rentals) {
      if (s.state == state) ids.push_back(id);
    }
    if (ids.empty()) return std::nullopt;
    return ids[pick(0, static_cast<int>(ids.size()) - 1)];
  };
  for (int step = 0; step < 120; ++step) {
    int op = pick(0, 9);
    std::string what;
    if (op == 0) {
      what = "top-up";
      top_up(orgs[pick(0, 2)], pick(1, 50) * 10'000);
    } else if (op == 1) {
      what = "payment";
      std::string id = payment_ids.empty() || pick(0, 1) == 0
                           ? "pay_" + std::to_string(step)
                           : payment_ids[pick(0, static_cast<int>(payment_ids.size()) - 1)];
      PaymentEvent e{.payment_id = id,
                     .type = "payment.succeeded",
                     .org_id = orgs[0],
                     .amount = Money(100'000, "RUB")};
      transact([&](Tx& tx) { return top_ups_.apply_payment(tx, e, "same body"); });
      payment_ids.push_back(id);
    } else if (op <= 3) {
      what = "book";
      std::string o = orgs[pick(0, 2)];
      auto t = terms(o, pick(0, 30) * 1'000 + pick(0, 999), pick(1, 9));
      auto code = code_of([&] { book(t); });
      EXPECT_TRUE(code == "none" || code == "insufficient_funds") << code;
      if (code == "none") rentals[t.rental_id] = {.org = o, .days = t.days};
    } else if (op == 4) {
      what = "start";
      if (auto id = any_in("held")) {
        start(*id, clock_.now());
        start(*id, clock_.now());  // a retry changes nothing
        rentals[*id].state = "running";
        rentals[*id].start = clock_.now();
      }
    } else if (op == 5) {
      what = "time";
      clock_.advance(minutes(pick(1, 36 * 60)));
      capture();
      if (pick(0, 1)) capture();
    } else if (op == 6) {
      what = "extend";
      auto id = pick(0, 1) ? any_in("running") : any_in("held");
      if (id) {
        int more = pick(1, 4);
        auto code = code_of([&] { extend(*id, more); });
        EXPECT_TRUE(code == "none" || code == "insufficient_funds") << code;
        if (code == "none") rentals[*id].days += more;
      }
    } else {
      what = "end";
      auto id = any_in(pick(0, 2) ? "running" : "held");
      if (id) {
        Ending ending = op == 7   ? Ending::kEnded
                        : op == 8 ? Ending::kNotDelivered
                                  : Ending::kInterrupted;
        settle(*id, ending);
        settle(*id, ending);  // a retry changes nothing
        auto& s = rentals[*id];
        s.state = s.state == "running" ? "ran" : "settled";
        s.ending = ending;
        s.settled_at = clock_.now();
      }
    }
    SCOPED_TRACE("step " + std::to_string(step) + ": " + what);
    expect_ledger_sound();
    for (const auto& o : orgs) {
      EXPECT_GE(balances(o).available.amount_minor(), -credit_limit[o]) << o;
    }
    if (::testing::Test::HasFailure()) break;
  }
  // Every rental's charged days are its story's.
  capture();
  for (const auto& [id, s] : rentals) {
    long long expected = 0;
    Timestamp until = s.settled_at.value_or(clock_.now());
    if (s.start && !(s.settled_at && s.ending == Ending::kNotDelivered)) {
      expected = std::min<long long>(s.days, day_at(*s.start, until) + 1);
    }
    if (s.start && s.settled_at && s.ending == Ending::kNotDelivered) {
      // Failed after it started: the days captured before are kept, none added.
      EXPECT_LE(charged_days(id), s.days) << id;
      continue;
    }
    EXPECT_EQ(charged_days(id), expected) << id;
  }
  // The sequence did what it is about (bookings that ran and days that were charged).
  EXPECT_GT(count("SELECT count(*) FROM billing_charges"), 0);
  EXPECT_GT(count("SELECT count(*) FROM billing_holds WHERE resolved_at IS NOT NULL"), 0);
  expect_ledger_sound();
}

}  // namespace rental_charges_pgtest
}  // namespace gpurent::billing
