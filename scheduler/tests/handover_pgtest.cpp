// Handovers of running rentals against a real PostgreSQL, with the test clock
// (scheduler/handovers.h, issue "Operations that respect the tenant"):
//  - a fault under an active rental swaps it to a spare of the same shape — same id, new node,
//    provisioned again — and its return to active credits the lost minutes once;
//  - with no spare, today's interruption;
//  - a maintenance window planned 5 days ahead over rentals that cannot move notifies them with
//    the full lead time and choices, applies each answer, and at the window's start applies
//    the default to those that did not answer (a swap for an active one);
//  - within the lead time the plan is refused;
//  - the tenant's reboot of a whole node, and an admin's power action, check the access again
//    before the rental is active, the first without a credit.
#include "billing/invoice_store.h"
#include "billing/ledger.h"
#include "billing/rental_charges.h"
#include "billing/top_ups.h"
#include "core/sql.h"
#include "scheduler/maintenance.h"
#include "scheduler/rental_billing.h"
#include "scheduler/tests/lifecycle_fixture.h"

#include <gtest/gtest.h>

namespace gpurent::scheduler {
namespace handover_pgtest {

class HandoverTest : public LifecycleTest {
 protected:
  static constexpr std::int64_t kDayPrice = 1'440'000;  // 1,000 a minute

  HandoverTest() {
    lifecycle_.notify_with(&notices_);
    notices_.on_created(
        [this](Tx& tx, const RentalNotice& n) { lifecycle_.notice_to_node(tx, n); });
    // As the scheduler module wires it: the defaults before the run's steps.
    lifecycle_.add_job(
        "maintenance_defaults",
        [this](PgPool&, Timestamp now, const std::atomic<bool>*) { maintenance_.apply_due(now); },
        true);
    rentals_.on_transition([this](Tx& tx, const std::string& id, RentalState from, RentalState to) {
      bill_transition(tx, charges_, rentals_, handovers_, id, from, to, clock_.now());
    });
  }

  void SetUp() override {
    LifecycleTest::SetUp();
    transact([&](Tx& tx) {
      return top_ups_.credit(tx, a_.org_id, Money(100'000'000, "RUB"), billing::CreditKind::kTopUp,
                             "test", std::nullopt);
    });
  }

  // Booked with its money held, as the booking use case does.
  std::string booked(const std::string& node_id, const std::vector<int>& gpus, const Period& p) {
    std::string id = book(a_, node_id, gpus, p);
    int days = static_cast<int>((p.end - p.start) / H(24));
    transact([&](Tx& tx) {
      charges_.hold(tx,
                    {.rental_id = id,
                     .org_id = a_.org_id,
                     .description = id,
                     .day_price_minor = kDayPrice,
                     .days = days},
                    {});
      return 0;
    });
    return id;
  }

  // Started now and handed over: active.
  std::string active(const std::string& node_id, const std::vector<int>& gpus, int days) {
    const Timestamp now = clock_.now();  // once: the test clock moves between reads
    std::string id = booked(node_id, gpus, {now, now + H(24 * days)});
    run(clock_.now());
    complete_all(id, true);
    run(clock_.now());
    EXPECT_EQ(rental(id).state, RentalState::kActive);
    return id;
  }

  std::int64_t available() {
    return read([&](Tx& tx) { return ledger_.balances(tx, a_.org_id); }).available.amount_minor();
  }

  std::vector<Handover> handovers_of(const std::string& id) {
    return read([&](Tx& tx) { return handovers_.of_rental(tx, id); });
  }

  std::vector<RentalNotice> notices_of(const std::string& id) {
    return read([&](Tx& tx) { return notices_.list(tx, a_.org_id, id, 20); });
  }

  bool has_task(const std::string& id, TaskKind kind, const std::string& node_id) {
    for (const auto& t : tasks(id)) {
      if (t.kind == kind && t.node_id == node_id) return true;
    }
    return false;
  }

  void fail(const std::string& node_id, const std::string& why) {
    transact([&](Tx& tx) {
      nodes_.transition(tx, node_id, inventory::NodeAction::kFail, why, std::nullopt);
      return lifecycle_.interrupt_node(tx, node_id, why, clock_.now());
    });
  }

  std::string expect_error(ErrorCode code, const std::function<void()>& fn) {
    try {
      fn();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      return std::string(e.what()) + " " + e.details().dump();
    }
    return "";
  }

  billing::Ledger ledger_{"RUB"};
  billing::InvoiceStore invoices_{clock_, "RUB", 2000};
  billing::RentalCharges charges_{clock_, ledger_, invoices_, {}};
  billing::TopUps top_ups_{clock_, ledger_};
  HandoverStore handovers_;
  NoticeStore notices_{clock_};
  Maintenance maintenance_{pool_, clock_, rentals_, lifecycle_, notices_};
};

TEST_F(HandoverTest, AFaultSwapsAnActiveRentalToASpareAndCreditsTheLostMinutesOnce) {
  std::string n1 = node("n1");
  std::string spare = node("n2");
  std::string id = active(n1, {0, 1, 2, 3, 4, 5, 6, 7}, 2);
  const std::int64_t before = available();

  clock_.advance(H(3));
  const Timestamp fault = clock_.now();
  fail(n1, "GPU 3: XID 79 (fell off the bus)");

  // Same id, the spare's GPUs, provisioning there from scratch; the old node is cleaned.
  auto r = rental(id);
  EXPECT_EQ(r.state, RentalState::kProvisioning);
  EXPECT_EQ(r.node_id, spare);
  EXPECT_EQ(r.gpu_count, 8);
  EXPECT_TRUE(has_task(id, TaskKind::kProvision, spare));
  EXPECT_TRUE(has_task(id, TaskKind::kRevokeAccess, n1));
  EXPECT_TRUE(has_task(id, TaskKind::kWipe, n1));
  auto opened = handovers_of(id);
  ASSERT_EQ(opened.size(), 1u);
  EXPECT_EQ(opened[0].cause, HandoverCause::kFault);
  EXPECT_EQ(opened[0].from_node_id, n1);
  EXPECT_EQ(opened[0].to_node_id, spare);
  EXPECT_FALSE(opened[0].ended_at);
  // The tenant is told; the spare's agent is not (the notice is not about the spare, and the
  // rental's login does not exist there yet).
  auto told = notices_of(id);
  ASSERT_FALSE(told.empty());
  EXPECT_EQ(told[0].kind, "fault");
  EXPECT_NE(told[0].message.find(spare), std::string::npos) << told[0].message;
  EXPECT_FALSE(has_task(id, TaskKind::kNotice, spare));
  EXPECT_EQ(available(), before) << "nothing credited before it is back";

  // The spare is provisioned within the simulated agents' time: 17 minutes lost.
  clock_.advance(minutes(17));
  complete_all(id, true);
  run(clock_.now());
  r = rental(id);
  EXPECT_EQ(r.state, RentalState::kActive);
  auto closed = handovers_of(id);
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].outcome, "active");
  auto lost_minutes = (closed[0].ended_at.value() - fault + seconds(59)) / minutes(1);
  EXPECT_GE(lost_minutes, 17);
  EXPECT_LE(lost_minutes, 18);
  // 1,000 a minute of the day price, once: a second activation credits nothing more.
  EXPECT_EQ(closed[0].credited_minor, lost_minutes * 1000);
  EXPECT_EQ(available(), before + lost_minutes * 1000);
  transact([&](Tx& tx) {
    return charges_.credit_handover(tx, id, closed[0].id, minutes(60), fault, clock_.now());
  });
  EXPECT_EQ(available(), before + lost_minutes * 1000) << "the ledger's key makes it once";
  // The period did not change, and it ends as any active rental does.
  EXPECT_EQ(r.period.end - r.period.start, H(48));
  EXPECT_EQ(count("SELECT count(*) FROM allocations a JOIN gpus g ON g.id = a.gpu_id"
                  " WHERE a.rental_id = '" +
                  id + "' AND g.node_id = '" + n1 + "'"),
            0);
}

TEST_F(HandoverTest, WithNoSpareAFaultInterruptsAsBefore) {
  std::string n1 = node("n1");
  std::string id = active(n1, {0, 1, 2, 3, 4, 5, 6, 7}, 1);
  clock_.advance(H(5));
  fail(n1, "GPU 1: XID 48 (double-bit ECC)");
  auto r = rental(id);
  EXPECT_EQ(r.state, RentalState::kInterrupted);
  EXPECT_TRUE(handovers_of(id).empty());
  auto told = notices_of(id);
  ASSERT_FALSE(told.empty());
  EXPECT_EQ(told[0].kind, "fault");
}

TEST_F(HandoverTest, ASpareThatCannotBeMadeReadyInterruptsTheRentalAndEndsItsBillingAsARun) {
  std::string n1 = node("n1");
  std::string spare = node("n2");
  std::string id = active(n1, {0, 1, 2, 3}, 1);
  clock_.advance(H(2));
  fail(n1, "unreachable");
  ASSERT_EQ(rental(id).node_id, spare);
  // Every attempt on the spare fails.
  for (int i = 0; i < 3; ++i) {
    complete_all(id, false);
    run(clock_.now() + kAfter);
  }
  EXPECT_EQ(rental(id).state, RentalState::kInterrupted);
  auto h = handovers_of(id);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].outcome, "interrupted");
  // Billed as a rental that ran: its first day captured, the rest of it credited (lost hours).
  EXPECT_EQ(count("SELECT count(*) FROM billing_charges WHERE rental_id = '" + id + "'"), 1);
}

TEST_F(HandoverTest, AWindowFiveDaysAheadNotifiesTheRentalsThatStayAndAppliesEachAnswer) {
  std::string n1 = node("n1");
  // Nothing else has H100s: nothing can move.
  std::string running = active(n1, {0, 1, 2, 3}, 7);
  std::string shifts = booked(n1, {4, 5}, from_now(H(24 * 5), H(24 * 6)));
  std::string cancels = booked(n1, {6, 7}, from_now(H(24 * 5 + 2), H(24 * 6 + 2)));
  const Period window = from_now(H(24 * 5), H(24 * 5 + 12));

  // Within the lead time (72 h) the plan is refused, naming who stays.
  auto refused = expect_error(ErrorCode::kConflict, [&] {
    maintenance_.plan({n1}, from_now(H(48), H(50)), "replace a PSU", std::nullopt);
  });
  EXPECT_NE(refused.find(running), std::string::npos) << refused;
  EXPECT_NE(refused.find("\"notice_hours\":72"), std::string::npos) << refused;

  auto planned = maintenance_.plan({n1}, window, "replace a PSU", admin_.user_id);
  EXPECT_TRUE(planned.moved.empty());
  EXPECT_EQ(planned.notified.size(), 3u);
  auto notice_of = [&](const std::string& id) {
    auto all = notices_of(id);
    EXPECT_EQ(all.size(), 1u) << id;
    return all.at(0);
  };
  auto n_running = notice_of(running);
  EXPECT_EQ(n_running.kind, "maintenance");
  EXPECT_EQ(n_running.respond_by, window.start) << "the full lead time to answer";
  EXPECT_EQ(n_running.ends_at, window.end);
  EXPECT_EQ(n_running.choices, (std::vector<std::string>{"other_node", "cancel"}));
  EXPECT_EQ(notice_of(shifts).choices, (std::vector<std::string>{"other_node", "shift", "cancel"}));
  // The running rental's node has the notice: the agent writes it and runs the checkpoint.
  EXPECT_TRUE(has_task(running, TaskKind::kNotice, n1));
  // Its GPUs are held up to the window's start, the window's after.
  EXPECT_EQ(count("SELECT count(*) FROM allocations WHERE rental_id = '" + running +
                  "' AND upper(period) > '" + sql_timestamp(window.start) + "'"),
            0);

  // Answers: a choice the notice does not offer, another org's notice, then the real ones.
  auto offered = notice_of(running);
  expect_error(ErrorCode::kInvalidRequest,
               [&] { maintenance_.choose(a_.org_id, running, offered.id, "shift", std::nullopt); });
  expect_error(ErrorCode::kNotFound, [&] {
    maintenance_.choose(b_.org_id, running, offered.id, "cancel", std::nullopt);
  });
  expect_error(ErrorCode::kInsufficientCapacity, [&] {
    maintenance_.choose(a_.org_id, running, offered.id, "other_node", std::nullopt);
  });
  auto shifted =
      maintenance_.choose(a_.org_id, shifts, notice_of(shifts).id, "shift", std::nullopt);
  EXPECT_EQ(shifted.choice, "shift");
  EXPECT_TRUE(shifted.applied_at);
  EXPECT_EQ(rental(shifts).state, RentalState::kScheduled);
  EXPECT_EQ(rental(shifts).period.start, window.end);
  EXPECT_EQ(rental(shifts).period.end - rental(shifts).period.start, H(24));
  maintenance_.choose(a_.org_id, cancels, notice_of(cancels).id, "cancel", std::nullopt);
  EXPECT_EQ(rental(cancels).state, RentalState::kCancelled);
  expect_error(ErrorCode::kInvalidState, [&] {
    maintenance_.choose(a_.org_id, cancels, notice_of(cancels).id, "cancel", std::nullopt);
  });

  // No answer for the running one: a spare appears before the window, and at its start the
  // rental moves there.
  std::string spare = node("n2");
  run(window.start - minutes(1));
  EXPECT_EQ(rental(running).node_id, n1);
  const std::int64_t before = available();
  run(window.start);
  auto moved = rental(running);
  EXPECT_EQ(moved.state, RentalState::kProvisioning);
  EXPECT_EQ(moved.node_id, spare);
  auto h = handovers_of(running);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].cause, HandoverCause::kMaintenance);
  auto after = notices_of(running);
  ASSERT_EQ(after.size(), 2u) << "the maintenance notice, then the move's";
  EXPECT_EQ(after[0].kind, "maintenance");
  EXPECT_NE(after[0].message.find(spare), std::string::npos) << after[0].message;
  EXPECT_TRUE(after[1].applied_at) << "the default applied";
  EXPECT_FALSE(after[1].choice);
  clock_.advance(minutes(10));
  complete_all(running, true);
  run(clock_.now());
  EXPECT_EQ(rental(running).state, RentalState::kActive);
  EXPECT_GT(available(), before) << "the minutes of the move are credited";
}

TEST_F(HandoverTest,
       AnUnansweredScheduledRentalIsCancelledFreeAndAnActiveOneWithNoSpareInterrupted) {
  std::string n1 = node("n1");
  std::string running = active(n1, {0, 1, 2, 3}, 7);
  std::string waiting = booked(n1, {4, 5, 6, 7}, from_now(H(24 * 5 + 1), H(24 * 6 + 1)));
  const Period window = from_now(H(24 * 5), H(24 * 5 + 12));
  maintenance_.plan({n1}, window, "firmware", std::nullopt);
  run(window.start);
  EXPECT_EQ(rental(waiting).state, RentalState::kCancelled);
  EXPECT_EQ(rental(running).state, RentalState::kInterrupted);
  EXPECT_EQ(count("SELECT count(*) FROM billing_charges WHERE rental_id = '" + waiting + "'"), 0);
}

// A rental notified before its start gets the notice on its node once it is handed over (its
// login exists then, for the checkpoint); a swap away from the node settles the notice, so
// no default is applied to it at the window's start.
TEST_F(HandoverTest, ANoticeBeforeTheStartReachesTheNodeAtHandoverAndASwapSettlesIt) {
  std::string n1 = node("n1");
  std::string id = booked(n1, {0, 1, 2, 3}, from_now(H(24), H(24 * 7)));
  const Period window = from_now(H(24 * 5), H(24 * 5 + 6));
  auto planned = maintenance_.plan({n1}, window, "firmware", std::nullopt);
  ASSERT_EQ(planned.notified, std::vector<std::string>{id});
  EXPECT_FALSE(has_task(id, TaskKind::kNotice, n1)) << "not on the node yet";
  run(t0_ + H(24));
  complete_all(id, true);
  run(clock_.now());
  ASSERT_EQ(rental(id).state, RentalState::kActive);
  EXPECT_TRUE(has_task(id, TaskKind::kNotice, n1));

  std::string spare = node("n2");
  fail(n1, "GPU 2: XID 79");
  ASSERT_EQ(rental(id).node_id, spare);
  complete_all(id, true);
  run(clock_.now());
  ASSERT_EQ(rental(id).state, RentalState::kActive);
  auto told = notices_of(id);
  ASSERT_EQ(told.back().kind, "maintenance");
  EXPECT_TRUE(told.back().applied_at) << "settled by the swap";
  run(window.start);
  EXPECT_EQ(rental(id).state, RentalState::kActive);
  EXPECT_EQ(rental(id).node_id, spare);
  EXPECT_EQ(handovers_of(id).size(), 1u);
}

// A cancelled window withdraws its notices: the rentals that stayed have their GPUs for their
// whole period again, and no default is applied at the old start.
TEST_F(HandoverTest, CancellingTheWindowGivesTheRentalsThatStayedTheirGpusBack) {
  std::string n1 = node("n1");
  std::string running = active(n1, {0, 1, 2, 3}, 7);
  std::string waiting = booked(n1, {4, 5, 6, 7}, from_now(H(24 * 5 + 1), H(24 * 6 + 1)));
  const Period window = from_now(H(24 * 5), H(24 * 5 + 12));
  auto w = maintenance_.plan({n1}, window, "firmware", std::nullopt).windows.at(0);
  maintenance_.cancel(w.id);
  for (const auto& id : {running, waiting}) {
    auto told = notices_of(id);
    ASSERT_EQ(told.size(), 2u) << id;
    EXPECT_NE(told[0].message.find("is cancelled"), std::string::npos) << told[0].message;
    EXPECT_TRUE(told[1].applied_at) << id;
    EXPECT_EQ(count("SELECT count(*) FROM allocations WHERE rental_id = '" + id +
                    "' AND upper(period) > '" + sql_timestamp(rental(id).period.end) + "'"),
              static_cast<long long>(rental(id).gpu_count))
        << id << ": its GPUs to its end and the cleaning after";
  }
  run(window.start);
  run(t0_ + H(24 * 5 + 1));
  EXPECT_EQ(rental(running).state, RentalState::kActive);
  EXPECT_EQ(rental(waiting).state, RentalState::kProvisioning);
  EXPECT_TRUE(handovers_of(running).empty());
}

TEST_F(HandoverTest, ARebootChecksTheAccessAgainWithoutACreditAndOnlyForAWholeNode) {
  std::string n1 = node("n1");
  std::string n2 = node("n2");
  std::string whole = active(n1, {0, 1, 2, 3, 4, 5, 6, 7}, 1);
  std::string part = active(n2, {0, 1}, 1);
  auto shared = expect_error(ErrorCode::kInvalidState, [&] {
    transact([&](Tx& tx) {
      lifecycle_.reboot(tx, *rentals_.lock_any(tx, part), std::nullopt, clock_.now());
      return 0;
    });
  });
  EXPECT_NE(shared.find("\"node_gpu_count\":8"), std::string::npos) << shared;
  const std::int64_t before = available();
  transact([&](Tx& tx) {
    lifecycle_.reboot(tx, *rentals_.lock_any(tx, whole), a_.user_id, clock_.now());
    return 0;
  });
  EXPECT_EQ(rental(whole).state, RentalState::kProvisioning);
  EXPECT_EQ(rental(whole).node_id, n1);
  EXPECT_TRUE(has_task(whole, TaskKind::kReboot, n1));
  // A second reboot while the first runs is refused.
  expect_error(ErrorCode::kInvalidState, [&] {
    transact([&](Tx& tx) {
      lifecycle_.reboot(tx, *rentals_.lock_any(tx, whole), std::nullopt, clock_.now());
      return 0;
    });
  });
  // The reboot, then the access check, then active: no provision, no credit.
  clock_.advance(minutes(4));
  complete_all(whole, true);
  run(clock_.now());
  EXPECT_EQ(rental(whole).state, RentalState::kActive);
  int installs = 0;
  for (const auto& t : tasks(whole)) {
    EXPECT_NE(t.kind == TaskKind::kProvision && t.created_at > t0_ + minutes(1), true)
        << "no reimage for a reboot";
    installs += t.kind == TaskKind::kInstallAccess;
  }
  EXPECT_EQ(installs, 2);
  EXPECT_EQ(available(), before);
  auto h = handovers_of(whole);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].cause, HandoverCause::kReboot);
  EXPECT_EQ(h[0].outcome, "active");
  EXPECT_FALSE(h[0].credited_minor);
}

TEST_F(HandoverTest, APowerActionChecksTheAccessAgainAndCreditsTheMinutes) {
  std::string n1 = node("n1");
  std::string id = active(n1, {0, 1, 2, 3}, 1);
  const std::int64_t before = available();
  auto cycled = transact(
      [&](Tx& tx) { return lifecycle_.power_cycled(tx, n1, "force_restart", clock_.now()); });
  EXPECT_EQ(cycled, std::vector<std::string>{id});
  EXPECT_EQ(rental(id).state, RentalState::kProvisioning);
  clock_.advance(minutes(6));
  complete_all(id, true);
  run(clock_.now());
  EXPECT_EQ(rental(id).state, RentalState::kActive);
  EXPECT_GE(available() - before, 6 * 1000);
  EXPECT_LE(available() - before, 7 * 1000);
}

}  // namespace handover_pgtest
}  // namespace gpurent::scheduler
