// The heartbeat batcher's thread.
#include "api/modules/heartbeat_batcher.h"

#include "core/log.h"

#include <algorithm>

namespace gpurent {

HeartbeatBatcher::HeartbeatBatcher(std::chrono::milliseconds window, std::size_t max_batch,
                                   std::size_t max_pending, Write write)
    : window_(window),
      max_batch_(max_batch),
      max_pending_(std::max<std::size_t>(max_pending, 1)),
      write_(std::move(write)) {
  thread_ = std::thread([this] { run(); });
}

HeartbeatBatcher::~HeartbeatBatcher() {
  stop();
}

HeartbeatBatcher::Admission HeartbeatBatcher::add(Beat beat) {
  std::lock_guard lock(mutex_);
  if (stopping_) return Admission::kStopped;
  if (pending_.size() + writing_ >= max_pending_) {
    ++refused_;
    return Admission::kFull;
  }
  if (pending_.empty()) first_at_ = std::chrono::steady_clock::now();
  pending_.push_back(std::move(beat));
  if (pending_.size() == 1 || pending_.size() >= max_batch_) wake_.notify_one();
  return Admission::kQueued;
}

std::size_t HeartbeatBatcher::pending() const {
  std::lock_guard lock(mutex_);
  return pending_.size() + writing_;
}

std::uint64_t HeartbeatBatcher::refused_total() const {
  std::lock_guard lock(mutex_);
  return refused_;
}

void HeartbeatBatcher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void HeartbeatBatcher::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stopping, nothing left
    // The window from the batch's first heartbeat: later ones wait less.
    wake_.wait_until(lock, first_at_ + window_,
                     [&] { return stopping_ || pending_.size() >= max_batch_; });
    std::vector<Beat> batch;
    batch.swap(pending_);
    writing_ = batch.size();
    lock.unlock();
    bool committed = true;
    try {
      write_(batch);
    } catch (const std::exception& e) {
      committed = false;
      log::error("recording {} heartbeats failed: {}", batch.size(), e.what());
    }
    // The slots are free before any agent hears its ack: an agent answered at the limit
    // sends its next heartbeat at once, and it must not find them still taken.
    lock.lock();
    writing_ = 0;
    lock.unlock();
    for (auto& beat : batch) beat.done(committed);
    lock.lock();
  }
}

}  // namespace gpurent
