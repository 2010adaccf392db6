// System and test clocks, and RFC 3339 formatting.
#include "core/clock.h"

#include <ctime>
#include <stdexcept>

namespace gpurent {

Timestamp SystemClock::now() const {
  return std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
}

Timestamp TestClock::now() const {
  return std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now()) +
         std::chrono::microseconds(offset_us_.load());
}

void TestClock::advance(std::chrono::microseconds by) {
  if (by.count() < 0) throw std::invalid_argument("a test clock only moves forward");
  offset_us_.fetch_add(by.count());
}

std::string format_rfc3339(Timestamp t) {
  // Straight from the microsecond count: system_clock::to_time_t goes through nanoseconds,
  // which overflow past the year 2262 (a hostile cursor can name any time).
  std::time_t secs = static_cast<std::time_t>(
      std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count());
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace gpurent
