// Injectable time source: production reads the system clock, tests move a TestClock.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

namespace gpurent {

using Timestamp = std::chrono::time_point<std::chrono::system_clock, std::chrono::microseconds>;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Timestamp now() const = 0;
};

class SystemClock final : public Clock {
 public:
  Timestamp now() const override;
};

// A clock that reads the system clock plus an offset that only moves forward, so tests
// (and the test-only admin route) can jump to "tomorrow" while time still passes.
class TestClock final : public Clock {
 public:
  Timestamp now() const override;
  void advance(std::chrono::microseconds by);
  std::chrono::microseconds offset() const { return std::chrono::microseconds(offset_us_.load()); }

 private:
  std::atomic<std::int64_t> offset_us_{0};
};

// RFC 3339 in UTC with second precision: 2026-12-01T00:00:00Z.
std::string format_rfc3339(Timestamp t);

}  // namespace gpurent
