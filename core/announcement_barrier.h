// Waits until this process's NotifyListener has delivered every notification committed
// before the call: PostgreSQL delivers notifications to a listener in commit order, so once
// a fresh marker sent after them comes back, they have all been delivered.
#pragma once

#include "core/db_pool.h"
#include "core/notify_listener.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>

namespace gpurent {

class AnnouncementBarrier {
 public:
  // Subscribes to its channel: construct before listener.start().
  AnnouncementBarrier(NotifyListener& listener, PgPool& pool);

  // Sends a marker through `pool` and waits up to `limit` for the listener to deliver it.
  // False when it did not arrive in time (the listener is disconnected, say); the caller
  // goes on either way: it is a courtesy to readers on other replicas, not a lock.
  bool pass(std::chrono::milliseconds limit);

 private:
  PgPool& pool_;
  std::string prefix_;  // this process's markers: "<pid>:"
  std::mutex mutex_;
  std::condition_variable arrived_cv_;
  std::set<std::uint64_t> awaiting_;
  std::set<std::uint64_t> arrived_;
  std::uint64_t next_ = 0;
};

}  // namespace gpurent
