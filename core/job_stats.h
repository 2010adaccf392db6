// How a background job has fared since the process started (its runs, its failures, its
// last success), counted where it runs and read by /metrics.
#pragma once

#include "core/clock.h"

#include <atomic>
#include <cstdint>
#include <optional>

namespace gpurent {

class JobStats {
 public:
  // Successes are timed by the system clock: Prometheus compares the time with its own, and
  // a test-mode clock runs ahead of it.
  JobStats();
  // `wall`: what times a success instead (tests).
  explicit JobStats(const Clock& wall);
  JobStats(const JobStats&) = delete;
  JobStats& operator=(const JobStats&) = delete;

  // Runs fn() and counts it: a return is a success, a throw a failure, rethrown as it is.
  template <typename Fn>
  void run(Fn&& fn) {
    try {
      fn();
    } catch (...) {
      failed();
      throw;
    }
    succeeded();
  }

  void succeeded();
  void failed();

  // Runs ended either way, and those that failed.
  std::uint64_t runs() const { return runs_.load(std::memory_order_relaxed); }
  std::uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }
  // When the last run that succeeded ended; nullopt before the first.
  std::optional<Timestamp> last_success() const;

 private:
  const Clock& wall_;
  std::atomic<std::uint64_t> runs_{0};
  std::atomic<std::uint64_t> failures_{0};
  std::atomic<std::int64_t> last_success_us_{0};  // 0: none yet
};

}  // namespace gpurent
