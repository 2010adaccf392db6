// JobStats: relaxed atomics, written by the job's thread and read by a scrape.
#include "core/job_stats.h"

namespace gpurent {
namespace {

const SystemClock kSystemClock;

}  // namespace

JobStats::JobStats() : wall_(kSystemClock) {}

JobStats::JobStats(const Clock& wall) : wall_(wall) {}

void JobStats::succeeded() {
  last_success_us_.store(wall_.now().time_since_epoch().count(), std::memory_order_relaxed);
  runs_.fetch_add(1, std::memory_order_relaxed);
}

void JobStats::failed() {
  failures_.fetch_add(1, std::memory_order_relaxed);
  runs_.fetch_add(1, std::memory_order_relaxed);
}

std::optional<Timestamp> JobStats::last_success() const {
  std::int64_t us = last_success_us_.load(std::memory_order_relaxed);
  if (us == 0) return std::nullopt;
  return Timestamp(std::chrono::microseconds(us));
}

}  // namespace gpurent
