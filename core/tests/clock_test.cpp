// Tests the system and test clocks and RFC 3339 formatting.
#include "core/clock.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace gpurent {
namespace clock_test {

using namespace std::chrono_literals;

Timestamp from_seconds(std::int64_t s) {
  return Timestamp(std::chrono::seconds(s));
}

Timestamp system_now() {
  return std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
}

TEST(SystemClock, ReadsTheSystemClock) {
  SystemClock clock;
  Timestamp before = system_now();
  Timestamp now = clock.now();
  Timestamp after = system_now();
  EXPECT_LE(before, now);
  EXPECT_LE(now, after);
}

TEST(TestClock, StartsAtSystemTime) {
  TestClock clock;
  EXPECT_EQ(clock.offset(), 0us);
  Timestamp before = system_now();
  Timestamp now = clock.now();
  Timestamp after = system_now();
  EXPECT_LE(before, now);
  EXPECT_LE(now, after);
}

TEST(TestClock, AdvanceMovesNowForward) {
  TestClock clock;
  clock.advance(24h);
  clock.advance(30min);
  EXPECT_EQ(clock.offset(), 24h + 30min);
  Timestamp before = system_now();
  Timestamp now = clock.now();
  Timestamp after = system_now();
  EXPECT_LE(before + 24h + 30min, now);
  EXPECT_LE(now, after + 24h + 30min);
}

TEST(TestClock, AdvanceByZeroIsAllowed) {
  TestClock clock;
  clock.advance(0us);
  EXPECT_EQ(clock.offset(), 0us);
}

TEST(TestClock, RefusesToMoveBackward) {
  TestClock clock;
  clock.advance(1h);
  EXPECT_THROW(clock.advance(-1us), std::invalid_argument);
  EXPECT_EQ(clock.offset(), 1h);
}

TEST(TestClock, UsableThroughTheInterface) {
  TestClock test_clock;
  const Clock& clock = test_clock;
  Timestamp a = clock.now();
  test_clock.advance(48h);
  EXPECT_GE(clock.now() - a, 48h);
}

TEST(FormatRfc3339, Epoch) {
  EXPECT_EQ(format_rfc3339(from_seconds(0)), "1970-01-01T00:00:00Z");
}

TEST(FormatRfc3339, KnownInstants) {
  EXPECT_EQ(format_rfc3339(from_seconds(1796083200)), "2026-12-01T00:00:00Z");
  EXPECT_EQ(format_rfc3339(from_seconds(951868799)), "2000-02-29T23:59:59Z");
}

TEST(FormatRfc3339, TruncatesToSeconds) {
  EXPECT_EQ(format_rfc3339(from_seconds(1796083200) + 999'999us), "2026-12-01T00:00:00Z");
  EXPECT_EQ(format_rfc3339(from_seconds(1796083200) + 1s), "2026-12-01T00:00:01Z");
}

// A hostile list cursor can name any microsecond count; formatting it must not overflow
// (the sanitizer build stops the server on signed overflow).
TEST(FormatRfc3339, FarFutureDoesNotOverflow) {
  EXPECT_EQ(format_rfc3339(Timestamp(999'999'999'999'999'999us)), "33658-09-27T01:46:39Z");
}

}  // namespace clock_test
}  // namespace gpurent
