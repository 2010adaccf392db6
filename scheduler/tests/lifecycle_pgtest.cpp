// The lifecycle worker against a real PostgreSQL, with a test clock: a rental booked for
// tomorrow waits until tomorrow and then walks every state to `ended` with its events and
// tasks; provisioning retries and then fails with its GPUs freed; two workers running at
// once never move one rental twice; the waitlist is placed when capacity appears (fairly
// between orgs) and expires after its time; a draining node goes to maintenance when its
// last rental ends, and an unconfirmed wipe sends the node there too.
#include "scheduler/lifecycle.h"

#include "billing/top_ups.h"
#include "core/error.h"
#include "inventory/catalog_store.h"
#include "inventory/price_store.h"
#include "scheduler/rental_billing.h"
#include "scheduler/tests/lifecycle_fixture.h"

#include <gtest/gtest.h>

#include <latch>
#include <thread>

namespace gpurent::scheduler {
namespace lifecycle_pgtest {

TEST_F(LifecycleTest, ABookingForTomorrowStartsTomorrowAndWalksEveryStateToEnded) {
  std::string n = node("n1");
  std::string id = book(a_, n, {0, 1}, from_now(H(24), H(48)));
  const Timestamp start = t0_ + H(24);
  const Timestamp end = t0_ + H(48);

  EXPECT_EQ(run(t0_), 0);
  EXPECT_EQ(run(start - seconds(1)), 0);
  EXPECT_EQ(rental(id).state, RentalState::kScheduled);
  EXPECT_TRUE(tasks(id).empty());

  EXPECT_EQ(run(start), 1);
  EXPECT_EQ(rental(id).state, RentalState::kProvisioning);
  auto provisioning = tasks(id);
  ASSERT_EQ(provisioning.size(), 1u) << "access is installed once the provision is done";
  EXPECT_EQ(provisioning[0].kind, TaskKind::kProvision);
  EXPECT_EQ(provisioning[0].node_id, n);
  EXPECT_EQ(provisioning[0].payload["image_id"], image_);
  EXPECT_EQ(provisioning[0].payload["gpu_indices"], nlohmann::json({0, 1}));

  // Still running: the check finds nothing to do and looks again later.
  EXPECT_EQ(run(start + kAfter), 0);
  EXPECT_EQ(run(start + kAfter + seconds(1)), 0);  // not due again before its next check
  EXPECT_EQ(rental(id).state, RentalState::kProvisioning);
  EXPECT_EQ(complete_all(id, true), 2);
  provisioning = tasks(id);
  ASSERT_EQ(provisioning.size(), 2u);
  EXPECT_EQ(provisioning[1].kind, TaskKind::kInstallAccess);
  EXPECT_TRUE(provisioning[1].payload.contains("ssh_key_ids"));
  EXPECT_FALSE(provisioning[1].payload.contains("probe")) << "no probe without its maker";
  EXPECT_FALSE(provisioning[1].deadline.has_value());
  // The reports have the rental looked at on the next run, not at its check time.
  EXPECT_EQ(run(clock_.now()), 1);
  EXPECT_EQ(rental(id).state, RentalState::kActive);

  EXPECT_EQ(run(end - seconds(1)), 0);
  EXPECT_EQ(run(end), 1);
  EXPECT_EQ(rental(id).state, RentalState::kReleasing);
  auto all = tasks(id);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[2].kind, TaskKind::kRevokeAccess);
  EXPECT_EQ(all[3].kind, TaskKind::kWipe);
  EXPECT_EQ(complete_all(id, true), 2);
  EXPECT_EQ(run(end + kAfter), 1);
  EXPECT_EQ(rental(id).state, RentalState::kEnded);
  EXPECT_EQ(states(a_, id),
            (std::vector<RentalState>{RentalState::kScheduled, RentalState::kProvisioning,
                                      RentalState::kActive, RentalState::kReleasing,
                                      RentalState::kEnded}));
  EXPECT_EQ(node_state(n), "available");
  EXPECT_EQ(run(end + H(1)), 0);
}

TEST_F(LifecycleTest, ProvisioningIsRetriedThenFailsWithItsAllocationsDropped) {
  std::string n = node("n1");
  std::string id = book(a_, n, {0}, from_now(H(1), H(25)));
  const Timestamp start = t0_ + H(1);
  EXPECT_EQ(run(start), 1);

  // Attempt 1's provision fails outright: no install_access is made for it.
  EXPECT_EQ(complete_all(id, false), 1);
  EXPECT_EQ(run(start + kAfter), 0);
  EXPECT_EQ(rental(id).state, RentalState::kProvisioning);
  EXPECT_EQ(rental(id).attempts, 1);
  EXPECT_EQ(tasks(id).size(), 2u);

  // Attempt 2 never answers and times out.
  Timestamp second = start + kAfter;
  EXPECT_EQ(run(second + kAfter), 0);
  EXPECT_EQ(rental(id).attempts, 1);
  EXPECT_EQ(run(second + kAfterTimeout), 0);
  EXPECT_EQ(rental(id).attempts, 2);
  EXPECT_EQ(tasks(id).size(), 3u);

  // Attempt 3 fails: that was the last.
  EXPECT_EQ(complete_all(id, false), 1);
  EXPECT_EQ(run(second + kAfterTimeout + kAfter), 1);
  EXPECT_EQ(rental(id).state, RentalState::kFailed);
  EXPECT_TRUE(read([&](Tx& tx) { return rentals_.allocations(tx, id); }).empty());
  EXPECT_EQ(states(a_, id).back(), RentalState::kFailed);
  // The tenant may have reached the node during an attempt: access revoked, GPUs wiped.
  auto all = tasks(id);
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[3].kind, TaskKind::kRevokeAccess);
  EXPECT_EQ(all[4].kind, TaskKind::kWipe);
  EXPECT_EQ(all[4].payload["user"], rental_login(id));
  EXPECT_EQ(all[4].payload["gpu_indices"], nlohmann::json({0}));
}

TEST_F(LifecycleTest, ALateSuccessOfAnOldAttemptDoesNotActivate) {
  std::string n = node("n1");
  std::string id = book(a_, n, {0}, from_now(H(1), H(25)));
  const Timestamp start = t0_ + H(1);
  EXPECT_EQ(run(start), 1);
  auto first = tasks(id);
  EXPECT_EQ(run(start + kAfterTimeout), 0);  // attempt 1 timed out: attempt 2 asked
  ASSERT_EQ(rental(id).attempts, 1);
  for (const auto& t : first) {
    transact([&](Tx& tx) { return tasks_.complete(tx, t.id, true, "late"); });
  }
  EXPECT_EQ(run(start + kAfterTimeout + kAfter), 0);
  EXPECT_EQ(rental(id).state, RentalState::kProvisioning);
  // Told of the old provision's success, the lifecycle makes no install_access for it.
  for (const auto& t : first) {
    transact([&](Tx& tx) {
      lifecycle_.task_finished(tx, t, true, clock_.now());
      return 0;
    });
  }
  for (const auto& t : tasks(id)) EXPECT_EQ(t.kind, TaskKind::kProvision);
}

TEST_F(LifecycleTest, TwoWorkersAtOnceNeverMoveOneRentalTwice) {
  std::vector<std::string> ids;
  for (const auto* host : {"n1", "n2", "n3"}) {
    std::string n = node(host);
    for (int gpu = 0; gpu < 8; ++gpu) {
      ids.push_back(book(a_, n, {gpu}, from_now(H(1), H(25))));
    }
  }
  const Timestamp start = t0_ + H(1);
  std::latch go(2);
  int moved[2] = {0, 0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w) {
    workers.emplace_back([&, w] {
      go.arrive_and_wait();
      moved[w] = run(start);
    });
  }
  for (auto& t : workers) t.join();
  EXPECT_EQ(moved[0] + moved[1], static_cast<int>(ids.size()));
  for (const auto& id : ids) {
    EXPECT_EQ(rental(id).state, RentalState::kProvisioning) << id;
    EXPECT_EQ(tasks(id).size(), 1u) << id;
    EXPECT_EQ(states(a_, id).size(), 2u) << id;
  }
}

TEST_F(LifecycleTest, APendingRentalIsPlacedWhenARentalIsCancelled) {
  std::string n = node("n1");
  std::string big = book(a_, n, {0, 1, 2, 3, 4, 5, 6, 7}, from_now(H(1), H(25)));
  std::string waiting = pending(b_, t0_ + H(12));
  EXPECT_EQ(run(t0_), 0);
  EXPECT_EQ(rental(waiting).state, RentalState::kPending);

  transact([&](Tx& tx) {
    rentals_.transition(tx, big, RentalState::kScheduled, RentalState::kCancelled, "cancelled");
    rentals_.drop_allocations(tx, big);
  });
  EXPECT_EQ(run(t0_), 1);
  auto placed = rental(waiting);
  EXPECT_EQ(placed.state, RentalState::kScheduled);
  EXPECT_EQ(placed.node_id, n);
  EXPECT_EQ(placed.gpu_indices.size(), 1u);
  EXPECT_EQ(placed.period.end - placed.period.start, H(24));
  EXPECT_EQ(read([&](Tx& tx) { return rentals_.allocations(tx, waiting); }).size(), 1u);
  EXPECT_EQ(states(b_, waiting),
            (std::vector<RentalState>{RentalState::kPending, RentalState::kScheduled}));
}

TEST_F(LifecycleTest, APendingRentalExpiresAfterItsTime) {
  std::string waiting = pending(a_, t0_ + H(1));  // no node of the model at all
  EXPECT_EQ(run(t0_), 0);
  EXPECT_EQ(rental(waiting).state, RentalState::kPending);
  EXPECT_EQ(run(t0_ + H(1)), 1);
  EXPECT_EQ(rental(waiting).state, RentalState::kCancelled);
}

TEST_F(LifecycleTest, TheWaitlistTakesOrgsInTurn) {
  std::string n = node("n1");
  std::vector<std::string> a_waiting;
  for (int i = 0; i < 8; ++i) a_waiting.push_back(pending(a_, t0_ + H(12)));
  std::string b_waiting = pending(b_, t0_ + H(12));  // joined last
  EXPECT_EQ(run(t0_), 8);                            // eight GPUs
  EXPECT_EQ(rental(b_waiting).state, RentalState::kScheduled);
  EXPECT_EQ(rental(a_waiting.front()).state, RentalState::kScheduled);
  // Org a's own order holds: its last request is the one left waiting.
  EXPECT_EQ(rental(a_waiting.back()).state, RentalState::kPending);
}

// The org's limit is read when the request comes up, not only when it queued: lowered
// meanwhile, the request keeps waiting; raised again, it is placed.
TEST_F(LifecycleTest, AWaitingRequestIsHeldToItsOrgsLimitWhenItComesUp) {
  std::string n = node("n1");
  std::string booked = book(a_, n, {0, 1, 2, 3}, from_now(H(24), H(48)));  // tomorrow
  std::string waiting = pending(a_, t0_ + H(12));
  auto limit_to = [&](int gpus) {
    transact([&](Tx& tx) {
      identity::GuardrailsChange change;
      change.max_concurrent_gpus = {.change = true, .value = gpus};
      ASSERT_TRUE(orgs_.set_guardrails(tx, a_.org_id, change, admin_));
    });
  };
  limit_to(4);
  EXPECT_EQ(run(t0_), 0) << "four GPUs held and one more asked: over the limit of four";
  EXPECT_EQ(rental(waiting).state, RentalState::kPending);
  EXPECT_TRUE(read([&](Tx& tx) { return rentals_.allocations(tx, waiting); }).empty());
  limit_to(5);
  EXPECT_EQ(run(t0_), 1);
  EXPECT_EQ(rental(waiting).state, RentalState::kScheduled);
  EXPECT_EQ(rental(booked).state, RentalState::kScheduled);
}

// A waiting request's standing: its place among the requests for its model in the order
// the waitlist serves them (orgs in turn), and when its shape would fit as the calendar is.
TEST_F(LifecycleTest, AWaitingRequestKnowsItsPlaceAndItsEstimatedStart) {
  std::string n = node("n1");
  std::string full = book(a_, n, {0, 1, 2, 3, 4, 5, 6, 7}, from_now(H(0), H(48)));
  std::string a1 = pending(a_, t0_ + H(12));
  std::string a2 = pending(a_, t0_ + H(12));
  std::string b1 = pending(b_, t0_ + H(12));  // joined last, served second
  auto standing = [&](const std::string& id) {
    return read([&](Tx& tx) { return booking_.standing(tx, rental(id)); });
  };
  EXPECT_EQ(standing(a1).position, 1);
  EXPECT_EQ(standing(b1).position, 2);
  EXPECT_EQ(standing(a2).position, 3);
  // The node is booked for two days and then cleaned: the first whole day after that.
  auto estimate = standing(b1).estimated_start;
  ASSERT_TRUE(estimate.has_value());
  EXPECT_GE(*estimate, t0_ + H(48) + kWindow);
  EXPECT_LT(*estimate, t0_ + H(48) + kWindow + H(24));
  // A rental that is not waiting has no standing.
  EXPECT_EQ(standing(full).position, 0);
  EXPECT_FALSE(standing(full).estimated_start.has_value());
}

TEST_F(LifecycleTest, ADrainingNodeGoesToMaintenanceWhenItsLastRentalEnds) {
  std::string n = node("n1");
  std::string first = book(a_, n, {0}, from_now(H(1), H(25)));
  std::string second = book(b_, n, {1}, from_now(H(1), H(49)));
  const Timestamp start = t0_ + H(1);
  EXPECT_EQ(run(start), 2);
  complete_all(first, true);
  complete_all(second, true);
  EXPECT_EQ(run(start + kAfter), 2);
  // Drained while both run: they keep their GPUs.
  transact([&](Tx& tx) {
    nodes_.transition(tx, n, inventory::NodeAction::kDrain, "warning health", admin_);
  });

  const Timestamp end1 = t0_ + H(25);
  EXPECT_EQ(run(end1), 1);
  complete_all(first, true);
  EXPECT_EQ(run(end1 + kAfter), 1);
  EXPECT_EQ(rental(first).state, RentalState::kEnded);
  EXPECT_EQ(node_state(n), "draining");  // the second rental still runs

  const Timestamp end2 = t0_ + H(49);
  EXPECT_EQ(run(end2), 1);
  EXPECT_EQ(node_state(n), "draining");  // releasing still holds it
  complete_all(second, true);
  EXPECT_EQ(run(end2 + kAfter), 1);
  EXPECT_EQ(rental(second).state, RentalState::kEnded);
  EXPECT_EQ(node_state(n), "maintenance");
}

TEST_F(LifecycleTest, ARentalOnARetiredNodeMovesToAnotherOrIsCancelled) {
  std::string n1 = node("n1");
  std::string n2 = node("n2");
  // Both nodes hold a whole-node booking tomorrow; n2 is free the day after (past the
  // cleaning window).
  std::string moved = book(a_, n1, {0, 1, 2, 3, 4, 5, 6, 7}, from_now(H(48), H(72)));
  std::string stuck = book(b_, n1, {0, 1, 2, 3, 4, 5, 6, 7}, from_now(H(24), H(40)));
  std::string blocker = book(b_, n2, {0, 1, 2, 3, 4, 5, 6, 7}, from_now(H(24), H(40)));
  transact([&](Tx& tx) {
    nodes_.transition(tx, n1, inventory::NodeAction::kRetire, "decommissioned", admin_);
  });
  EXPECT_EQ(run(t0_), 2);
  auto m = rental(moved);
  EXPECT_EQ(m.state, RentalState::kScheduled);
  EXPECT_EQ(m.node_id, n2) << "re-placed on the node that is free then";
  EXPECT_EQ(m.period, from_now(H(48), H(72))) << "the same period";
  EXPECT_EQ(read([&](Tx& tx) { return rentals_.allocations(tx, moved); }).size(), 8u);
  EXPECT_EQ(rental(stuck).state, RentalState::kCancelled) << "n2 is booked then";
  EXPECT_TRUE(read([&](Tx& tx) { return rentals_.allocations(tx, stuck); }).empty());
  EXPECT_EQ(rental(blocker).state, RentalState::kScheduled);
  EXPECT_EQ(run(t0_ + kAfter), 0) << "nothing is stranded any more";
}

// Terminate in each state: before the start a cancellation that frees the GPUs; once
// started a release now, with access revoked and the node wiped as at the period's end
// (an unfinished provisioning abandoned); once ending or over, refused.
TEST_F(LifecycleTest, TerminateInEachState) {
  std::string n = node("n1");
  auto terminate = [&](const std::string& id) {
    return transact([&](Tx& tx) {
      return lifecycle_.terminate(tx, *rentals_.lock_any(tx, id), clock_.now(), "customer asked",
                                  a_.user_id);
    });
  };
  auto kinds = [&](const std::string& id, TaskState state) {
    std::vector<TaskKind> out;
    for (const auto& t : tasks(id)) {
      if (t.state == state) out.push_back(t.kind);
    }
    return out;
  };

  std::string waiting = pending(a_, t0_ + H(12));
  EXPECT_EQ(terminate(waiting), RentalState::kCancelled);

  std::string tomorrow = book(a_, n, {0}, from_now(H(24), H(48)));
  EXPECT_EQ(terminate(tomorrow), RentalState::kCancelled);
  EXPECT_TRUE(read([&](Tx& tx) { return rentals_.allocations(tx, tomorrow); }).empty());

  std::string starting = book(a_, n, {1}, from_now(H(1), H(25)));
  std::string running = book(a_, n, {2}, from_now(H(1), H(25)));
  EXPECT_EQ(run(t0_ + H(1)), 2);
  complete_all(running, true);
  EXPECT_EQ(run(t0_ + H(1) + kAfter), 1);
  ASSERT_EQ(rental(starting).state, RentalState::kProvisioning);
  ASSERT_EQ(rental(running).state, RentalState::kActive);

  for (const auto& id : {starting, running}) {
    Timestamp now = clock_.now();
    EXPECT_EQ(terminate(id), RentalState::kReleasing);
    auto r = rental(id);
    EXPECT_EQ(r.state, RentalState::kReleasing);
    EXPECT_EQ(kinds(id, TaskState::kQueued),
              (std::vector<TaskKind>{TaskKind::kRevokeAccess, TaskKind::kWipe}));
    auto held = read([&](Tx& tx) { return rentals_.allocations(tx, id); });
    ASSERT_EQ(held.size(), 1u);
    EXPECT_LE(held[0].second.end, clock_.now() + kWindow) << "free after the window from now";
    EXPECT_GE(held[0].second.end, now + kWindow);
    EXPECT_EQ(states(a_, id).back(), RentalState::kReleasing);
  }
  EXPECT_EQ(kinds(starting, TaskState::kFailed), (std::vector<TaskKind>{TaskKind::kProvision}))
      << "the provisioning in progress is abandoned";
  // The worker looks at the wipe soon, not at some far check time, and ends the rental.
  complete_all(running, true);
  EXPECT_EQ(run(clock_.now() + kAfter), 1);
  EXPECT_EQ(rental(running).state, RentalState::kEnded);

  for (const auto& id : {starting, running}) {
    try {
      terminate(id);
      ADD_FAILURE() << "terminated twice";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidState);
    }
  }
}

// Extend in each state: before the end, on the same GPUs (the allocations' end moves with
// the period); refused when the GPUs are booked after it, changing nothing; refused for a
// rental waiting, ending or over.
TEST_F(LifecycleTest, ExtendInEachState) {
  std::string n = node("n1");
  auto extend = [&](const std::string& id, int days, std::optional<int> max_days = {}) {
    return transact([&](Tx& tx) {
      return booking_.extend(tx, *rentals_.lock_any(tx, id), days, {.max_days = max_days});
    });
  };
  auto code_of = [&](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(error_code_name(e.code()));
    } catch (const InsufficientCapacity&) {
      return std::string("insufficient_capacity");
    }
    return std::string("none");
  };

  std::string provisioning = book(a_, n, {0}, from_now(H(1), H(25)));
  std::string started = book(a_, n, {1}, from_now(H(1), H(25)));
  std::string after = book(b_, n, {1}, from_now(H(72), H(96)));  // GPU 1 two days on
  std::string tomorrow = book(a_, n, {2}, from_now(H(24), H(48)));
  EXPECT_EQ(run(t0_ + H(1)), 2);
  complete_all(started, true);
  EXPECT_EQ(run(t0_ + H(1) + kAfter), 1);
  ASSERT_EQ(rental(started).state, RentalState::kActive);
  ASSERT_EQ(rental(provisioning).state, RentalState::kProvisioning);
  EXPECT_EQ(extend(provisioning, 3).days, 4);
  EXPECT_EQ(extend(tomorrow, 2).period, from_now(H(24), H(96)));

  auto longer = extend(started, 1);
  EXPECT_EQ(longer.days, 2);
  EXPECT_EQ(longer.period, from_now(H(1), H(49)));
  auto held = read([&](Tx& tx) { return rentals_.allocations(tx, started); });
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].second.end, t0_ + H(49) + kWindow);
  // A second day more would run into org b's booking of GPU 1 (and its cleaning window).
  EXPECT_EQ(code_of([&] { extend(started, 1); }), "insufficient_capacity");
  EXPECT_EQ(rental(started).days, 2) << "nothing changed";
  EXPECT_EQ(code_of([&] { extend(tomorrow, 1, 3); }), "quota_exceeded");
  EXPECT_EQ(code_of([&] { extend(tomorrow, 363); }), "invalid_request");
  EXPECT_EQ(rental(tomorrow).days, 3) << "nothing changed";

  std::string waiting = pending(a_, t0_ + H(12));
  EXPECT_EQ(code_of([&] { extend(waiting, 1); }), "invalid_state");
  transact([&](Tx& tx) {
    lifecycle_.terminate(tx, *rentals_.lock_any(tx, started), clock_.now(), "done", a_.user_id);
  });
  EXPECT_EQ(code_of([&] { extend(started, 1); }), "invalid_state");
}

// A node failing under its rentals: the running ones are interrupted with the reason, their
// GPUs let go at once and the agent asked to revoke access; one not started yet moves to
// another node on the next run; one already releasing goes on. (No spare fits the active one:
// n2 has one GPU. handover_pgtest.cpp has the swap.)
TEST_F(LifecycleTest, ANodeFailingInterruptsWhatRunsOnIt) {
  std::string n1 = node("n1");
  std::string n2 = node("n2", "H100-SXM5-80GB", 1);
  std::string active = book(a_, n1, {0, 1}, from_now(H(1), H(25)));
  std::string starting = book(b_, n1, {2}, from_now(H(1), H(25)));
  std::string later = book(a_, n1, {3}, from_now(H(48), H(72)));
  EXPECT_EQ(run(t0_ + H(1)), 2);
  complete_all(active, true);
  EXPECT_EQ(run(t0_ + H(1) + kAfter), 1);
  ASSERT_EQ(rental(active).state, RentalState::kActive);
  ASSERT_EQ(rental(starting).state, RentalState::kProvisioning);

  auto interrupted = transact([&](Tx& tx) {
    nodes_.transition(tx, n1, inventory::NodeAction::kFail, "XID 79", std::nullopt);
    return lifecycle_.interrupt_node(tx, n1, "GPU 1: XID 79 (fell off the bus)", clock_.now());
  });
  EXPECT_EQ(interrupted.size(), 2u);
  for (const auto& id : {active, starting}) {
    EXPECT_EQ(rental(id).state, RentalState::kInterrupted) << id;
    for (const auto& [gpu, period] : read([&](Tx& tx) { return rentals_.allocations(tx, id); })) {
      EXPECT_LE(period.end, clock_.now()) << "GPU " << gpu << " let go at once";
    }
    auto queued = tasks(id);
    ASSERT_GE(queued.size(), 2u);
    EXPECT_EQ(queued[queued.size() - 2].kind, TaskKind::kRevokeAccess);
    EXPECT_EQ(queued.back().kind, TaskKind::kWipe);
  }
  EXPECT_EQ(tasks(starting).front().state, TaskState::kFailed) << "its provisioning abandoned";
  auto events = read([&](Tx& tx) { return rentals_.events(tx, a_.org_id, active); });
  EXPECT_EQ(events.back().reason, "GPU 1: XID 79 (fell off the bus)");
  // The rental for the day after starts elsewhere.
  run(clock_.now() + kAfter);
  EXPECT_EQ(rental(later).state, RentalState::kScheduled);
  EXPECT_EQ(rental(later).node_id, n2);
}

// A retirement and a start racing: the retirement's transaction has moved the node but not
// committed when the worker claims the rental, so the worker's look for stranded rentals
// misses it; the start waits on the node's row and, once the retirement commits, moves the
// rental to another node instead of starting it on the retired one.
TEST_F(LifecycleTest, AStartRacingTheNodesRetirementMovesTheRentalInstead) {
  std::string n1 = node("n1");
  std::string n2 = node("n2");
  std::string id = book(a_, n1, {0, 1}, from_now(H(1), H(25)));
  clock_.advance(H(1));
  pqxx::connection retiring(db_.url());
  pqxx::work retire(retiring);
  retire.exec_params("UPDATE nodes SET state = 'retired' WHERE id = $1", n1);
  std::thread worker([&] { lifecycle_.run_once(pool_, clock_.now()); });
  // Until the worker waits on the node's row lock, held by the retirement.
  pqxx::connection watch(db_.url());
  bool waiting = false;
  for (int i = 0; i < 500 && !waiting; ++i) {
    pqxx::nontransaction q(watch);
    waiting = q.exec1(
                   "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                   " AND query LIKE '%FROM nodes WHERE id = $1 FOR SHARE%'")[0]
                  .as<int>() > 0;
    if (!waiting) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  retire.commit();
  worker.join();
  ASSERT_TRUE(waiting) << "the worker never waited on the retiring node";
  auto r = rental(id);
  EXPECT_EQ(r.node_id, n2);
  EXPECT_EQ(r.state, RentalState::kScheduled) << "moved, not started";
  EXPECT_TRUE(tasks(id).empty()) << "nothing was asked of n1's agent";
  EXPECT_EQ(states(a_, id),
            (std::vector<RentalState>{RentalState::kScheduled, RentalState::kScheduled}))
      << "the move is an event";
  // The next run starts it on its new node.
  EXPECT_EQ(run(clock_.now() + std::chrono::seconds(1)), 1);
  EXPECT_EQ(rental(id).state, RentalState::kProvisioning);
  for (const auto& t : tasks(id)) EXPECT_EQ(t.node_id, n2);
}

TEST_F(LifecycleTest, AnUnconfirmedWipeEndsTheRentalAndSendsTheNodeToMaintenance) {
  std::string n = node("n1");
  std::string id = book(a_, n, {0}, from_now(H(1), H(25)));
  EXPECT_EQ(run(t0_ + H(1)), 1);
  complete_all(id, true);
  EXPECT_EQ(run(t0_ + H(1) + kAfter), 1);
  Timestamp end = t0_ + H(25);
  EXPECT_EQ(run(end), 1);
  // Three wipes fail in turn: two retries, then the rental ends without one.
  EXPECT_EQ(complete_all(id, false), 2);
  EXPECT_EQ(run(end + kAfter), 0);
  EXPECT_EQ(complete_all(id, false), 1);
  EXPECT_EQ(run(end + 2 * kAfter), 0);
  EXPECT_EQ(rental(id).state, RentalState::kReleasing);
  EXPECT_EQ(node_state(n), "available");
  EXPECT_EQ(complete_all(id, false), 1);
  EXPECT_EQ(run(end + 3 * kAfter), 1);
  EXPECT_EQ(rental(id).state, RentalState::kEnded);
  EXPECT_EQ(node_state(n), "maintenance");
}

// Which moves end a rental's billing and how: what never ran is not billed, what ran pays
// its started days, an interruption of a running rental is credited.
TEST(RentalBilling, EachMoveEndsTheBillingAsTheStateMachineSays) {
  using billing::Ending;
  using S = RentalState;
  struct Case {
    S from, to;
    std::optional<Ending> ending;
  };
  for (const auto& c : std::vector<Case>{
           {S::kPending, S::kCancelled, Ending::kNotDelivered},
           {S::kScheduled, S::kCancelled, Ending::kNotDelivered},
           {S::kProvisioning, S::kFailed, Ending::kNotDelivered},
           {S::kProvisioning, S::kReleasing, Ending::kNotDelivered},
           {S::kActive, S::kReleasing, Ending::kEnded},
           {S::kActive, S::kInterrupted, Ending::kInterrupted},
           {S::kProvisioning, S::kInterrupted, Ending::kNotDelivered},
           {S::kPending, S::kScheduled, std::nullopt},
           {S::kScheduled, S::kProvisioning, std::nullopt},
           {S::kProvisioning, S::kActive, std::nullopt},
           {S::kReleasing, S::kEnded, std::nullopt},
       }) {
    SCOPED_TRACE(std::string(to_string(c.from)) + " -> " + std::string(to_string(c.to)));
    EXPECT_EQ(billing_ending(c.from, c.to), c.ending);
  }
}

// The lifecycle's own moves carry the money: a rental's first day is captured when it
// becomes active, a node failing under it credits the lost hours, a cancelled booking gets
// all of its hold back.
TEST_F(LifecycleTest, MoneyFollowsTheLifecyclesMoves) {
  billing::Ledger ledger("RUB");
  billing::InvoiceStore invoices(clock_, "RUB", 2000);
  billing::RentalCharges charges(clock_, ledger, invoices, {});
  billing::TopUps top_ups(clock_, ledger);
  HandoverStore handovers;
  rentals_.on_transition([&](Tx& tx, const std::string& id, RentalState from, RentalState to) {
    bill_transition(tx, charges, rentals_, handovers, id, from, to, clock_.now());
  });
  transact([&](Tx& tx) {
    return top_ups.credit(tx, a_.org_id, Money(10'000'000, "RUB"), billing::CreditKind::kTopUp,
                          "test", std::nullopt);
  });
  std::string n1 = node("n1");
  auto held = [&](const std::string& id) {
    transact([&](Tx& tx) {
      charges.hold(tx,
                   {.rental_id = id,
                    .org_id = a_.org_id,
                    .description = id,
                    .day_price_minor = 2'400'000,
                    .days = 1},
                   {});
      return 0;
    });
    return id;
  };
  std::string runs = held(book(a_, n1, {0, 1}, from_now(H(1), H(25))));
  std::string cancelled = held(book(a_, n1, {2, 3}, from_now(H(48), H(72))));
  auto balance = [&] { return read([&](Tx& tx) { return ledger.balances(tx, a_.org_id); }); };
  EXPECT_EQ(balance().held.amount_minor(), 4'800'000);

  run(t0_ + H(1));
  complete_all(runs, true);
  run(t0_ + H(1) + kAfter);
  ASSERT_EQ(rental(runs).state, RentalState::kActive);
  EXPECT_EQ(count("SELECT count(*) FROM billing_charges WHERE rental_id = '" + runs + "'"), 1);
  EXPECT_EQ(balance().balance().amount_minor(), 10'000'000 - 2'400'000);

  transact([&](Tx& tx) {
    auto r = rentals_.lock_any(tx, cancelled);
    return lifecycle_.terminate(tx, *r, clock_.now(), "changed plans", std::nullopt);
  });
  EXPECT_EQ(balance().held.amount_minor(), 0);

  clock_.advance(H(5));  // 5 h into the day, 19 h (less the seconds run so far) left of it
  transact([&](Tx& tx) {
    nodes_.transition(tx, n1, inventory::NodeAction::kFail, "XID 79", std::nullopt);
    return lifecycle_.interrupt_node(tx, n1, "GPU 1: XID 79 (fell off the bus)", clock_.now());
  });
  ASSERT_EQ(rental(runs).state, RentalState::kInterrupted);
  // 19 lost hours (rounded up) of 2,400,000: 1,900,000 back.
  EXPECT_EQ(balance().balance().amount_minor(), 10'000'000 - 2'400'000 + 1'900'000);

  // A waiting request holds its money too, and gets it back when it expires unplaced.
  std::string waits = held(pending(a_, clock_.now() + H(1)));
  EXPECT_EQ(balance().held.amount_minor(), 2'400'000);
  run(clock_.now() + H(2));
  ASSERT_EQ(rental(waits).state, RentalState::kCancelled);
  EXPECT_EQ(balance().held.amount_minor(), 0);
  EXPECT_EQ(balance().balance().amount_minor(), 10'000'000 - 2'400'000 + 1'900'000);
  rentals_.on_transition(nullptr);
}

}  // namespace lifecycle_pgtest
}  // namespace gpurent::scheduler
