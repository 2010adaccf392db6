// The wipe gate and the verified access against a real PostgreSQL (DESIGN.md "Node trust"):
// install_access is made only once the attempt's provision succeeded, once, with the login
// probe; a failed install_access is retried and then fails the rental with its hold released;
// a GPU a tenant could reach serves nobody else until a wipe of it succeeded — after a failed
// wipe, an interruption, an activation — and a node sent to maintenance or draining has its
// future rentals moved, or cancelled free.
#include "billing/top_ups.h"
#include "scheduler/rental_billing.h"
#include "scheduler/tests/lifecycle_fixture.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <future>

namespace gpurent::scheduler {
namespace lifecycle_wipe_gate_pgtest {

class WipeGateTest : public LifecycleTest {
 protected:
  ~WipeGateTest() override { rentals_.on_transition(nullptr); }

  // Every move the rental store tells its hooks of (what billing and the webhooks' outbox
  // follow), and money moving with them.
  void watch_moves() {
    rentals_.on_transition([this](Tx& tx, const std::string& id, RentalState from, RentalState to) {
      moves_.push_back({id, from, to});
      bill_transition(tx, charges_, rentals_, lifecycle_.handovers(), id, from, to, clock_.now());
    });
    transact([&](Tx& tx) {
      return top_ups_.credit(tx, a_.org_id, Money(100'000'000, "RUB"), billing::CreditKind::kTopUp,
                             "test", std::nullopt);
    });
  }

  // A booking with its day's hold, as the booking use case places one.
  std::string held(const std::string& node_id, const std::vector<int>& gpus, const Period& p) {
    std::string id = book(a_, node_id, gpus, p);
    transact([&](Tx& tx) {
      charges_.hold(tx,
                    {.rental_id = id,
                     .org_id = a_.org_id,
                     .description = id,
                     .day_price_minor = 2'400'000,
                     .days = 1},
                    {});
      return 0;
    });
    return id;
  }

  billing::Balances balance() {
    return read([&](Tx& tx) { return ledger_.balances(tx, a_.org_id); });
  }

  struct Move {
    std::string id;
    RentalState from, to;
    bool operator==(const Move&) const = default;
  };
  std::vector<Move> moves_of(const std::string& id) const {
    std::vector<Move> out;
    for (const auto& m : moves_) {
      if (m.id == id) out.push_back(m);
    }
    return out;
  }

  // The rental's tasks of one kind.
  std::vector<AgentTask> of_kind(const std::string& id, TaskKind kind) {
    std::vector<AgentTask> out;
    for (const auto& t : tasks(id)) {
      if (t.kind == kind) out.push_back(t);
    }
    return out;
  }

  void transition(const std::string& node_id, inventory::NodeAction action) {
    transact([&](Tx& tx) {
      nodes_.transition(tx, node_id, action, "by the admin", admin_);
      return 0;
    });
  }

  // The admin's activation, as the node routes make it: the move, and the scheduler's check.
  std::optional<AgentTask> activate(const std::string& node_id) {
    return transact([&](Tx& tx) {
      nodes_.transition(tx, node_id, inventory::NodeAction::kActivate, "repaired", admin_);
      return lifecycle_.node_activated(tx, node_id);
    });
  }

  // A rental on `node_id` that ran and ended with every wipe failing: its GPUs unwiped, the
  // node in maintenance.
  std::string ended_unwiped(const std::string& node_id, const std::vector<int>& gpus) {
    std::string id = book(b_, node_id, gpus, {clock_.now() + seconds(1), clock_.now() + H(1)});
    run(clock_.now() + seconds(1));
    EXPECT_EQ(complete_all(id, true), 2);
    run(clock_.now());
    EXPECT_EQ(rental(id).state, RentalState::kActive);
    run(clock_.now() + H(1));
    EXPECT_EQ(rental(id).state, RentalState::kReleasing);
    for (int i = 0; i < 3; ++i) {
      complete_all(id, false);
      run(clock_.now() + kAfter);
    }
    EXPECT_EQ(rental(id).state, RentalState::kEnded);
    // Past its cleaning window: its GPUs are free in the calendar (unwiped or not).
    clock_.advance(kWindow);
    return id;
  }

  std::vector<Move> moves_;
  billing::Ledger ledger_{"RUB"};
  billing::InvoiceStore invoices_{clock_, "RUB", 2000};
  billing::RentalCharges charges_{clock_, ledger_, invoices_, {}};
  billing::TopUps top_ups_{clock_, ledger_};
};

// install_access waits for the attempt's provision, then comes at once with the agent's report
// of it, carrying the login probe the injected maker gives, due when its certificate ends;
// neither the worker's check nor a repeated report makes a second one.
TEST_F(WipeGateTest, InstallAccessComesOnlyAfterTheProvisionSucceededOnceWithTheProbe) {
  std::vector<std::string> probed;
  access_.make_probe = [&](Tx&, const RentalRecord& r, Timestamp now) {
    probed.push_back(r.id);
    return std::optional<nlohmann::json>({{"certificate", "ssh-ed25519-cert-v01@openssh.com AAAA"},
                                          {"principal", "gpurent-probe-" + r.id},
                                          {"host", "n1"},
                                          {"host_ca_key", "ssh-ed25519 BBBB"},
                                          {"made_at", format_rfc3339(now)}});
  };
  std::string n = node("n1");
  std::string id = book(a_, n, {0, 1}, from_now(H(1), H(25)));
  EXPECT_EQ(run(t0_ + H(1)), 1);
  auto provision = tasks(id);
  ASSERT_EQ(provision.size(), 1u);
  EXPECT_EQ(provision[0].kind, TaskKind::kProvision);
  for (int i = 1; i <= 3; ++i) EXPECT_EQ(run(t0_ + H(1) + i * kAfter), 0);
  EXPECT_EQ(tasks(id).size(), 1u) << "no install_access while the provision runs";
  EXPECT_TRUE(probed.empty());

  Timestamp reported = clock_.now();
  ASSERT_TRUE(report(provision[0], true));
  auto access = of_kind(id, TaskKind::kInstallAccess);
  ASSERT_EQ(access.size(), 1u);
  EXPECT_EQ(access[0].payload["attempt"], 0);
  EXPECT_EQ(access[0].payload["user"], rental_login(id));
  EXPECT_EQ(access[0].payload["principals"], nlohmann::json::array({rental_principal(id)}));
  ASSERT_TRUE(access[0].payload.contains("probe"));
  EXPECT_EQ(access[0].payload["probe"]["principal"], "gpurent-probe-" + id);
  EXPECT_EQ(access[0].payload["probe"]["host_ca_key"], "ssh-ed25519 BBBB");
  ASSERT_TRUE(access[0].deadline.has_value());
  EXPECT_GE(*access[0].deadline, reported + seconds(110));
  EXPECT_LE(*access[0].deadline, clock_.now() + seconds(110));
  EXPECT_EQ(probed, std::vector<std::string>{id});

  // The report again, and the worker's checks: still one.
  transact([&](Tx& tx) {
    lifecycle_.task_finished(tx, provision[0], true, clock_.now());
    return 0;
  });
  EXPECT_EQ(run(clock_.now()), 0);
  EXPECT_EQ(run(clock_.now() + kAfter), 0);
  EXPECT_EQ(of_kind(id, TaskKind::kInstallAccess).size(), 1u);
  EXPECT_EQ(rental(id).state, RentalState::kProvisioning) << "install_access still runs";

  ASSERT_TRUE(report(access[0], true));
  EXPECT_EQ(run(clock_.now()), 1);
  EXPECT_EQ(rental(id).state, RentalState::kActive);
  EXPECT_EQ(probed.size(), 1u);
}

// The provision's success reached the database another way (or while the worker held the
// rental): the worker's next check makes the install_access, once; a node that reported no
// probe key gets none in the payload and the delivery's default deadline.
TEST_F(WipeGateTest, TheWorkersCheckMakesAMissingInstallAccessOnce) {
  access_.make_probe = [](Tx&, const RentalRecord&, Timestamp) {
    return std::optional<nlohmann::json>();
  };
  std::string n = node("n1");
  std::string id = book(a_, n, {0}, from_now(H(1), H(25)));
  EXPECT_EQ(run(t0_ + H(1)), 1);
  auto provision = tasks(id).front();

  // The worker holds the rental while the report comes: the report does not wait for it and
  // leaves the install_access to the worker.
  {
    pqxx::connection worker(db_.url());
    pqxx::work holding(worker);
    holding.exec_params("SELECT id FROM rentals WHERE id = $1 FOR UPDATE", id);
    auto reporting = std::async(std::launch::async, [&] { return report(provision, true); });
    bool waited = reporting.wait_for(std::chrono::seconds(10)) != std::future_status::ready;
    holding.commit();
    EXPECT_FALSE(waited) << "the report waited for the worker's lock";
    EXPECT_TRUE(reporting.get());
  }
  EXPECT_TRUE(of_kind(id, TaskKind::kInstallAccess).empty());

  EXPECT_EQ(run(clock_.now() + kAfter), 0);
  auto access = of_kind(id, TaskKind::kInstallAccess);
  ASSERT_EQ(access.size(), 1u);
  EXPECT_FALSE(access[0].payload.contains("probe"));
  EXPECT_FALSE(access[0].deadline.has_value());
  EXPECT_EQ(run(clock_.now() + kAfter), 0);
  EXPECT_EQ(of_kind(id, TaskKind::kInstallAccess).size(), 1u);
  EXPECT_EQ(complete_quietly(id, true), 1);
  EXPECT_EQ(run(clock_.now() + kAfter), 1);
  EXPECT_EQ(rental(id).state, RentalState::kActive);
}

// A login that could not be verified fails install_access: the attempt is retried from the
// provision; after the last one the rental fails, its hold released and nothing captured,
// access revoked and its GPUs wiped, and no rental starts on them until the wipe succeeds.
TEST_F(WipeGateTest, AFailedInstallAccessIsRetriedThenFailsTheRentalWithItsHoldReleased) {
  watch_moves();
  std::string n = node("n1");
  std::string id = held(n, {0, 1}, from_now(H(1), H(25)));
  EXPECT_EQ(balance().held.amount_minor(), 2'400'000);
  EXPECT_EQ(run(t0_ + H(1)), 1);
  EXPECT_EQ(unwiped(n), (std::vector<int>{0, 1})) << "the tenant may reach them from now";

  for (int attempt = 0; attempt < 3; ++attempt) {
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    EXPECT_EQ(rental(id).attempts, attempt);
    auto provisions = of_kind(id, TaskKind::kProvision);
    ASSERT_EQ(provisions.size(), static_cast<std::size_t>(attempt + 1));
    ASSERT_TRUE(report(provisions.back(), true));
    auto access = of_kind(id, TaskKind::kInstallAccess);
    ASSERT_EQ(access.size(), static_cast<std::size_t>(attempt + 1));
    EXPECT_EQ(access.back().payload["attempt"], attempt);
    ASSERT_TRUE(report(access.back(), false));  // "Permission denied (publickey)"
    run(clock_.now());
  }
  EXPECT_EQ(rental(id).state, RentalState::kFailed);
  EXPECT_EQ(balance().held.amount_minor(), 0) << "the hold is released";
  EXPECT_EQ(balance().balance().amount_minor(), 100'000'000) << "nothing captured";
  EXPECT_EQ(moves_of(id).back(), (Move{id, RentalState::kProvisioning, RentalState::kFailed}));
  EXPECT_TRUE(read([&](Tx& tx) { return rentals_.allocations(tx, id); }).empty());
  auto revoke = of_kind(id, TaskKind::kRevokeAccess);
  auto wipe = of_kind(id, TaskKind::kWipe);
  ASSERT_EQ(revoke.size(), 1u);
  ASSERT_EQ(wipe.size(), 1u);
  EXPECT_EQ(wipe[0].payload["user"], rental_login(id));
  EXPECT_EQ(wipe[0].payload["gpu_indices"], nlohmann::json({0, 1}));
  EXPECT_EQ(unwiped(n), (std::vector<int>{0, 1}));

  ASSERT_TRUE(report(revoke[0], true));
  ASSERT_TRUE(report(wipe[0], true));
  EXPECT_TRUE(unwiped(n).empty());
}

// A failed wipe keeps the next tenant off those GPUs: the node goes to maintenance and its
// future booking moves to another node for the same period; with none free it is cancelled,
// its hold released.
TEST_F(WipeGateTest, AFailedWipeMovesTheNextBookingOnThoseGpusOrCancelsItFree) {
  watch_moves();
  std::string n1 = node("n1");
  std::string n2 = node("n2");
  std::string blocker = book(b_, n2, {0, 1, 2, 3, 4, 5, 6, 7}, from_now(H(24), H(48)));
  std::string next = held(n1, {0}, from_now(H(72), H(96)));   // n2 free then
  std::string stuck = held(n1, {1}, from_now(H(30), H(40)));  // n2 is full then
  ended_unwiped(n1, {0, 1});
  EXPECT_EQ(node_state(n1), "maintenance");
  EXPECT_EQ(unwiped(n1), (std::vector<int>{0, 1}));

  run(clock_.now());
  auto moved = rental(next);
  EXPECT_EQ(moved.state, RentalState::kScheduled);
  EXPECT_EQ(moved.node_id, n2);
  EXPECT_EQ(moved.period, from_now(H(72), H(96))) << "the same period";
  EXPECT_EQ(moved.price_per_day, Money(2'500'000, "RUB")) << "the same price";
  EXPECT_EQ(moves_of(next),
            (std::vector<Move>{{next, RentalState::kScheduled, RentalState::kScheduled}}))
      << "the move is told (rental.scheduled)";
  EXPECT_EQ(rental(stuck).state, RentalState::kCancelled);
  EXPECT_EQ(moves_of(stuck),
            (std::vector<Move>{{stuck, RentalState::kScheduled, RentalState::kCancelled}}))
      << "the cancellation is told (rental.cancelled)";
  EXPECT_TRUE(read([&](Tx& tx) { return rentals_.allocations(tx, stuck); }).empty());
  EXPECT_EQ(balance().held.amount_minor(), 2'400'000) << "only the moved booking's hold is left";
  EXPECT_EQ(balance().balance().amount_minor(), 100'000'000) << "nothing charged";
  EXPECT_EQ(rental(blocker).state, RentalState::kScheduled);
}

// An interruption revokes and wipes: the GPUs stay unwiped until that wipe succeeds, and only
// the marks set before it was made are cleared by it.
TEST_F(WipeGateTest, AnInterruptedRentalIsRevokedAndWipedAndItsGpusUnwipedUntilThen) {
  std::string n1 = node("n1");
  std::string id = book(a_, n1, {2, 3}, from_now(H(1), H(25)));
  run(t0_ + H(1));
  complete_all(id, true);
  run(clock_.now());
  ASSERT_EQ(rental(id).state, RentalState::kActive);
  transact([&](Tx& tx) {
    nodes_.transition(tx, n1, inventory::NodeAction::kFail, "XID 79", std::nullopt);
    return lifecycle_.interrupt_node(tx, n1, "GPU 2: XID 79", clock_.now());
  });
  ASSERT_EQ(rental(id).state, RentalState::kInterrupted);
  auto revoke = of_kind(id, TaskKind::kRevokeAccess);
  auto wipe = of_kind(id, TaskKind::kWipe);
  ASSERT_EQ(revoke.size(), 1u);
  ASSERT_EQ(wipe.size(), 1u);
  EXPECT_LT(revoke[0].created_at, wipe[0].created_at) << "access first, then the wipe";
  EXPECT_EQ(revoke[0].payload["user"], rental_login(id));
  EXPECT_EQ(wipe[0].payload["user"], rental_login(id));
  EXPECT_EQ(wipe[0].payload["gpu_indices"], nlohmann::json({2, 3}));
  EXPECT_EQ(unwiped(n1), (std::vector<int>{2, 3}));

  ASSERT_TRUE(report(revoke[0], true));
  EXPECT_EQ(unwiped(n1), (std::vector<int>{2, 3})) << "a revoke is no wipe";
  // A mark set after the wipe was made (a later tenant) is not the wipe's to clear.
  exec("UPDATE gpus SET unwiped_since = now() + interval '1 day' WHERE node_id = '" + n1 +
       "' AND idx = 3");
  ASSERT_TRUE(report(wipe[0], true));
  EXPECT_EQ(unwiped(n1), (std::vector<int>{3}));
}

// Draining and maintenance: the node's future rentals move to another node for the same
// period, or are cancelled free when nothing else fits; what runs there stays; a draining
// node left with nothing goes to maintenance.
TEST_F(WipeGateTest, ANodeSentToMaintenanceOrDrainingHasItsFutureRentalsMoved) {
  watch_moves();
  std::string n1 = node("n1");
  std::string n2 = node("n2");
  std::string n3 = node("n3");
  std::string running = book(a_, n1, {0}, from_now(H(1), H(25)));
  run(t0_ + H(1));
  complete_all(running, true);
  run(clock_.now());
  ASSERT_EQ(rental(running).state, RentalState::kActive);
  std::string n2_busy = book(b_, n2, {0, 1, 2, 3, 4, 5, 6, 7}, from_now(H(24), H(48)));
  std::string n3_busy = book(b_, n3, {0, 1, 2, 3, 4, 5, 6, 7}, from_now(H(24), H(48)));
  std::string sooner = held(n1, {1}, from_now(H(30), H(54)));  // n2 and n3 full then
  std::string later = held(n1, {1}, from_now(H(60), H(84)));   // n2 and n3 free then

  transition(n1, inventory::NodeAction::kDrain);
  run(clock_.now());
  EXPECT_EQ(rental(running).state, RentalState::kActive) << "what runs stays";
  EXPECT_EQ(rental(running).node_id, n1);
  EXPECT_EQ(rental(sooner).state, RentalState::kCancelled);
  EXPECT_TRUE(read([&](Tx& tx) { return rentals_.allocations(tx, sooner); }).empty());
  EXPECT_EQ(moves_of(sooner),
            (std::vector<Move>{{sooner, RentalState::kScheduled, RentalState::kCancelled}}))
      << "the cancellation is told (rental.cancelled)";
  auto l = rental(later);
  EXPECT_EQ(l.state, RentalState::kScheduled);
  EXPECT_TRUE(l.node_id == n2 || l.node_id == n3) << "free then";
  EXPECT_EQ(l.period, from_now(H(60), H(84))) << "the same period";
  EXPECT_EQ(moves_of(later),
            (std::vector<Move>{{later, RentalState::kScheduled, RentalState::kScheduled}}))
      << "the move is told (rental.scheduled)";
  EXPECT_EQ(balance().held.amount_minor(), 2'400'000) << "the cancelled one's hold let go";
  EXPECT_EQ(balance().balance().amount_minor(), 100'000'000) << "nothing charged";
  EXPECT_EQ(node_state(n1), "draining") << "a rental still runs on it";

  // Maintenance: n3's whole-node booking goes to the one node free for all of it.
  std::string n4 = node("n4");
  transition(n3, inventory::NodeAction::kMaintenance);
  run(clock_.now());
  auto moved = rental(n3_busy);
  EXPECT_EQ(moved.state, RentalState::kScheduled);
  EXPECT_EQ(moved.node_id, n4);
  EXPECT_EQ(moved.period, from_now(H(24), H(48)));
  EXPECT_EQ(read([&](Tx& tx) { return rentals_.allocations(tx, n3_busy); }).size(), 8u);
  EXPECT_EQ(run(clock_.now() + kAfter), 0) << "nothing is left to move";
  EXPECT_EQ(rental(n2_busy).state, RentalState::kScheduled);
  EXPECT_EQ(rental(n2_busy).node_id, n2);

  // A draining node whose future rentals all moved, with nothing running, has drained.
  std::string n5 = node("n5");
  std::string only = book(a_, n5, {0}, from_now(H(60), H(84)));
  transition(n5, inventory::NodeAction::kDrain);
  run(clock_.now());
  EXPECT_EQ(rental(only).state, RentalState::kScheduled);
  EXPECT_NE(rental(only).node_id, n5);
  EXPECT_EQ(node_state(n5), "maintenance");
}

// Activating a node whose wipe failed queues a wipe of its unwiped GPUs first (the node's
// own, no rental), once; a rental due on those GPUs before it succeeds starts elsewhere; once
// it succeeded, the GPUs serve again. A failed activation wipe sends the node back.
TEST_F(WipeGateTest, ActivateAfterAFailedWipeWipesFirstAndNothingStartsOnThoseGpusUntilThen) {
  std::string n1 = node("n1");
  std::string n2 = node("n2");
  ended_unwiped(n1, {0, 1});
  ASSERT_EQ(node_state(n1), "maintenance");

  auto wipe = activate(n1);
  ASSERT_TRUE(wipe.has_value());
  EXPECT_EQ(node_state(n1), "available");
  EXPECT_EQ(wipe->kind, TaskKind::kWipe);
  EXPECT_FALSE(wipe->rental_id.has_value()) << "the node's own";
  EXPECT_EQ(wipe->node_id, n1);
  EXPECT_EQ(wipe->payload["gpu_indices"], nlohmann::json({0, 1}));
  // Again (maintenance and back): the queued wipe covers them already.
  transition(n1, inventory::NodeAction::kMaintenance);
  EXPECT_FALSE(activate(n1).has_value());

  // A booking on GPU 0 of n1 (made while n1 was available) comes up before the wipe is done.
  std::string early = book(a_, n1, {0}, {clock_.now() + seconds(1), clock_.now() + H(24)});
  std::string clean = book(a_, n1, {5}, {clock_.now() + seconds(1), clock_.now() + H(24)});
  run(clock_.now() + seconds(1));
  auto moved = rental(early);
  EXPECT_EQ(moved.state, RentalState::kScheduled);
  EXPECT_TRUE(moved.node_id != n1 ||
              std::none_of(moved.gpu_indices.begin(), moved.gpu_indices.end(),
                           [](int i) { return i == 0 || i == 1; }))
      << "never on an unwiped GPU";
  EXPECT_EQ(rental(clean).state, RentalState::kProvisioning) << "GPU 5 was never unwiped";
  EXPECT_EQ(rental(clean).node_id, n1);
  run(clock_.now() + seconds(1));
  EXPECT_EQ(states(a_, early),
            (std::vector<RentalState>{RentalState::kScheduled, RentalState::kScheduled,
                                      RentalState::kProvisioning}))
      << "moved, then started where it went";
  EXPECT_EQ(rental(early).node_id, moved.node_id);

  // The wipe clears what it covers; GPU 5's tenant came after it was made.
  ASSERT_TRUE(report(*wipe, true));
  auto left = unwiped(n1);
  EXPECT_EQ(std::count(left.begin(), left.end(), 0), 0);
  EXPECT_EQ(std::count(left.begin(), left.end(), 1), 0);
  EXPECT_EQ(std::count(left.begin(), left.end(), 5), 1);
  std::string after = book(a_, n1, {1}, {clock_.now() + seconds(1), clock_.now() + H(24)});
  run(clock_.now() + seconds(1));
  EXPECT_EQ(rental(after).state, RentalState::kProvisioning);
  EXPECT_EQ(rental(after).node_id, n1);
  EXPECT_EQ(rental(after).gpu_indices, std::vector<int>{1});

  // Another node: a wipe of its own that fails sends it back to maintenance.
  std::string n3 = node("n3");
  ended_unwiped(n3, {4});
  ASSERT_EQ(node_state(n3), "maintenance");
  auto second = activate(n3);
  ASSERT_TRUE(second.has_value());
  ASSERT_TRUE(report(*second, false));
  EXPECT_EQ(node_state(n3), "maintenance");
  EXPECT_EQ(unwiped(n3), std::vector<int>{4});
}

// With no other GPUs free, a rental due on unwiped GPUs is cancelled at its start, free.
TEST_F(WipeGateTest, ARentalDueOnUnwipedGpusWithNothingElseFreeIsCancelledFree) {
  watch_moves();
  std::string n1 = node("n1", "H100-SXM5-80GB", 1);
  ended_unwiped(n1, {0});
  ASSERT_TRUE(activate(n1).has_value());
  std::string id = held(n1, {0}, {clock_.now() + seconds(1), clock_.now() + H(24)});
  run(clock_.now() + seconds(1));
  EXPECT_EQ(rental(id).state, RentalState::kCancelled);
  EXPECT_TRUE(tasks(id).empty()) << "nothing was asked of the agent";
  EXPECT_EQ(balance().held.amount_minor(), 0);
  EXPECT_EQ(balance().balance().amount_minor(), 100'000'000);
  auto events = read([&](Tx& tx) { return rentals_.events(tx, a_.org_id, id); });
  EXPECT_NE(events.back().reason.find("not wiped"), std::string::npos) << events.back().reason;
  EXPECT_NE(events.back().reason.find("nothing is charged"), std::string::npos);
}

}  // namespace lifecycle_wipe_gate_pgtest
}  // namespace gpurent::scheduler
