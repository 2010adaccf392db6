// CapacityIndex against a real PostgreSQL: a model's copy is loaded once and then served from
// memory; announced nodes are reloaded and nothing else; a copy kept current through random
// changes equals a fresh load; without a listener nothing is kept. And the announcements
// themselves (migrations/0010): every change that decides capacity names its node on
// gpurent_capacity, a heartbeat or a repeated health report names nothing.
#include "core/notify_listener.h"
#include "core/sql.h"
#include "scheduler/capacity_index.h"
#include "scheduler/tests/scheduler_fixture.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <thread>

namespace gpurent::scheduler {
namespace capacity_index_pgtest {

// The fixture's Hours(from, to) hides std::chrono::hours here.
using Hours = std::chrono::hours;

class CapacityIndexTest : public SchedulerTest {
 protected:
  CapacityIndex::Candidates read_index(const std::string& model, const Period& window) {
    return read([&](Tx& tx) { return index_.candidates(tx, model, window); });
  }

  // A window of the coming days, as a calendar asks for one.
  Period days_ahead(int from, int to) const {
    return {t0_ + Hours(24 * from), t0_ + Hours(24 * to)};
  }

  static std::vector<Period> busy_of(const NodeCandidate& c, int gpu, const Period& window) {
    std::vector<Period> out;
    for (const auto& g : c.gpus) {
      if (g.index != gpu) continue;
      for (const auto& p : g.busy) {
        if (p.start < window.end && window.start < p.end) out.push_back(p);
      }
    }
    std::sort(out.begin(), out.end(),
              [](const Period& a, const Period& b) { return a.start < b.start; });
    return out;
  }

  const NodeCandidate* find(const CapacityIndex::Candidates& cs, const std::string& id) {
    for (const auto& c : *cs) {
      if (c->node_id == id) return c.get();
    }
    return nullptr;
  }

  // What the index says equals a fresh load, as far as the window goes.
  void expect_same_as_load(const std::string& model, const Period& window) {
    auto indexed = read_index(model, window);
    auto loaded = read([&](Tx& tx) { return candidates_.load(tx, model, window); });
    ASSERT_EQ(indexed->size(), loaded.size());
    for (std::size_t i = 0; i < loaded.size(); ++i) {
      const auto& a = *(*indexed)[i];
      const auto& b = loaded[i];
      SCOPED_TRACE(b.node_id);
      ASSERT_EQ(a.node_id, b.node_id);
      EXPECT_EQ(a.site_id, b.site_id);
      EXPECT_EQ(a.interconnect, b.interconnect);
      EXPECT_TRUE(a.links == b.links);
      ASSERT_EQ(a.gpus.size(), b.gpus.size());
      for (std::size_t g = 0; g < b.gpus.size(); ++g) {
        EXPECT_EQ(a.gpus[g].index, b.gpus[g].index);
        EXPECT_EQ(a.gpus[g].healthy, b.gpus[g].healthy);
        auto pa = busy_of(a, b.gpus[g].index, window);
        auto pb = busy_of(b, b.gpus[g].index, window);
        ASSERT_EQ(pa.size(), pb.size()) << "GPU " << b.gpus[g].index;
        for (std::size_t k = 0; k < pb.size(); ++k) {
          EXPECT_EQ(pa[k].start, pb[k].start);
          EXPECT_EQ(pa[k].end, pb[k].end);
        }
      }
    }
  }

  const Timestamp t0_ = std::chrono::time_point_cast<std::chrono::seconds>(clock_.now());
  std::atomic<bool> listening_{true};
  CapacityIndex index_{clock_, candidates_, [this] { return listening_.load(); }};
};

TEST_F(CapacityIndexTest, ACopyIsServedFromMemoryUntilItsNodeIsAnnounced) {
  std::string n1 = node("h-1");
  std::string n2 = node("h-2");
  const Period window = days_ahead(0, 30);
  auto first = read_index("H100-SXM5-80GB", window);
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ(index_.stats().copies_loaded, 1u);

  // Booked behind the index's back: the copy does not know until the node is announced.
  const Period p{t0_ + Hours(30), t0_ + Hours(54)};
  book(a_, n1, {0, 1}, p);
  auto unannounced = read_index("H100-SXM5-80GB", window);
  EXPECT_EQ(unannounced, first) << "the same copy, read from memory";
  EXPECT_TRUE(busy_of(*find(unannounced, n1), 0, window).empty());
  EXPECT_EQ(index_.stats().served, 1u);

  index_.node_changed(n1);
  auto announced = read_index("H100-SXM5-80GB", window);
  ASSERT_EQ(busy_of(*find(announced, n1), 0, window).size(), 1u);
  EXPECT_EQ(busy_of(*find(announced, n1), 0, window)[0].start, p.start);
  EXPECT_TRUE(busy_of(*find(announced, n2), 0, window).empty());
  auto stats = index_.stats();
  EXPECT_EQ(stats.copies_loaded, 1u) << "no second load of the whole model";
  EXPECT_EQ(stats.reloads, 1u);
  EXPECT_EQ(stats.nodes_reloaded, 1u);
  // The other node's entry is the very same object: only the announced one was rebuilt.
  EXPECT_EQ(find(announced, n2), find(first, n2));
}

TEST_F(CapacityIndexTest, ANodeThatStopsBeingBookableLeavesAndComesBack) {
  std::string n1 = node("h-1");
  std::string n2 = node("h-2");
  const Period window = days_ahead(0, 30);
  ASSERT_EQ(read_index("H100-SXM5-80GB", window)->size(), 2u);

  exec("UPDATE nodes SET state = 'draining' WHERE id = '" + n1 + "'");
  index_.node_changed(n1);
  auto drained = read_index("H100-SXM5-80GB", window);
  ASSERT_EQ(drained->size(), 1u);
  EXPECT_EQ((*drained)[0]->node_id, n2);

  exec("UPDATE nodes SET state = 'available' WHERE id = '" + n1 + "'");
  exec("UPDATE gpus SET health = 'critical' WHERE node_id = '" + n1 + "' AND idx = 3");
  index_.node_changed(n1);
  auto back = read_index("H100-SXM5-80GB", window);
  ASSERT_EQ(back->size(), 2u);
  EXPECT_FALSE(find(back, n1)->gpus[3].healthy);
  EXPECT_EQ(index_.stats().copies_loaded, 1u);
}

TEST_F(CapacityIndexTest, ACopyKeptCurrentThroughRandomChangesEqualsAFreshLoad) {
  std::vector<std::string> nodes;
  for (int i = 0; i < 6; ++i) nodes.push_back(node("h-" + std::to_string(i)));
  nodes.push_back(node("p-1", "H100-SXM5-80GB", 4, "pcie"));
  const Period window = days_ahead(0, 30);
  read_index("H100-SXM5-80GB", window);

  std::mt19937 rng(20261130);
  std::vector<std::pair<std::string, std::string>> rentals;  // id, node
  for (int step = 0; step < 60; ++step) {
    std::string changed = nodes[rng() % nodes.size()];
    switch (rng() % 5) {
      case 0:
      case 1: {  // a booking, if its GPU is free then
        int gpu = static_cast<int>(rng() % 4);
        int day = static_cast<int>(rng() % 25);
        Period p{t0_ + Hours(24 * day + 1), t0_ + Hours(24 * (day + 1 + rng() % 3) + 1)};
        try {
          rentals.emplace_back(book(a_, changed, {gpu}, p), changed);
        } catch (const std::exception&) {
          // overlapping an earlier booking: nothing changed
        }
        break;
      }
      case 2:  // an early end: the allocation shrinks
        if (!rentals.empty()) {
          const auto& [id, on] = rentals[rng() % rentals.size()];
          exec(
              "UPDATE allocations SET period = tstzrange(lower(period), lower(period) +"
              " interval '1 hour') WHERE rental_id = '" +
              id + "'");
          changed = on;
        }
        break;
      case 3:  // a cancellation
        if (!rentals.empty()) {
          const auto& [id, on] = rentals[rng() % rentals.size()];
          exec("DELETE FROM allocations WHERE rental_id = '" + id + "'");
          changed = on;
        }
        break;
      case 4:  // a GPU's health
        exec("UPDATE gpus SET health = '" + std::string(rng() % 2 ? "ok" : "warning") +
             "' WHERE node_id = '" + changed + "' AND idx = " + std::to_string(rng() % 4));
        break;
    }
    // Every change touches one node; the database announces it, the test tells the index
    // (the announcements themselves are checked below).
    index_.node_changed(changed);
    if (step % 3 == 0) index_.node_changed(nodes[rng() % nodes.size()]);  // and some noise
    if (step % 10 == 9) expect_same_as_load("H100-SXM5-80GB", window);
  }
  expect_same_as_load("H100-SXM5-80GB", window);
  expect_same_as_load("H100-SXM5-80GB", days_ahead(3, 4));
  EXPECT_EQ(index_.stats().copies_loaded, 1u);
}

TEST_F(CapacityIndexTest, WithoutAListenerNothingIsKept) {
  std::string n1 = node("h-1");
  listening_ = false;
  const Period window = days_ahead(0, 30);
  read_index("H100-SXM5-80GB", window);
  book(a_, n1, {0}, {t0_ + Hours(30), t0_ + Hours(54)});
  // Not announced, and still seen: each read went to the database.
  EXPECT_EQ(busy_of(*find(read_index("H100-SXM5-80GB", window), n1), 0, window).size(), 1u);
  auto stats = index_.stats();
  EXPECT_EQ(stats.direct_loads, 2u);
  EXPECT_EQ(stats.copies_loaded, 0u);
}

TEST_F(CapacityIndexTest, EverythingChangedDropsEveryCopy) {
  std::string n1 = node("h-1");
  const Period window = days_ahead(0, 30);
  read_index("H100-SXM5-80GB", window);
  book(a_, n1, {0}, {t0_ + Hours(30), t0_ + Hours(54)});
  index_.everything_changed();
  EXPECT_EQ(busy_of(*find(read_index("H100-SXM5-80GB", window), n1), 0, window).size(), 1u);
  EXPECT_EQ(index_.stats().copies_loaded, 2u);
}

TEST_F(CapacityIndexTest, WindowsBeyondItsReachAreReadFromTheDatabase) {
  std::string n1 = node("h-1");
  read_index("H100-SXM5-80GB", days_ahead(0, 30));
  const Period far = days_ahead(500, 510);
  book(a_, n1, {0}, {far.start + Hours(1), far.start + Hours(25)});
  EXPECT_EQ(busy_of(*find(read_index("H100-SXM5-80GB", far), n1), 0, far).size(), 1u);
  auto stats = index_.stats();
  EXPECT_EQ(stats.direct_loads, 1u);
  EXPECT_EQ(stats.copies_loaded, 1u) << "the covered copy stays";
  read_index("H100-SXM5-80GB", days_ahead(0, 30));
  EXPECT_EQ(index_.stats().served, 1u);
}

TEST_F(CapacityIndexTest, AnOldCopyIsLoadedAfresh) {
  node("h-1");
  read_index("H100-SXM5-80GB", days_ahead(0, 30));
  clock_.advance(CapacityIndex::Options{}.max_age + Hours(1));
  read_index("H100-SXM5-80GB", days_ahead(8, 30));
  EXPECT_EQ(index_.stats().copies_loaded, 2u);
}

TEST_F(CapacityIndexTest, ModelsHaveCopiesOfTheirOwn) {
  std::string h = node("h-1");
  std::string a = node("a-1", "A100-SXM4-80GB");
  const Period window = days_ahead(0, 30);
  auto h100 = read_index("H100-SXM5-80GB", window);
  auto a100 = read_index("A100-SXM4-80GB", window);
  ASSERT_EQ(h100->size(), 1u);
  ASSERT_EQ(a100->size(), 1u);
  EXPECT_EQ((*a100)[0]->node_id, a);
  // An announcement reaches both copies; each keeps only its own model.
  index_.node_changed(a);
  index_.node_changed(h);
  EXPECT_EQ(read_index("H100-SXM5-80GB", window)->size(), 1u);
  EXPECT_EQ((*read_index("A100-SXM4-80GB", window))[0]->node_id, a);
  EXPECT_EQ(index_.stats().nodes_reloaded, 4u);
}

// The announcements of migrations/0010, heard as another replica hears them.
class CapacityAnnouncementsTest : public SchedulerTest {
 protected:
  void SetUp() override {
    SchedulerTest::SetUp();
    listener_.subscribe("gpurent_capacity", [this](const std::string& payload) {
      std::lock_guard lock(mutex_);
      heard_.push_back(payload);
    });
    listener_.start();
    for (int i = 0; i < 500 && !listener_.connected(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(listener_.connected());
  }

  // What was heard from `sql`: the announcements between a marker sent before it and one
  // sent after it (a session's notifications arrive in commit order; earlier changes' late
  // announcements come before the first marker).
  std::vector<std::string> heard_after(const std::string& sql) {
    const std::string before = "marker-" + std::to_string(++markers_);
    const std::string after = "marker-" + std::to_string(++markers_);
    exec("SELECT pg_notify('gpurent_capacity', '" + before + "')");
    exec(sql);
    exec("SELECT pg_notify('gpurent_capacity', '" + after + "')");
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard lock(mutex_);
        auto from = std::find(heard_.begin(), heard_.end(), before);
        auto to = std::find(heard_.begin(), heard_.end(), after);
        if (to != heard_.end()) {
          if (from == heard_.end()) break;
          return std::vector<std::string>(from + 1, to);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "the markers never arrived";
    return {};
  }

  NotifyListener listener_{{.url = db_.url(), .reconnect_delay = std::chrono::milliseconds(50)}};
  std::mutex mutex_;
  std::vector<std::string> heard_;
  int markers_ = 0;
};

TEST_F(CapacityAnnouncementsTest, EachChangeNamesItsNodeOnce) {
  std::string n1 = node("h-1");
  std::string n2 = node("h-2");
  using V = std::vector<std::string>;
  // A booking of eight GPUs: one announcement.
  const Timestamp t = std::chrono::time_point_cast<std::chrono::seconds>(clock_.now());
  std::string rental = book(a_, n1, {0, 1, 2, 3, 4, 5, 6, 7}, {t + Hours(1), t + Hours(25)});
  EXPECT_EQ(heard_after("UPDATE allocations SET period = tstzrange(lower(period), lower(period)"
                        " + interval '2 hours') WHERE rental_id = '" +
                        rental + "'"),
            V{n1});
  EXPECT_EQ(heard_after("DELETE FROM allocations WHERE rental_id = '" + rental + "'"), V{n1});
  EXPECT_EQ(heard_after("UPDATE nodes SET state = 'draining' WHERE id = '" + n2 + "'"), V{n2});
  EXPECT_EQ(heard_after("UPDATE gpus SET health = 'warning' WHERE node_id = '" + n2 + "'"), V{n2});
  EXPECT_EQ(heard_after("UPDATE gpu_links SET kind = 'NV12' WHERE node_id = '" + n1 + "'"), V{n1});
  EXPECT_EQ(heard_after("TRUNCATE gpu_links"), V{"*"});
}

TEST_F(CapacityAnnouncementsTest, HeartbeatsAndRepeatedReportsNameNothing) {
  std::string n1 = node("h-1");
  using V = std::vector<std::string>;
  EXPECT_EQ(heard_after("UPDATE nodes SET last_heartbeat_at = now() WHERE id = '" + n1 + "'"), V{});
  EXPECT_EQ(heard_after("UPDATE nodes SET health = 'ok' WHERE id = '" + n1 + "'"), V{});
  EXPECT_EQ(heard_after("UPDATE gpus SET health = 'ok' WHERE node_id = '" + n1 + "'"), V{});
  EXPECT_EQ(heard_after("UPDATE nodes SET state = 'available' WHERE id = '" + n1 + "'"), V{});
}

}  // namespace capacity_index_pgtest
}  // namespace gpurent::scheduler
