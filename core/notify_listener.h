// LISTEN/NOTIFY for cross-replica cache invalidation: one listener thread per process.
#pragma once

#include "core/db_pool.h"

#include <pqxx/pqxx>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace gpurent {

// Holds one dedicated connection (not a pool lease: a LISTEN lives as long as its session)
// and delivers each notification on its own thread. Notifications sent while it is
// disconnected are lost; on_connected callbacks are how subscribers learn to resync.
class NotifyListener {
 public:
  struct Options {
    std::string url;  // PostgreSQL URL, as for PgPool
    std::chrono::milliseconds reconnect_delay{500};
  };

  explicit NotifyListener(Options options);
  ~NotifyListener();  // stop()
  NotifyListener(const NotifyListener&) = delete;
  NotifyListener& operator=(const NotifyListener&) = delete;

  // Before start(). `channel` must match [a-z_][a-z0-9_]{0,62} (std::invalid_argument
  // otherwise). The callback runs on the listener thread; what it throws is logged.
  void subscribe(std::string channel, std::function<void(const std::string& payload)> on_notify);

  // Before start(). Runs on the listener thread after every successful (re)connection and
  // LISTEN, before any notification is delivered: treat it as "everything may have changed".
  void on_connected(std::function<void()> callback);

  // Spawns the thread and returns; connection failures are logged and retried until stop().
  // Once per object.
  void start();
  // Idempotent. Interrupts a reconnect_delay wait or the wait for notifications at once;
  // otherwise joins after a connect attempt in progress (connect_timeout, 2 s unless the URL
  // sets it) or a callback in progress, whichever is running.
  void stop();

  bool connected() const { return connected_.load(); }
  // Connected, and everything that has reached this process has been delivered: no unread
  // bytes on the connection and no callback (on_connected included) running. A cache that
  // trusts its contents only while this holds serves nothing a delivered announcement has
  // invalidated. Safe from any thread; costs one poll() system call.
  bool caught_up() const;
  std::uint64_t notifications_total() const { return notifications_total_.load(); }
  // Connections established after the first one.
  std::uint64_t reconnects_total() const { return reconnects_total_.load(); }

 private:
  struct Subscription {
    std::string channel;
    std::function<void(const std::string&)> on_notify;
  };

  void run();
  void listen_until_stopped_or_broken();

  const Options options_;
  std::vector<Subscription> subscriptions_;
  std::vector<std::function<void()>> on_connected_;
  std::thread thread_;
  bool started_ = false;

  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  std::atomic<bool> stopping_{false};
  int wake_fd_ = -1;  // an eventfd stop() writes, to end the listener's poll at once

  std::uint64_t connections_total_ = 0;  // listener thread only
  std::atomic<bool> connected_{false};
  std::atomic<int> socket_fd_{-1};      // the listening connection's socket, -1 when none
  std::atomic<bool> delivering_{true};  // reading or delivering notifications now
  std::atomic<std::uint64_t> notifications_total_{0};
  std::atomic<std::uint64_t> reconnects_total_{0};
};

// Queues a notification on `channel`; PostgreSQL delivers it when `tx` commits, and never
// if it rolls back. Channel and payload are parameters, never spliced into SQL.
void notify(pqxx::transaction_base& tx, std::string_view channel, std::string_view payload);
// The same inside a use case's transaction.
void notify(Tx& tx, std::string_view channel, std::string_view payload);

}  // namespace gpurent
