// An in-memory snapshot of data that changes rarely (the GPU catalog, images), rebuilt on
// the first read after invalidate(). Replicas invalidate theirs when PostgreSQL notifies
// them of a change (NotifyListener), and the replica that made the change does so itself.
#pragma once

#include "core/blocking.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

namespace gpurent {

template <typename T>
class SnapshotCache {
 public:
  explicit SnapshotCache(std::function<T()> build) : build_(std::move(build)) {}

  // The current snapshot, building it when there is none. A build that raced with an
  // invalidation is returned to its caller but not kept: it may predate the change. Where
  // blocking is forbidden (core/blocking.h), a missing snapshot throws WouldBlock.
  std::shared_ptr<const T> get() {
    std::uint64_t generation;
    {
      std::lock_guard lock(mutex_);
      if (snapshot_) {
        hits_.fetch_add(1, std::memory_order_relaxed);
        return snapshot_;
      }
      generation = generation_;
    }
    may_block();  // a build reads the database: not on a network thread
    misses_.fetch_add(1, std::memory_order_relaxed);
    auto built = std::make_shared<const T>(build_());
    std::lock_guard lock(mutex_);
    if (generation == generation_) snapshot_ = built;
    return built;
  }

  void invalidate() {
    std::lock_guard lock(mutex_);
    ++generation_;
    snapshot_.reset();
    invalidations_.fetch_add(1, std::memory_order_relaxed);
  }

  std::uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  std::uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }
  std::uint64_t invalidations() const { return invalidations_.load(std::memory_order_relaxed); }

 private:
  std::function<T()> build_;
  std::mutex mutex_;
  std::shared_ptr<const T> snapshot_;
  std::uint64_t generation_ = 0;
  std::atomic<std::uint64_t> hits_{0}, misses_{0}, invalidations_{0};
};

}  // namespace gpurent
