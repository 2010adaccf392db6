// Tests the keyed snapshot cache: one build per key until invalidated or too old, a build that
// raced with an invalidation not kept, and the bound on entries.
#include "core/keyed_snapshot_cache.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace gpurent {
namespace keyed_snapshot_cache_test {

using namespace std::chrono_literals;

TEST(KeyedSnapshotCache, BuildsEachKeyOnceUntilInvalidated) {
  KeyedSnapshotCache<int> cache(1h, 16);
  int builds = 0;
  auto build = [&](int v) {
    return [&builds, v] {
      ++builds;
      return v;
    };
  };
  EXPECT_EQ(*cache.get("a", build(1)), 1);
  EXPECT_EQ(*cache.get("a", build(2)), 1) << "a hit";
  EXPECT_EQ(*cache.get("b", build(3)), 3) << "another key is its own snapshot";
  EXPECT_EQ(builds, 2);
  cache.invalidate();
  EXPECT_EQ(*cache.get("a", build(4)), 4) << "every key dropped";
  EXPECT_EQ(*cache.get("b", build(5)), 5);
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 4u);
  EXPECT_EQ(cache.invalidations(), 1u);
}

TEST(KeyedSnapshotCache, AnAnswerOlderThanItsAgeIsBuiltAgain) {
  KeyedSnapshotCache<int> cache(20ms, 16);
  int builds = 0;
  auto build = [&] { return ++builds; };
  EXPECT_EQ(*cache.get("a", build), 1);
  EXPECT_EQ(*cache.get("a", build), 1);
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(*cache.get("a", build), 2);
}

TEST(KeyedSnapshotCache, ABuildThatRacedWithAChangeIsNotKept) {
  KeyedSnapshotCache<int> cache(1h, 16);
  int builds = 0;
  // The data changes while the first build reads it: its answer may predate the change.
  EXPECT_EQ(*cache.get("a",
                       [&] {
                         cache.invalidate();
                         return ++builds;
                       }),
            1);
  EXPECT_EQ(*cache.get("a", [&] { return ++builds; }), 2) << "built again";
  EXPECT_EQ(*cache.get("a", [&] { return ++builds; }), 2) << "and kept";
}

TEST(KeyedSnapshotCache, ABuildThatThrowsKeepsNothing) {
  KeyedSnapshotCache<int> cache(1h, 16);
  EXPECT_THROW(cache.get("a", []() -> int { throw std::runtime_error("no such model"); }),
               std::runtime_error);
  EXPECT_EQ(*cache.get("a", [] { return 7; }), 7);
}

TEST(KeyedSnapshotCache, StaysWithinItsNumberOfEntries) {
  KeyedSnapshotCache<int> cache(1h, 3);
  int builds = 0;
  auto build = [&] { return ++builds; };
  for (std::string key : {"a", "b", "c"}) cache.get(key, build);
  EXPECT_EQ(builds, 3);
  cache.get("d", build);  // over the bound: the rest go
  EXPECT_EQ(builds, 4);
  cache.get("d", build);
  EXPECT_EQ(builds, 4) << "the newest is kept";
  cache.get("a", build);
  EXPECT_EQ(builds, 5) << "the older ones were dropped";
}

}  // namespace keyed_snapshot_cache_test
}  // namespace gpurent
