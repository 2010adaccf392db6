// Snapshots of reads that take parameters (an availability calendar per shape and date
// range), each built on its first read and kept until the data behind them changes — every
// one is dropped at once on invalidate(), as SnapshotCache drops its single snapshot — or
// until it is older than `max_age`, for answers that also depend on the time of day.
#pragma once

#include "core/blocking.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace gpurent {

template <typename T>
class KeyedSnapshotCache {
 public:
  KeyedSnapshotCache(std::chrono::steady_clock::duration max_age, std::size_t max_entries)
      : max_age_(max_age), max_entries_(max_entries) {}

  // The snapshot for `key`, built by `build` when there is none or it is too old. A build
  // that raced with an invalidation is returned to its caller but not kept.
  std::shared_ptr<const T> get(const std::string& key, const std::function<T()>& build) {
    auto now = std::chrono::steady_clock::now();
    std::uint64_t generation;
    {
      std::lock_guard lock(mutex_);
      auto it = entries_.find(key);
      if (it != entries_.end() && now - it->second.built_at < max_age_) {
        hits_.fetch_add(1, std::memory_order_relaxed);
        return it->second.value;
      }
      generation = generation_;
    }
    may_block();
    misses_.fetch_add(1, std::memory_order_relaxed);
    auto built = std::make_shared<const T>(build());
    std::lock_guard lock(mutex_);
    if (generation == generation_) {
      // Bounded: past the limit everything goes, which a busy calendar rebuilds in turn.
      if (entries_.size() >= max_entries_ && !entries_.contains(key)) entries_.clear();
      entries_[key] = {built, now};
    }
    return built;
  }

  void invalidate() {
    std::lock_guard lock(mutex_);
    ++generation_;
    entries_.clear();
    invalidations_.fetch_add(1, std::memory_order_relaxed);
  }

  std::uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  std::uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }
  std::uint64_t invalidations() const { return invalidations_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    std::shared_ptr<const T> value;
    std::chrono::steady_clock::time_point built_at;
  };
  std::chrono::steady_clock::duration max_age_;
  std::size_t max_entries_;
  std::mutex mutex_;
  std::map<std::string, Entry> entries_;
  std::uint64_t generation_ = 0;
  std::atomic<std::uint64_t> hits_{0}, misses_{0}, invalidations_{0};
};

}  // namespace gpurent
