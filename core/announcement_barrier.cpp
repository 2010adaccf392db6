// AnnouncementBarrier: a NOTIFY on a channel of its own, and a wait for it to come back.
#include "core/announcement_barrier.h"

#include <unistd.h>

namespace gpurent {
namespace {

constexpr const char* kChannel = "gpurent_barrier";

}  // namespace

AnnouncementBarrier::AnnouncementBarrier(NotifyListener& listener, PgPool& pool)
    : pool_(pool), prefix_(std::to_string(getpid()) + ":") {
  listener.subscribe(kChannel, [this](const std::string& payload) {
    // Other processes' markers share the channel; only ours are awaited.
    if (payload.rfind(prefix_, 0) != 0) return;
    std::uint64_t n = std::stoull(payload.substr(prefix_.size()));
    {
      std::lock_guard lock(mutex_);
      // A marker whose waiter gave up is not kept.
      if (awaiting_.count(n) == 0) return;
      arrived_.insert(n);
    }
    arrived_cv_.notify_all();
  });
}

bool AnnouncementBarrier::pass(std::chrono::milliseconds limit) {
  std::uint64_t n;
  {
    std::lock_guard lock(mutex_);
    n = next_++;
    awaiting_.insert(n);
  }
  try {
    pool_.transact("announcement_barrier",
                   [&](Tx& tx) { notify(tx, kChannel, prefix_ + std::to_string(n)); });
  } catch (...) {
    std::lock_guard lock(mutex_);
    awaiting_.erase(n);
    throw;
  }
  std::unique_lock lock(mutex_);
  bool arrived = arrived_cv_.wait_for(lock, limit, [&] { return arrived_.count(n) > 0; });
  arrived_.erase(n);
  awaiting_.erase(n);
  return arrived;
}

}  // namespace gpurent
