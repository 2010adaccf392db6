// An in-memory snapshot of data that changes rarely (the GPU catalog, images, webhook
// subscriptions), rebuilt on the first read after invalidate(). Replicas invalidate theirs
// when PostgreSQL notifies them of a change (NotifyListener), and the replica that made the
// change does so itself.
//
// Two ways to build: a cache made with a builder builds on its own (get()); a cache whose
// builds read inside the caller's transaction takes the builder at each read
// (get_with(build, keep)). Either way, a snapshot built while an invalidation came in is
// returned to the read that built it but not kept: it may predate the change.
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
  // A cache whose reads each bring their builder (get_with).
  SnapshotCache() = default;
  SnapshotCache(const SnapshotCache&) = delete;
  SnapshotCache& operator=(const SnapshotCache&) = delete;

  // The current snapshot, building it when there is none. Where blocking is forbidden
  // (core/blocking.h), a missing snapshot throws WouldBlock.
  std::shared_ptr<const T> get() { return get_with(build_); }

  // The current snapshot, or one `build()` makes when there is none (it may read in the
  // caller's transaction: the generation is taken before it runs, so a change committed after
  // its reads' snapshot is announced after, and its invalidate() stops the result being kept).
  // The result is kept only if `keep()` (when given) still holds once it is built: a copy
  // kept while announcements were not arriving could miss a change for good.
  template <typename Build>
  std::shared_ptr<const T> get_with(Build&& build, const std::function<bool()>& keep = {}) {
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
    auto built = std::make_shared<const T>(build());
    bool keeping = !keep || keep();
    std::lock_guard lock(mutex_);
    if (keeping && generation == generation_) snapshot_ = built;
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
