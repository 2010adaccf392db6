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
  std::time_t secs =
      std::chrono::system_clock::to_time_t(std::chrono::time_point_cast<std::chrono::seconds>(t));
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace gpurent
