// RentalStore against a real PostgreSQL: creation with its first event, the exclusion
// constraint that forbids double booking (also under 16 concurrent bookings), savepoint
// retries, transitions with event rows, tenant-isolated keyset listings, extension, early
// termination and cancellation of allocations, the lifecycle worker's SKIP LOCKED claims, the
// waitlist and the guardrail count.
#include "scheduler/rental_store.h"

#include "core/db_errors.h"
#include "core/error.h"
#include "scheduler/tests/scheduler_fixture.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <mutex>
#include <set>
#include <thread>

namespace gpurent::scheduler {
namespace rental_store_pgtest {

class RentalStoreTest : public SchedulerTest {
 protected:
  std::optional<RentalRecord> get_any(const std::string& id) {
    return read([&](Tx& tx) { return rentals_.get_any(tx, id); });
  }

  bool transition(const std::string& id, RentalState from, RentalState to,
                  const std::string& reason = "step",
                  const std::optional<std::string>& actor = std::nullopt) {
    return transact([&](Tx& tx) { return rentals_.transition(tx, id, from, to, reason, actor); });
  }

  // A booked rental walked through the lifecycle to `state` (scheduled, provisioning, active,
  // releasing or ended).
  std::string rental_in(RentalState state, const std::string& node_id, int gpu, const Period& p) {
    std::string id = book(a_, node_id, {gpu}, p);
    const RentalState path[] = {RentalState::kScheduled, RentalState::kProvisioning,
                                RentalState::kActive, RentalState::kReleasing, RentalState::kEnded};
    for (std::size_t i = 0; path[i] != state; ++i) {
      EXPECT_TRUE(transition(id, path[i], path[i + 1]));
    }
    return id;
  }

  long long allocations_of(const std::string& rental_id) {
    return count("SELECT count(*) FROM allocations WHERE rental_id = '" + rental_id + "'");
  }

  // Overlapping allocations of one GPU anywhere in the database: always zero.
  long long overlaps() {
    return count(
        "SELECT count(*) FROM allocations a JOIN allocations b ON a.gpu_id = b.gpu_id"
        " AND a.rental_id < b.rental_id AND a.period && b.period");
  }

  std::vector<std::string> ids(const std::vector<RentalRecord>& rs) {
    std::vector<std::string> out;
    for (const auto& r : rs) out.push_back(r.id);
    return out;
  }
};

TEST_F(RentalStoreTest, CreateStoresTheBookingAndItsFirstEvent) {
  std::string n = node("hgx-1");
  auto request = booking(a_, n, {2, 3}, hours(0, 48));
  request.days = 2;
  request.name = "training run";
  request.ssh_key_ids = {"key_1", "key_\"2\""};
  request.link_need = LinkNeed::kAny;
  request.created_by_token = std::nullopt;
  auto created = transact([&](Tx& tx) { return rentals_.create(tx, request); });

  EXPECT_TRUE(is_valid_id(id_prefix::kRental, created.id)) << created.id;
  EXPECT_EQ(created.org_id, a_.org_id);
  EXPECT_EQ(created.created_by, a_.user_id);
  EXPECT_EQ(created.name, "training run");
  EXPECT_EQ(created.state, RentalState::kScheduled);
  EXPECT_EQ(created.gpu_model, "H100-SXM5-80GB");
  EXPECT_EQ(created.gpu_count, 2);
  EXPECT_EQ(created.link_need, LinkNeed::kAny);
  EXPECT_EQ(created.node_id, n);
  EXPECT_EQ(created.gpu_indices, (std::vector<int>{2, 3}));
  EXPECT_EQ(created.period, hours(0, 48));
  EXPECT_EQ(created.days, 2);
  EXPECT_EQ(created.image_id, image_);
  EXPECT_EQ(created.ssh_key_ids, (std::vector<std::string>{"key_1", "key_\"2\""}));
  EXPECT_EQ(created.price_per_day, Money(2'500'000, "RUB"));
  EXPECT_EQ(created.total_price(), Money(5'000'000, "RUB"));
  EXPECT_EQ(created.price_id, price_id_);
  EXPECT_FALSE(created.wait_for_capacity);
  EXPECT_FALSE(created.pending_expires_at);
  EXPECT_EQ(created.state_changed_at, created.created_at);
  EXPECT_EQ(created.attempts, 0);
  EXPECT_EQ(get_any(created.id)->period, created.period);

  auto events = read([&](Tx& tx) { return rentals_.events(tx, a_.org_id, created.id); });
  ASSERT_EQ(events.size(), 1u);
  EXPECT_FALSE(events[0].from_state);
  EXPECT_EQ(events[0].to_state, RentalState::kScheduled);
  EXPECT_EQ(events[0].reason, "booked");
  EXPECT_EQ(events[0].actor_user_id, a_.user_id);
  EXPECT_EQ(events[0].at, created.created_at);
  EXPECT_EQ(allocations_of(created.id), 0) << "allocations come from allocate()";

  auto pending = booking(a_, std::nullopt, {}, hours(0, 24), RentalState::kPending);
  pending.wait_for_capacity = true;
  pending.pending_expires_at = at(-1);
  auto waiting = transact([&](Tx& tx) { return rentals_.create(tx, pending); });
  EXPECT_EQ(waiting.state, RentalState::kPending);
  EXPECT_FALSE(waiting.node_id);
  EXPECT_TRUE(waiting.gpu_indices.empty());
  EXPECT_TRUE(waiting.wait_for_capacity);
  EXPECT_EQ(waiting.pending_expires_at, at(-1));

  auto active = booking(a_, n, {0}, hours(0, 24), RentalState::kActive);
  EXPECT_THROW(transact([&](Tx& tx) { return rentals_.create(tx, active); }),
               std::invalid_argument);
}

// The schema keeps placements whole: a scheduled rental has a node and exactly its GPUs.
TEST_F(RentalStoreTest, TheSchemaRefusesAPlacementThatDoesNotAddUp) {
  std::string n = node("hgx-1");
  auto check_failure = [&](NewRental r) {
    try {
      transact([&](Tx& tx) { return rentals_.create(tx, r); });
    } catch (const ConstraintViolation& v) {
      return v.kind();
    }
    return DbFailure::kOther;
  };
  auto no_node = booking(a_, std::nullopt, {}, hours(0, 24));
  no_node.gpu_count = 1;
  EXPECT_EQ(check_failure(no_node), DbFailure::kCheckViolation);
  auto short_of_gpus = booking(a_, n, {0}, hours(0, 24));
  short_of_gpus.gpu_count = 2;
  EXPECT_EQ(check_failure(short_of_gpus), DbFailure::kCheckViolation);
  EXPECT_EQ(check_failure(booking(a_, n, {0}, {at(5), at(5)})), DbFailure::kCheckViolation);
  EXPECT_EQ(count("SELECT count(*) FROM rentals"), 0);
}

TEST_F(RentalStoreTest, OverlappingAllocationsOfOneGpuAreRefusedByTheDatabase) {
  std::string n = node("hgx-1");
  std::string first = book(a_, n, {0, 1}, hours(0, 48));
  EXPECT_EQ(allocations_of(first), 2);
  try {
    book(b_, n, {1, 2}, hours(24, 72));
    FAIL() << "double booked GPU 1";
  } catch (const ConstraintViolation& v) {
    EXPECT_EQ(v.kind(), DbFailure::kExclusionViolation);
    EXPECT_EQ(v.sqlstate(), "23P01");
    EXPECT_EQ(v.constraint(), "allocations_no_overlap");
  }
  // The whole booking rolled back: no rental, no allocation of GPU 2 either.
  EXPECT_EQ(count("SELECT count(*) FROM rentals"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM allocations"), 2);
  // The cleaning window is part of what the database enforces: a booking starting inside
  // the first one's window is refused too.
  EXPECT_THROW(book(b_, n, {0}, hours(49, 60)), ConstraintViolation);
  EXPECT_EQ(overlaps(), 0);
}

TEST_F(RentalStoreTest, TouchingPeriodsAreBothAccepted) {
  std::string n = node("hgx-1");
  // [0, 22) + 2 h window = [0, 24); the next starts at 24.
  std::string first = book(a_, n, {0}, hours(0, 22));
  std::string second = book(b_, n, {0}, hours(24, 48));
  EXPECT_EQ(allocations_of(first), 1);
  EXPECT_EQ(allocations_of(second), 1);
  auto allocs = read([&](Tx& tx) { return rentals_.allocations(tx, first); });
  ASSERT_EQ(allocs.size(), 1u);
  EXPECT_EQ(allocs[0].first, 0);
  EXPECT_EQ(allocs[0].second, hours(0, 24));
  EXPECT_EQ(overlaps(), 0);
}

TEST_F(RentalStoreTest, InsideAnAttemptTheBookingGoesOnToTheNextCandidate) {
  std::string busy = node("hgx-busy");
  std::string free = node("hgx-free");
  book(b_, busy, {0}, hours(0, 48));

  struct Outcome {
    std::string id;
    DbFailure first_failure;
    std::string first_constraint;
    bool second_ok;
  };
  auto outcome = transact([&](Tx& tx) {
    auto r = rentals_.create(tx, booking(a_, busy, {0}, hours(10, 20)));
    auto first = tx.attempt("candidate_1", [&](Tx& inner) {
      rentals_.allocate(inner, r.id, busy, {0}, occupied(hours(10, 20)));
    });
    EXPECT_FALSE(first.ok());
    auto second = tx.attempt("candidate_2", [&](Tx& inner) {
      rentals_.allocate(inner, r.id, free, {0}, occupied(hours(10, 20)));
    });
    return Outcome{r.id, first.failure(), first.violation().constraint(), second.ok()};
  });
  EXPECT_EQ(outcome.first_failure, DbFailure::kExclusionViolation);
  EXPECT_EQ(outcome.first_constraint, "allocations_no_overlap");
  EXPECT_TRUE(outcome.second_ok);
  auto r = get_any(outcome.id);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->node_id, free) << "allocate() moved the placement to the node that took it";
  EXPECT_EQ(r->gpu_indices, std::vector<int>{0});
  EXPECT_EQ(count("SELECT count(*) FROM allocations a JOIN gpus g ON g.id = a.gpu_id"
                  " WHERE a.rental_id = '" +
                  outcome.id + "' AND g.node_id = '" + free + "'"),
            1);
  EXPECT_EQ(allocations_of(outcome.id), 1);
}

TEST_F(RentalStoreTest, AllocatingAnUnknownGpuIsAProgrammingError) {
  std::string n = node("l4", "L4-24GB", 2);
  EXPECT_THROW(transact([&](Tx& tx) {
                 auto r = rentals_.create(tx, booking(a_, n, {5}, hours(0, 24)));
                 rentals_.allocate(tx, r.id, n, {5}, occupied(hours(0, 24)));
               }),
               std::invalid_argument);
  EXPECT_EQ(count("SELECT count(*) FROM rentals"), 0);
}

// Sixteen bookings of one GPU over overlapping periods, released at once, each in its own
// transaction: the database lets exactly one through.
TEST_F(RentalStoreTest, ConcurrentBookingsOfOneGpuHaveExactlyOneWinner) {
  std::string n = node("hgx-1");
  constexpr int kBookings = 16;
  PgPool pool({.url = db_.url(), .size = kBookings});
  std::latch go(kBookings);
  std::mutex mu;
  std::vector<std::string> winners, losers;
  std::atomic<int> other_errors{0};
  std::atomic<int> runs{0};  // transact() runs a booking again after a deadlock
  std::vector<std::thread> threads;
  for (int i = 0; i < kBookings; ++i) {
    threads.emplace_back([&, i] {
      Period p = hours(i, i + 24);  // every pair overlaps
      std::string id;
      go.arrive_and_wait();
      try {
        pool.transact("book", [&](Tx& tx) {
          ++runs;
          auto r = rentals_.create(tx, booking(i % 2 ? a_ : b_, n, {3}, p));
          id = r.id;
          rentals_.allocate(tx, r.id, n, {3}, occupied(p));
        });
        std::lock_guard lock(mu);
        winners.push_back(id);
      } catch (const ConstraintViolation& v) {
        EXPECT_EQ(v.kind(), DbFailure::kExclusionViolation);
        std::lock_guard lock(mu);
        losers.push_back(id);
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
        ++other_errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(other_errors.load(), 0);
  ASSERT_EQ(winners.size(), 1u);
  EXPECT_EQ(runs.load(), kBookings) << "every loser saw the violation, none deadlocked";
  EXPECT_EQ(losers.size(), static_cast<std::size_t>(kBookings - 1));
  EXPECT_EQ(overlaps(), 0);
  EXPECT_EQ(allocations_of(winners[0]), 1);
  EXPECT_TRUE(get_any(winners[0]));
  for (const auto& id : losers) {
    EXPECT_FALSE(get_any(id)) << id;
    EXPECT_EQ(allocations_of(id), 0) << id;
  }
  EXPECT_EQ(count("SELECT count(*) FROM rentals"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM rental_events"), 1);
}

TEST_F(RentalStoreTest, TransitionsMoveOnlyFromTheExpectedStateAndWriteEvents) {
  std::string n = node("hgx-1");
  std::string id = book(a_, n, {0}, hours(0, 24));
  clock_.advance(std::chrono::seconds(5));
  EXPECT_TRUE(transition(id, RentalState::kScheduled, RentalState::kProvisioning, "start due"));
  EXPECT_FALSE(transition(id, RentalState::kScheduled, RentalState::kCancelled, "too late"));
  EXPECT_FALSE(transition(id, RentalState::kActive, RentalState::kReleasing, "stale view"));
  EXPECT_FALSE(transition("rnt_0000000000000000000000", RentalState::kScheduled,
                          RentalState::kProvisioning));
  transact([&](Tx& tx) { return rentals_.set_next_check(tx, id, at(1)); });
  EXPECT_EQ(get_any(id)->next_check_at, at(1));
  EXPECT_EQ(transact([&](Tx& tx) { return rentals_.add_attempt(tx, id); }), 1);
  EXPECT_EQ(transact([&](Tx& tx) { return rentals_.add_attempt(tx, id); }), 2);
  EXPECT_TRUE(transition(id, RentalState::kProvisioning, RentalState::kActive, "ssh ready"));
  EXPECT_TRUE(
      transition(id, RentalState::kActive, RentalState::kReleasing, "terminated", a_.user_id));

  auto r = get_any(id);
  EXPECT_EQ(r->state, RentalState::kReleasing);
  EXPECT_FALSE(r->next_check_at) << "a check time belongs to the state it was set in";
  EXPECT_EQ(r->attempts, 2);
  EXPECT_GT(r->state_changed_at, r->created_at);

  auto events = read([&](Tx& tx) { return rentals_.events(tx, a_.org_id, id); });
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[1].from_state, RentalState::kScheduled);
  EXPECT_EQ(events[1].to_state, RentalState::kProvisioning);
  EXPECT_EQ(events[1].reason, "start due");
  EXPECT_FALSE(events[1].actor_user_id);
  EXPECT_EQ(events[2].to_state, RentalState::kActive);
  EXPECT_EQ(events[3].from_state, RentalState::kActive);
  EXPECT_EQ(events[3].to_state, RentalState::kReleasing);
  EXPECT_EQ(events[3].actor_user_id, a_.user_id);
  EXPECT_EQ(events[3].at, r->state_changed_at);
  for (std::size_t i = 1; i < events.size(); ++i) EXPECT_GE(events[i].at, events[i - 1].at);
  EXPECT_TRUE(read([&](Tx& tx) { return rentals_.events(tx, b_.org_id, id); }).empty())
      << "another org's rental has no events to show";
}

// Two replicas see the same scheduled rental due and both try to start it: one does.
TEST_F(RentalStoreTest, ConcurrentTransitionsOfOneRentalMoveItOnce) {
  std::string n = node("hgx-1");
  for (int round = 0; round < 5; ++round) {
    std::string id = book(a_, n, {round}, hours(0, 24));
    constexpr int kReplicas = 4;
    std::latch go(kReplicas);
    std::atomic<int> moved{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kReplicas; ++i) {
      threads.emplace_back([&] {
        go.arrive_and_wait();
        if (transition(id, RentalState::kScheduled, RentalState::kProvisioning)) ++moved;
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(moved.load(), 1) << "round " << round;
    EXPECT_EQ(count("SELECT count(*) FROM rental_events WHERE rental_id = '" + id + "'"), 2);
  }
}

TEST_F(RentalStoreTest, TenantsSeeOnlyTheirOwnRentals) {
  std::string n = node("hgx-1");
  std::string mine = book(a_, n, {0}, hours(0, 24));
  std::string theirs = book(b_, n, {1}, hours(0, 24));
  EXPECT_TRUE(read([&](Tx& tx) { return rentals_.get(tx, a_.org_id, mine); }));
  EXPECT_FALSE(read([&](Tx& tx) { return rentals_.get(tx, a_.org_id, theirs); }));
  EXPECT_FALSE(read([&](Tx& tx) { return rentals_.get(tx, a_.org_id, "rnt_nope"); }));
  EXPECT_TRUE(transact([&](Tx& tx) { return rentals_.lock(tx, a_.org_id, mine); }));
  EXPECT_FALSE(transact([&](Tx& tx) { return rentals_.lock(tx, a_.org_id, theirs); }));
  EXPECT_EQ(transact([&](Tx& tx) { return rentals_.lock_any(tx, theirs); })->org_id, b_.org_id);
  auto page = read([&](Tx& tx) { return rentals_.list(tx, a_.org_id, std::nullopt, 50, {}); });
  EXPECT_EQ(ids(page.items), std::vector<std::string>{mine});
  EXPECT_FALSE(page.next_cursor);
}

TEST_F(RentalStoreTest, ListsPageNewestFirstWithAStateFilter) {
  std::string n = node("hgx-1");
  std::vector<std::string> created;  // oldest first
  for (int i = 0; i < 5; ++i) {
    clock_.advance(std::chrono::seconds(1));
    created.push_back(book(a_, n, {i}, hours(0, 24)));
  }
  book(b_, n, {7}, hours(0, 24));
  ASSERT_TRUE(transition(created[1], RentalState::kScheduled, RentalState::kCancelled));
  ASSERT_TRUE(transition(created[3], RentalState::kScheduled, RentalState::kCancelled));

  std::vector<std::string> seen;
  std::optional<std::string> cursor;
  int pages = 0;
  do {
    auto page = read([&](Tx& tx) { return rentals_.list(tx, a_.org_id, std::nullopt, 2, cursor); });
    for (const auto& r : page.items) {
      EXPECT_EQ(r.org_id, a_.org_id);
      seen.push_back(r.id);
    }
    cursor = page.next_cursor;
    ++pages;
  } while (cursor);
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(seen,
            (std::vector<std::string>{created[4], created[3], created[2], created[1], created[0]}));

  auto cancelled = read([&](Tx& tx) {
    return rentals_.list(tx, a_.org_id, RentalState::kCancelled, 50, std::nullopt);
  });
  EXPECT_EQ(ids(cancelled.items), (std::vector<std::string>{created[3], created[1]}));

  // A rental created between two page reads lands before the cursor: nothing repeats.
  auto first = read([&](Tx& tx) { return rentals_.list(tx, a_.org_id, std::nullopt, 2, {}); });
  clock_.advance(std::chrono::seconds(1));
  book(a_, n, {6}, hours(0, 24));
  auto second = read(
      [&](Tx& tx) { return rentals_.list(tx, a_.org_id, std::nullopt, 2, first.next_cursor); });
  EXPECT_EQ(ids(second.items), (std::vector<std::string>{created[2], created[1]}));

  for (const std::string& bad :
       std::vector<std::string>{"nonsense", "123.nod_0000000000000000000000", "-5." + created[0]}) {
    try {
      read([&](Tx& tx) { return rentals_.list(tx, a_.org_id, std::nullopt, 2, bad); });
      ADD_FAILURE() << "accepted cursor " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
      EXPECT_EQ(e.details().value("field", ""), "cursor");
    }
  }
}

TEST_F(RentalStoreTest, AdminListingFiltersByOrgStateAndNode) {
  std::string n1 = node("hgx-1");
  std::string n2 = node("hgx-2");
  std::string a1 = book(a_, n1, {0}, hours(0, 24));
  clock_.advance(std::chrono::seconds(1));
  std::string a2 = book(a_, n2, {0}, hours(0, 24));
  clock_.advance(std::chrono::seconds(1));
  std::string b1 = book(b_, n1, {1}, hours(0, 24));
  ASSERT_TRUE(transition(a2, RentalState::kScheduled, RentalState::kCancelled));

  auto list = [&](RentalFilter f, int limit = 50) {
    return ids(read([&](Tx& tx) { return rentals_.list_all(tx, f, limit, {}); }).items);
  };
  EXPECT_EQ(list({}), (std::vector<std::string>{b1, a2, a1}));
  EXPECT_EQ(list({.org_id = a_.org_id}), (std::vector<std::string>{a2, a1}));
  EXPECT_EQ(list({.node_id = n1}), (std::vector<std::string>{b1, a1}));
  EXPECT_EQ(list({.state = RentalState::kScheduled}), (std::vector<std::string>{b1, a1}));
  EXPECT_EQ(list({.org_id = a_.org_id, .state = RentalState::kScheduled, .node_id = n1}),
            std::vector<std::string>{a1});

  auto first = read([&](Tx& tx) { return rentals_.list_all(tx, {}, 2, {}); });
  ASSERT_TRUE(first.next_cursor);
  auto rest = read([&](Tx& tx) { return rentals_.list_all(tx, {}, 2, first.next_cursor); });
  EXPECT_EQ(ids(rest.items), std::vector<std::string>{a1});
  EXPECT_FALSE(rest.next_cursor);

  auto on_n1 = read([&](Tx& tx) { return rentals_.node_rentals(tx, n1, 10); });
  EXPECT_EQ(ids(on_n1), (std::vector<std::string>{b1, a1}));
  EXPECT_EQ(ids(read([&](Tx& tx) { return rentals_.node_rentals(tx, n1, 1); })),
            std::vector<std::string>{b1});
}

TEST_F(RentalStoreTest, ExtensionMovesTheEndLaterUnlessTheGpusAreBooked) {
  std::string n = node("hgx-1");
  std::string mine = book(a_, n, {0, 1}, hours(0, 24));  // occupies [0, 26)
  book(b_, n, {1}, hours(30, 54));                       // occupies [30, 56)

  // To 48 h: GPU 1 is booked from 30 h. Inside an attempt the transaction goes on.
  auto refused = transact([&](Tx& tx) {
    auto attempt = tx.attempt("extend", [&](Tx& inner) {
      return rentals_.extend_allocations(inner, mine, at(48), 2, kWindow);
    });
    return attempt.ok() ? DbFailure::kOther : attempt.failure();
  });
  EXPECT_EQ(refused, DbFailure::kExclusionViolation);
  auto unchanged = get_any(mine);
  EXPECT_EQ(unchanged->period, hours(0, 24));
  EXPECT_EQ(unchanged->days, 1);

  // To 28 h: occupies [0, 30), touching the other booking.
  EXPECT_TRUE(
      transact([&](Tx& tx) { return rentals_.extend_allocations(tx, mine, at(28), 2, kWindow); }));
  auto extended = get_any(mine);
  EXPECT_EQ(extended->period, hours(0, 28));
  EXPECT_EQ(extended->days, 2);
  auto allocs = read([&](Tx& tx) { return rentals_.allocations(tx, mine); });
  ASSERT_EQ(allocs.size(), 2u);
  for (const auto& [gpu, p] : allocs) EXPECT_EQ(p, hours(0, 30)) << "GPU " << gpu;

  // Never shorter, and nothing for an unknown rental.
  EXPECT_FALSE(
      transact([&](Tx& tx) { return rentals_.extend_allocations(tx, mine, at(20), 1, kWindow); }));
  EXPECT_FALSE(transact([&](Tx& tx) {
    return rentals_.extend_allocations(tx, "rnt_0000000000000000000000", at(90), 4, kWindow);
  }));
  EXPECT_EQ(get_any(mine)->period, hours(0, 28));
  EXPECT_EQ(overlaps(), 0);
}

TEST_F(RentalStoreTest, EarlyTerminationFreesTheGpusAfterTheWindowAndCancellationDropsThem) {
  std::string n = node("hgx-1");
  std::string running = book(a_, n, {0, 1}, hours(0, 48));  // occupies [0, 50)
  std::string later = book(a_, n, {2}, hours(100, 124));    // occupies [100, 126)

  // Terminated at 10 h: the GPUs are free from 12 h, after the wipe.
  EXPECT_EQ(
      transact([&](Tx& tx) { return rentals_.end_allocations(tx, running, at(10), kWindow); }), 2);
  for (const auto& [gpu, p] : read([&](Tx& tx) { return rentals_.allocations(tx, running); })) {
    EXPECT_EQ(p, hours(0, 12)) << "GPU " << gpu;
  }
  EXPECT_EQ(get_any(running)->period, hours(0, 48)) << "the booked period stays on record";
  EXPECT_THROW(book(b_, n, {0}, hours(11, 20)), ConstraintViolation);
  std::string next = book(b_, n, {0}, hours(12, 20));
  EXPECT_EQ(allocations_of(next), 1);
  // Ending it again later changes nothing.
  EXPECT_EQ(
      transact([&](Tx& tx) { return rentals_.end_allocations(tx, running, at(20), kWindow); }), 0);

  // Ended before it started: nothing is left of its allocation.
  EXPECT_EQ(transact([&](Tx& tx) { return rentals_.end_allocations(tx, later, at(50), kWindow); }),
            1);
  EXPECT_EQ(allocations_of(later), 0);

  EXPECT_EQ(transact([&](Tx& tx) { return rentals_.drop_allocations(tx, next); }), 1);
  EXPECT_EQ(allocations_of(next), 0);
  EXPECT_EQ(transact([&](Tx& tx) { return rentals_.drop_allocations(tx, next); }), 0);
  EXPECT_TRUE(get_any(next)) << "the rental itself stays";
}

TEST_F(RentalStoreTest, DueFindsEachStepWhoseTimeHasCome) {
  std::string n = node("hgx-1");
  Timestamp now = at(100);
  std::string start_due = rental_in(RentalState::kScheduled, n, 0, hours(90, 200));
  rental_in(RentalState::kScheduled, n, 1, hours(101, 200));  // starts later
  std::string end_due = rental_in(RentalState::kActive, n, 2, hours(0, 100));
  rental_in(RentalState::kActive, n, 3, hours(0, 101));  // ends later
  std::string check_due = rental_in(RentalState::kProvisioning, n, 4, hours(0, 200));
  transact([&](Tx& tx) { return rentals_.set_next_check(tx, check_due, at(99)); });
  std::string check_later = rental_in(RentalState::kProvisioning, n, 5, hours(0, 200));
  transact([&](Tx& tx) { return rentals_.set_next_check(tx, check_later, at(101)); });
  rental_in(RentalState::kProvisioning, n, 6, hours(0, 200));  // no check set
  std::string release_due = rental_in(RentalState::kReleasing, n, 7, hours(0, 50));
  transact([&](Tx& tx) { return rentals_.set_next_check(tx, release_due, at(60)); });
  std::string n2 = node("hgx-2");
  rental_in(RentalState::kEnded, n2, 0, hours(0, 50));  // final: never due
  transact([&](Tx& tx) {
    return rentals_.create(tx, booking(a_, std::nullopt, {}, hours(0, 24), RentalState::kPending));
  });

  auto due = transact([&](Tx& tx) { return rentals_.due(tx, now, 50); });
  std::set<std::string> got;
  for (const auto& r : due) got.insert(r.id);
  EXPECT_EQ(got, (std::set<std::string>{start_due, end_due, check_due, release_due}));
  // Earliest first by due time: the release (60 h), the start (90), the check (99), the end
  // (100).
  ASSERT_EQ(due.size(), 4u);
  EXPECT_EQ(due[0].id, release_due);
  EXPECT_EQ(due[1].id, start_due);
  EXPECT_EQ(due[2].id, check_due);
  EXPECT_EQ(due[3].id, end_due);
  EXPECT_EQ(transact([&](Tx& tx) { return rentals_.due(tx, now, 2); }).size(), 2u);

  // Once moved on, it is no longer due.
  ASSERT_TRUE(transition(start_due, RentalState::kScheduled, RentalState::kProvisioning));
  auto after = transact([&](Tx& tx) { return rentals_.due(tx, now, 50); });
  EXPECT_EQ(after.size(), 3u);
}

// Two replicas run the worker at once: the second skips what the first holds.
TEST_F(RentalStoreTest, DueClaimsAreDisjointAcrossConcurrentTransactions) {
  std::string n = node("hgx-1");
  std::set<std::string> all;
  for (int i = 0; i < 6; ++i) all.insert(rental_in(RentalState::kScheduled, n, i, hours(i, 200)));
  Timestamp now = at(100);

  std::latch claimed(1), release(1);
  std::vector<std::string> first_ids;
  std::thread first([&] {
    transact([&](Tx& tx) {
      for (const auto& r : rentals_.due(tx, now, 3)) first_ids.push_back(r.id);
      claimed.count_down();
      release.wait();  // holds its row locks until the second has claimed
    });
  });
  claimed.wait();
  std::vector<RentalRecord> second;
  try {
    second = transact([&](Tx& tx) { return rentals_.due(tx, now, 50); });
  } catch (...) {
    release.count_down();
    first.join();
    throw;
  }
  release.count_down();
  first.join();

  ASSERT_EQ(first_ids.size(), 3u);
  ASSERT_EQ(second.size(), 3u) << "the second claims only what the first does not hold";
  std::set<std::string> union_ids(first_ids.begin(), first_ids.end());
  for (const auto& r : second) {
    EXPECT_FALSE(union_ids.count(r.id)) << r.id << " claimed twice";
    union_ids.insert(r.id);
  }
  EXPECT_EQ(union_ids, all);
}

TEST_F(RentalStoreTest, TheWaitlistIsServedInOrderAndExpires) {
  std::string n = node("hgx-1");
  auto wait = [&](std::optional<Timestamp> expires) {
    clock_.advance(std::chrono::seconds(1));
    auto r = booking(a_, std::nullopt, {}, hours(0, 24), RentalState::kPending);
    r.wait_for_capacity = true;
    r.pending_expires_at = expires;
    return transact([&](Tx& tx) { return rentals_.create(tx, r); }).id;
  };
  std::string first = wait(at(10));
  std::string second = wait(at(1000));
  std::string third = wait(std::nullopt);
  EXPECT_EQ(ids(transact([&](Tx& tx) { return rentals_.pending_in_order(tx, 10); })),
            (std::vector<std::string>{first, second, third}));
  EXPECT_EQ(ids(transact([&](Tx& tx) { return rentals_.pending_in_order(tx, 2); })),
            (std::vector<std::string>{first, second}));

  auto expired = transact([&](Tx& tx) { return rentals_.expire_pending(tx, at(50)); });
  ASSERT_EQ(ids(expired), std::vector<std::string>{first});
  EXPECT_EQ(expired[0].state, RentalState::kCancelled);
  EXPECT_EQ(expired[0].state_changed_at, at(50));
  auto events = read([&](Tx& tx) { return rentals_.events(tx, a_.org_id, first); });
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].from_state, RentalState::kPending);
  EXPECT_EQ(events[1].to_state, RentalState::kCancelled);
  EXPECT_TRUE(transact([&](Tx& tx) { return rentals_.expire_pending(tx, at(50)); }).empty());

  // Capacity turns up for the next in line: placed, allocated, scheduled.
  transact([&](Tx& tx) {
    auto head = rentals_.pending_in_order(tx, 1);
    EXPECT_EQ(ids(head), std::vector<std::string>{second});
    EXPECT_TRUE(rentals_.set_placement(tx, second, n, {4}, hours(30, 54)));
    rentals_.allocate(tx, second, n, {4}, occupied(hours(30, 54)));
    EXPECT_TRUE(rentals_.transition(tx, second, RentalState::kPending, RentalState::kScheduled,
                                    "capacity found"));
  });
  auto placed = get_any(second);
  EXPECT_EQ(placed->state, RentalState::kScheduled);
  EXPECT_EQ(placed->node_id, n);
  EXPECT_EQ(placed->gpu_indices, std::vector<int>{4});
  EXPECT_EQ(placed->period, hours(30, 54));
  EXPECT_EQ(allocations_of(second), 1);
  EXPECT_EQ(ids(transact([&](Tx& tx) { return rentals_.pending_in_order(tx, 10); })),
            std::vector<std::string>{third});
}

TEST_F(RentalStoreTest, ActiveGpuCountIsWhatTheOrgHoldsOrHasBooked) {
  std::string n = node("hgx-1");
  EXPECT_EQ(read([&](Tx& tx) { return rentals_.active_gpu_count(tx, a_.org_id); }), 0);
  book(a_, n, {0, 1}, hours(0, 24));                          // scheduled: 2
  rental_in(RentalState::kActive, n, 2, hours(0, 24));        // active: 1
  rental_in(RentalState::kProvisioning, n, 3, hours(0, 24));  // provisioning: 1
  rental_in(RentalState::kEnded, n, 4, hours(0, 24));         // ended: no
  rental_in(RentalState::kReleasing, n, 5, hours(0, 24));     // releasing: no
  transact([&](Tx& tx) {                                      // pending: no
    return rentals_.create(tx, booking(a_, std::nullopt, {}, hours(0, 24), RentalState::kPending));
  });
  book(b_, n, {6, 7}, hours(0, 24));  // another org's
  EXPECT_EQ(read([&](Tx& tx) { return rentals_.active_gpu_count(tx, a_.org_id); }), 4);
  EXPECT_EQ(read([&](Tx& tx) { return rentals_.active_gpu_count(tx, b_.org_id); }), 2);
}

TEST(RentalStateNames, RoundTripAndRefuseUnknownNames) {
  for (RentalState s : kAllRentalStates) EXPECT_EQ(parse_rental_state(to_string(s)), s);
  EXPECT_FALSE(parse_rental_state("Active"));
  EXPECT_FALSE(parse_rental_state(""));
  EXPECT_EQ(to_string(RentalState::kInterrupted), "interrupted");
  EXPECT_EQ(parse_link_need("any"), LinkNeed::kAny);
  EXPECT_FALSE(parse_link_need("NVLINK"));
}

}  // namespace rental_store_pgtest
}  // namespace gpurent::scheduler
