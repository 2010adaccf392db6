// Maintenance windows against a real PostgreSQL (scheduler/maintenance.h): a window planned
// days ahead moves the scheduled rentals it collides with to other GPUs for the same period,
// holds its node's GPUs so no booking takes them, refuses (changing nothing) within the notice
// lead time when a rental has started or cannot move, and frees the GPUs when cancelled.
#include "scheduler/maintenance.h"
#include "scheduler/tests/lifecycle_fixture.h"

#include <gtest/gtest.h>

#include <set>

namespace gpurent::scheduler {
namespace maintenance_pgtest {

class MaintenanceTest : public LifecycleTest {
 protected:
  // The window's GPUs held, as a booking of the same GPUs over `p` would find them.
  long long held_by_windows(const std::string& node_id) {
    return count(
        "SELECT count(*) FROM allocations a JOIN gpus g ON g.id = a.gpu_id WHERE g.node_id = '" +
        node_id + "' AND a.maintenance_id IS NOT NULL");
  }
  std::string expect_conflict(const std::vector<std::string>& nodes, const Period& p) {
    try {
      maintenance_.plan(nodes, p, "replace a PSU", std::nullopt);
      ADD_FAILURE() << "no conflict";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kConflict) << e.what();
      return e.details().dump();
    }
    return "";
  }

  NoticeStore notices_{clock_};
  Maintenance maintenance_{pool_, clock_, rentals_, lifecycle_, notices_};
};

TEST_F(MaintenanceTest, AWindowFiveDaysAheadMovesTheRentalsInItsWayAndHoldsTheNode) {
  std::string n1 = node("n1");
  std::string n2 = node("n2");
  // Two rentals on n1 inside the coming window, one after it; n2 free.
  std::string inside = book(a_, n1, {0, 1, 2, 3}, from_now(H(24 * 5), H(24 * 6)));
  std::string overlapping = book(b_, n1, {4, 5}, from_now(H(24 * 4), H(24 * 5 + 2)));
  std::string after = book(a_, n1, {0, 1}, from_now(H(24 * 8), H(24 * 9)));

  Period window = from_now(H(24 * 5), H(24 * 5 + 12));
  auto planned = maintenance_.plan({n1}, window, "replace a PSU", admin_.user_id);
  ASSERT_EQ(planned.windows.size(), 1u);
  EXPECT_EQ(planned.windows[0].node_id, n1);
  EXPECT_TRUE(planned.windows[0].id.starts_with("mnt_"));
  ASSERT_EQ(planned.moved.size(), 2u);
  for (const auto& m : planned.moved) {
    EXPECT_EQ(m.from_node_id, n1);
    EXPECT_EQ(m.to_node_id, n2) << m.rental_id;
  }
  // Same period, same state, on n2; their events say why.
  for (const auto& [id, tenant] : {std::pair{inside, a_}, std::pair{overlapping, b_}}) {
    auto r = rental(id);
    EXPECT_EQ(r.node_id, n2) << id;
    EXPECT_EQ(r.state, RentalState::kScheduled);
    auto events = read([&](Tx& tx) { return rentals_.events(tx, tenant.org_id, id); });
    EXPECT_NE(events.back().reason.find("maintenance of its node (replace a PSU)"),
              std::string::npos)
        << events.back().reason;
  }
  EXPECT_EQ(rental(inside).period.start, t0_ + H(24 * 5));
  // Each tenant has a notice of its own rental's move, and sees none of the other's.
  auto a_notices = read([&](Tx& tx) { return notices_.list(tx, a_.org_id, std::nullopt, 10); });
  ASSERT_EQ(a_notices.size(), 1u);
  EXPECT_EQ(a_notices[0].rental_id, inside);
  EXPECT_EQ(a_notices[0].kind, "moved");
  EXPECT_EQ(a_notices[0].maintenance_id, planned.windows[0].id);
  EXPECT_EQ(a_notices[0].effective_at, t0_ + H(24 * 5));
  EXPECT_NE(a_notices[0].message.find("to node " + n2), std::string::npos) << a_notices[0].message;
  EXPECT_TRUE(read([&](Tx& tx) { return notices_.list(tx, a_.org_id, overlapping, 10); }).empty());
  EXPECT_EQ(read([&](Tx& tx) { return notices_.list(tx, b_.org_id, overlapping, 10); }).size(), 1u);
  EXPECT_EQ(rental(after).node_id, n1) << "not in the window's way";
  EXPECT_EQ(held_by_windows(n1), 8);

  // No booking takes n1's GPUs in the window: a rental that wants them collides.
  std::string n3 = node("n3");
  EXPECT_NO_THROW(book(a_, n3, {0}, window));
  EXPECT_ANY_THROW(book(a_, n1, {6}, from_now(H(24 * 5 + 1), H(24 * 5 + 2))));

  auto listed = read([&](Tx& tx) { return maintenance_.list(tx, n1, false, false, 10); });
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].reason, "replace a PSU");
  EXPECT_EQ(listed[0].created_by, admin_.user_id);
}

// Within the notice lead time (72 h) a rental that has started, or one that cannot move,
// refuses the plan and nothing changes; with the lead time they stay, notified
// (handover_pgtest.cpp follows that path).
TEST_F(MaintenanceTest, WithinTheNoticeAStartedRentalOrOneThatCannotMoveRefusesThePlan) {
  std::string n1 = node("n1");
  std::string running = book(a_, n1, {0, 1}, from_now(H(0), H(24)));
  transact([&](Tx& tx) {
    return rentals_.transition(tx, running, RentalState::kScheduled, RentalState::kProvisioning,
                               "test");
  });
  std::string later = book(b_, n1, {2, 3}, from_now(H(48), H(72)));
  auto details = expect_conflict({n1}, from_now(H(12), H(24 * 2 + 1)));
  EXPECT_NE(details.find(running), std::string::npos) << details;
  EXPECT_NE(details.find(later), std::string::npos) << details;
  EXPECT_EQ(rental(later).node_id, n1) << "rolled back whole";
  EXPECT_EQ(held_by_windows(n1), 0);

  // Only n1 has H100s free: the scheduled rental has nowhere to go.
  details = expect_conflict({n1}, from_now(H(48), H(49)));
  EXPECT_NE(details.find(later), std::string::npos) << details;
  EXPECT_EQ(rental(later).node_id, n1);
  EXPECT_EQ(rental(later).state, RentalState::kScheduled);
  EXPECT_EQ(held_by_windows(n1), 0);
  EXPECT_EQ(count("SELECT count(*) FROM allocations WHERE rental_id = '" + later + "'"), 2);
}

// A window on a site: every node of it that is not retired, planned in one transaction.
TEST_F(MaintenanceTest, AWindowOnASiteHoldsEveryNodeOfItThatIsNotRetired) {
  std::string n1 = node("n1");
  std::string n2 = node("n2");
  std::string gone = node("n3");
  transact([&](Tx& tx) {
    return nodes_.transition(tx, gone, inventory::NodeAction::kRetire, "end of life", std::nullopt);
  });
  auto planned =
      maintenance_.plan_site(site_, from_now(H(48), H(50)), "site power work", std::nullopt);
  ASSERT_EQ(planned.windows.size(), 2u);
  std::set<std::string> covered;
  for (const auto& w : planned.windows) covered.insert(w.node_id);
  EXPECT_EQ(covered, (std::set<std::string>{n1, n2}));
  EXPECT_EQ(held_by_windows(n1), 8);
  EXPECT_EQ(held_by_windows(gone), 0);
  try {
    maintenance_.plan_site("sit_nosuchsite0000000000", from_now(H(48), H(50)), "x", std::nullopt);
    ADD_FAILURE() << "an unknown site was planned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

TEST_F(MaintenanceTest, CancellingFreesTheGpusAndBadRequestsAreNamed) {
  std::string n1 = node("n1");
  Period window = from_now(H(48), H(50));
  auto w = maintenance_.plan({n1}, window, "firmware", std::nullopt).windows.at(0);
  EXPECT_EQ(held_by_windows(n1), 8);
  auto cancelled = maintenance_.cancel(w.id);
  EXPECT_TRUE(cancelled.cancelled_at);
  EXPECT_EQ(held_by_windows(n1), 0);
  EXPECT_NO_THROW(book(a_, n1, {0}, window));
  try {
    maintenance_.cancel(w.id);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidState);
  }
  EXPECT_TRUE(read([&](Tx& tx) { return maintenance_.list(tx, n1, false, false, 10); }).empty());
  EXPECT_EQ(read([&](Tx& tx) { return maintenance_.list(tx, n1, false, true, 10); }).size(), 1u);

  struct Bad {
    std::vector<std::string> nodes;
    Period period;
    std::string reason, field;
  };
  for (const auto& b : std::vector<Bad>{
           {{}, window, "x", "node_ids"},
           {{n1, n1}, window, "x", "node_ids"},
           {{n1}, {window.end, window.start}, "x", "end"},
           {{n1}, from_now(H(1), H(24 * 31 + 2)), "x", "end"},
           {{n1}, from_now(H(-3), H(-1)), "x", "end"},
           {{n1}, window, "", "reason"},
       }) {
    try {
      maintenance_.plan(b.nodes, b.period, b.reason, std::nullopt);
      ADD_FAILURE() << b.field;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest) << b.field;
      EXPECT_EQ(e.details().value("field", ""), b.field) << e.what();
    }
  }
  try {
    maintenance_.plan({"nod_missing"}, window, "x", std::nullopt);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

}  // namespace maintenance_pgtest
}  // namespace gpurent::scheduler
