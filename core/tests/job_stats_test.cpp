// Tests JobStats: a run that returns is a success timed by the given clock, one that throws
// a failure rethrown as it was, and nothing before the first run.
#include "core/job_stats.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace gpurent {
namespace job_stats_test {

using namespace std::chrono_literals;

TEST(JobStats, StartsAtZeroWithNoSuccess) {
  JobStats stats;
  EXPECT_EQ(stats.runs(), 0u);
  EXPECT_EQ(stats.failures(), 0u);
  EXPECT_FALSE(stats.last_success());
}

TEST(JobStats, ASuccessIsARunAtTheClocksTime) {
  TestClock clock;
  JobStats stats(clock);
  clock.advance(1h);
  Timestamp before = clock.now();
  stats.run([] {});
  Timestamp after = clock.now();
  EXPECT_EQ(stats.runs(), 1u);
  EXPECT_EQ(stats.failures(), 0u);
  ASSERT_TRUE(stats.last_success());
  EXPECT_GE(*stats.last_success(), before);
  EXPECT_LE(*stats.last_success(), after);
}

TEST(JobStats, AFailureIsARunRethrownAndKeepsTheLastSuccess) {
  TestClock clock;
  JobStats stats(clock);
  stats.run([] {});
  auto succeeded_at = stats.last_success();
  clock.advance(1h);
  EXPECT_THROW(stats.run([] { throw std::runtime_error("database is down"); }), std::runtime_error);
  EXPECT_THROW(stats.run([] { throw 42; }), int);
  EXPECT_EQ(stats.runs(), 3u);
  EXPECT_EQ(stats.failures(), 2u);
  EXPECT_EQ(stats.last_success(), succeeded_at);
}

TEST(JobStats, TheDefaultClockIsTheSystemClock) {
  JobStats stats;
  Timestamp before = SystemClock().now();
  stats.succeeded();
  ASSERT_TRUE(stats.last_success());
  EXPECT_GE(*stats.last_success(), before);
  EXPECT_LE(*stats.last_success(), SystemClock().now());
}

}  // namespace job_stats_test
}  // namespace gpurent
