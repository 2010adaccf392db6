// NoBlockingScope and the snapshot cache's refusal to rebuild where blocking is forbidden.
#include "core/blocking.h"
#include "core/snapshot_cache.h"

#include <gtest/gtest.h>

#include <thread>

namespace gpurent {
namespace blocking_test {

TEST(Blocking, AScopeForbidsBlockingOnItsThreadUntilItEnds) {
  EXPECT_FALSE(blocking_forbidden());
  EXPECT_NO_THROW(may_block());
  {
    NoBlockingScope outer;
    EXPECT_TRUE(blocking_forbidden());
    EXPECT_THROW(may_block(), WouldBlock);
    {
      NoBlockingScope inner;
      EXPECT_TRUE(blocking_forbidden());
    }
    EXPECT_TRUE(blocking_forbidden()) << "the inner scope restores the outer one's mark";
    bool other_thread_forbidden = true;
    std::thread([&] { other_thread_forbidden = blocking_forbidden(); }).join();
    EXPECT_FALSE(other_thread_forbidden) << "the mark is the thread's own";
  }
  EXPECT_FALSE(blocking_forbidden());
}

TEST(Blocking, ASnapshotIsServedButNotBuiltWhereBlockingIsForbidden) {
  int builds = 0;
  SnapshotCache<int> cache([&builds] { return ++builds; });
  {
    NoBlockingScope no_blocking;
    EXPECT_THROW(cache.get(), WouldBlock);
  }
  EXPECT_EQ(builds, 0) << "no build was started";
  EXPECT_EQ(cache.misses(), 0u) << "an abandoned attempt is not a miss";
  EXPECT_EQ(*cache.get(), 1);
  {
    NoBlockingScope no_blocking;
    EXPECT_EQ(*cache.get(), 1) << "a snapshot in memory is served";
  }
  cache.invalidate();
  {
    NoBlockingScope no_blocking;
    EXPECT_THROW(cache.get(), WouldBlock);
  }
  EXPECT_EQ(*cache.get(), 2);
  EXPECT_EQ(builds, 2);
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 2u);
}

}  // namespace blocking_test
}  // namespace gpurent
