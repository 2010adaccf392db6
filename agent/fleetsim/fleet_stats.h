// What a simulated fleet has done so far, shared by its connections (relaxed atomics and
// one short lock per heartbeat acknowledged), read by the status line.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace gpurent::agent::fleetsim {

// Times from a heartbeat's send to its ack, in microseconds: since the last status line
// (`take_interval`) and since the start.
class LatencyRecorder {
 public:
  void record(std::chrono::microseconds rtt);
  struct Summary {
    std::uint64_t count = 0;
    double p50_ms = 0;
    double p99_ms = 0;
    double max_ms = 0;
  };
  // The samples since the previous call, summarised; the window starts again.
  Summary take_interval();
  Summary total() const;
  // p-th percentile (0 < p <= 100) of `samples` (sorted here), in milliseconds.
  static Summary summarise(std::vector<std::uint32_t>& samples);

 private:
  mutable std::mutex mutex_;
  std::vector<std::uint32_t> interval_;  // microseconds, capped at ~71 minutes
  std::vector<std::uint32_t> all_;
};

struct FleetStats {
  std::atomic<std::uint64_t> agents{0};
  std::atomic<std::int64_t> connected{0};  // hello acknowledged, channel open
  std::atomic<std::uint64_t> connects{0};  // hellos acknowledged, in all
  std::atomic<std::uint64_t> reconnects{0};
  std::atomic<std::uint64_t> errors{0};   // connection attempts and channels that failed
  std::atomic<std::uint64_t> refused{0};  // hellos the server answered with an error
  std::atomic<std::uint64_t> heartbeats_sent{0};
  std::atomic<std::uint64_t> heartbeats_acked{0};
  std::atomic<std::uint64_t> tasks_received{0};
  std::atomic<std::uint64_t> tasks_finished{0};
  std::atomic<std::uint64_t> messages_sent{0};
  std::atomic<std::uint64_t> messages_received{0};
  LatencyRecorder heartbeat_rtt;

  // Counts a failed attempt or channel and keeps its reason for the status line.
  void error(std::string reason);

  // One JSON object on one line: the counters and the heartbeat round trips since the
  // previous status line. `uptime_s` is the time since the fleet started.
  std::string status_line(double uptime_s);
  // The same counters with the round trips over the whole run.
  std::string summary_line(double uptime_s) const;

 private:
  mutable std::mutex mutex_;
  std::string last_error_;
};

}  // namespace gpurent::agent::fleetsim
