// Telling systemd how the service is doing (sd_notify(3)'s protocol, spoken directly: one
// datagram per message to the socket named by $NOTIFY_SOCKET), for a unit of Type=notify:
// READY=1 once the service answers, STOPPING=1 when it starts to drain, and WATCHDOG=1
// while it is alive, every half of $WATCHDOG_USEC. Without $NOTIFY_SOCKET (not started by
// systemd) every call does nothing. The protocol is a few lines over a Unix socket; speaking
// it here spares the build a libsystemd-dev whose exact version Debian pins to the installed
// systemd's.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace gpurent::service {

// Sends `state` ("READY=1", "STATUS=…", several lines at once) to $NOTIFY_SOCKET. False when
// there is no socket or the datagram could not be sent; never throws.
bool notify(const std::string& state);

// The watchdog interval systemd asked for ($WATCHDOG_USEC, when $WATCHDOG_PID is unset or
// this process), or nothing.
std::optional<std::chrono::microseconds> watchdog_interval();

// While it lives, asks `alive` every quarter interval whether the service still works (giving
// it a quarter interval to answer) and sends WATCHDOG=1 when it does, so pings are at most
// half an interval apart; when it does not, nothing is sent and systemd restarts the service
// once the interval runs out. Does nothing without a watchdog.
class Watchdog {
 public:
  explicit Watchdog(std::function<bool(std::chrono::milliseconds)> alive);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::function<bool(std::chrono::milliseconds)> alive_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gpurent::service
