// Booking from the replica's capacity copy against a real PostgreSQL: a booking chooses from
// the copy, confirms its choice by reading only the chosen node in its transaction, and
// claims it under the exclusion constraint. A copy that missed changes (announcements still
// on their way, or lost) never books a node twice or a node that left service; the model is
// loaded once however many bookings follow; and two replicas booking at once, each from its
// own copy, share the fleet's GPUs without an overlap and without refusing a free one.
#include "scheduler/tests/lifecycle_fixture.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <set>
#include <thread>

namespace gpurent::scheduler {
namespace booking_from_copy_pgtest {

// A replica's booking: its own copy, kept as if its listener were connected, though no
// announcement ever reaches it here, so that every change the copy learns of comes from the
// booking's own confirmations and refusals.
struct Replica {
  // The fixture's cleaning window (SchedulerTest::kWindow, which this cannot name).
  static constexpr std::chrono::hours kCleaning{2};
  Replica(const Clock& clock, inventory::CatalogStore& catalog, inventory::PriceStore& prices,
          RentalStore& rentals, OrgDirectory& orgs)
      : catalog_copy(catalog, prices, [] { return false; }),
        capacity(clock, candidates, [] { return true; }),
        booking(clock, catalog_copy, rentals, candidates, capacity, orgs,
                {.cleaning_window = kCleaning}) {}
  inventory::CatalogCopy catalog_copy;  // read from the stores: its own tests are inventory's
  CandidateStore candidates;
  CapacityIndex capacity;
  Booking booking;
};

class BookingFromCopyTest : public LifecycleTest {
 protected:
  void SetUp() override {
    LifecycleTest::SetUp();
    // One GPU at a time, for the tests that share nodes out GPU by GPU.
    exec(
        "INSERT INTO prices (gpu_model, gpu_count, amount_minor, currency, valid_from)"
        " VALUES ('H100-SXM5-80GB', 1, 312500, 'RUB', now() - interval '1 hour')");
  }

  Replica& replica() {
    replicas_.push_back(std::make_unique<Replica>(clock_, catalog_, prices_, rentals_, orgs_));
    return *replicas_.back();
  }

  BookingRequest request(int gpus) {
    BookingRequest r;
    r.org_id = a_.org_id;
    r.actor = {.user_id = a_.user_id};
    r.gpu_model = "H100-SXM5-80GB";
    r.gpu_count = gpus;
    r.link_need = LinkNeed::kNvlink;
    r.image_id = image_;
    r.start = t0_ + H(24);
    r.days = 1;
    return r;
  }

  // The node the booking took, or "refused" when nothing fit.
  std::string book(Replica& on, const BookingRequest& r) {
    try {
      return *transact([&](Tx& tx) { return on.booking.book(tx, r); }).node_id;
    } catch (const InsufficientCapacity&) {
      return "refused";
    }
  }

  // GPU periods that overlap another allocation of the same GPU: the exclusion constraint
  // forbids them, so anything but zero is a broken schema.
  long long overlaps() {
    return count(
        "SELECT count(*) FROM allocations a JOIN allocations b ON a.gpu_id = b.gpu_id"
        " AND a.rental_id < b.rental_id AND a.period && b.period");
  }

  std::vector<std::unique_ptr<Replica>> replicas_;
};

TEST_F(BookingFromCopyTest, AStaleCopyBooksEachNodeOnceAndLoadsTheModelOnce) {
  std::string n1 = node("n1"), n2 = node("n2"), n3 = node("n3");
  Replica& r = replica();
  // No announcement reaches this copy: after the first booking it still shows n1 free, and
  // every later booking's first choice is a node already taken. The confirmation reads that
  // node, finds it booked, marks it changed, and the next choice is taken.
  std::set<std::string> booked;
  for (int i = 0; i < 3; ++i) booked.insert(book(r, request(8)));
  EXPECT_EQ(booked, (std::set<std::string>{n1, n2, n3}));
  EXPECT_EQ(book(r, request(8)), "refused");
  EXPECT_EQ(overlaps(), 0);
  EXPECT_EQ(count("SELECT count(*) FROM rentals"), 3);
  auto stats = r.capacity.stats();
  EXPECT_EQ(stats.copies_loaded, 1u);
  EXPECT_EQ(stats.direct_loads, 0u);
  // The refused nodes were reloaded by later reads, not the whole model again.
  EXPECT_GE(stats.reloads, 1u);
  EXPECT_LE(stats.nodes_reloaded, 6u);
}

TEST_F(BookingFromCopyTest, ANodeThatLeftServiceSinceTheCopyWasMadeIsNotBooked) {
  std::string n1 = node("n1"), n2 = node("n2");
  Replica& r = replica();
  // The copy is made with both nodes available (a quote reads it), then the node it would
  // choose first goes into maintenance without the copy hearing of it.
  auto q = transact([&](Tx& tx) { return r.booking.quote(tx, request(8)); });
  ASSERT_TRUE(q.available);
  std::string first = q.preview->node_id, other = first == n1 ? n2 : n1;
  transact([&](Tx& tx) {
    nodes_.transition(tx, first, inventory::NodeAction::kMaintenance, "maintenance", std::nullopt);
  });
  EXPECT_EQ(book(r, request(8)), other);
  EXPECT_EQ(book(r, request(8)), "refused");
  EXPECT_EQ(r.capacity.stats().copies_loaded, 1u);
}

TEST_F(BookingFromCopyTest, TwoReplicasBookingAtOnceFillEveryGpuOnceFromTheirOwnCopies) {
  node("n1");
  node("n2");
  Replica& a = replica();
  Replica& b = replica();
  // Both copies made before either books: each knows nothing of the other's bookings but
  // what its confirmations and refusals tell it.
  transact([&](Tx& tx) { a.booking.quote(tx, request(1)); });
  transact([&](Tx& tx) { b.booking.quote(tx, request(1)); });
  std::atomic<int> booked{0}, refused{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&, c] {
      Replica& on = c % 2 == 0 ? a : b;
      for (int i = 0; i < 4; ++i) {
        (book(on, request(1)) == "refused" ? refused : booked)++;
      }
    });
  }
  for (auto& t : clients) t.join();
  // 32 requests for 16 GPUs: every GPU once, no request refused while one was free.
  EXPECT_EQ(booked.load(), 16);
  EXPECT_EQ(refused.load(), 16);
  EXPECT_EQ(overlaps(), 0);
  EXPECT_EQ(count("SELECT count(DISTINCT gpu_id) FROM allocations"), 16);
  EXPECT_EQ(a.capacity.stats().copies_loaded + b.capacity.stats().copies_loaded, 2u);
}

TEST_F(BookingFromCopyTest, ABookingInFlightOnTheSameReplicaIsNotWaitedFor) {
  node("n1");
  Replica& r = replica();
  transact([&](Tx& tx) { r.booking.quote(tx, request(1)); });  // the copy, made beforehand
  // The first booking has claimed its GPU and holds its transaction open; the second, on the
  // same replica and the same copy, chooses another GPU at once instead of queueing on the
  // first one's lock until it commits, only to be refused.
  std::promise<void> first_booked, second_done;
  std::optional<RentalRecord> first, second;
  std::future_status waited = std::future_status::timeout;
  std::thread holder([&] {
    transact([&](Tx& tx) {
      first = r.booking.book(tx, request(1));
      first_booked.set_value();
      // Without the claim the second would wait on this transaction: it is given 10 s.
      waited = second_done.get_future().wait_for(std::chrono::seconds(10));
    });
  });
  first_booked.get_future().wait();
  second = transact([&](Tx& tx) { return r.booking.book(tx, request(1)); });
  second_done.set_value();
  holder.join();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(waited, std::future_status::ready) << "the second booking waited for the first";
  EXPECT_NE(first->gpu_indices, second->gpu_indices);
  EXPECT_EQ(overlaps(), 0);
}

TEST_F(BookingFromCopyTest, AThousandNodesNeverAnalyzedAreBookedWithinTheStatementTimeout) {
  // Autovacuum would analyze the tables within a minute or so of a bulk enrolment; off here,
  // so that the fleet stays as an enrolment leaves it until the booking.
  exec(
      "ALTER TABLE nodes SET (autovacuum_enabled = off);"
      " ALTER TABLE gpus SET (autovacuum_enabled = off);"
      " ALTER TABLE gpu_links SET (autovacuum_enabled = off);"
      " ALTER TABLE allocations SET (autovacuum_enabled = off)");
  // A thousand 8-GPU nodes made as the admin API and the agents' hellos make them.
  for (int batch = 0; batch < 10; ++batch) {
    transact([&](Tx& tx) {
      for (int i = 0; i < 100; ++i) {
        inventory::NewNode n;
        n.site_id = site_;
        n.hostname = "bulk-" + std::to_string(batch * 100 + i);
        n.gpu_model = "H100-SXM5-80GB";
        n.gpu_count = 8;
        std::string id = nodes_.create(tx, n, admin_).node.node.id;
        nodes_.transition(tx, id, inventory::NodeAction::kEnrolled, "enrolled", std::nullopt);
        nodes_.set_health(tx, id, inventory::Health::kOk);
      }
    });
  }
  ASSERT_EQ(count("SELECT count(*) FROM pg_stat_user_tables WHERE relname = 'nodes'"
                  " AND last_analyze IS NULL AND last_autoanalyze IS NULL"),
            1);
  // A tenth of the pool's default: the statement that loads the model's candidates took
  // seconds on a fleet this size planned without statistics.
  PgPool tight{{.url = db_.url(), .size = 2, .statement_timeout = std::chrono::seconds(1)}};
  Replica& r = replica();
  auto rental = tight.transact("booking", [&](Tx& tx) { return r.booking.book(tx, request(1)); });
  EXPECT_TRUE(rental.node_id);
  auto quote = tight.transact("quote", [&](Tx& tx) { return r.booking.quote(tx, request(8)); });
  EXPECT_TRUE(quote.available);
}

}  // namespace booking_from_copy_pgtest
}  // namespace gpurent::scheduler
