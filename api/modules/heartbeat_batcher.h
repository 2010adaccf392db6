// Healthy heartbeats of many agents committed together: one transaction per short window
// instead of one per heartbeat, so 10,000 agents at a heartbeat every 10 s cost a few
// transactions a second. Each heartbeat is acknowledged only once its batch has committed,
// so an ack still means "recorded". At most `max_pending` heartbeats wait (queued or in the
// batch being written): when the database falls behind, more are refused rather than held
// in memory without end, and the caller tells the agent so.
#pragma once

#include "core/clock.h"
#include "inventory/node_health_log.h"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace gpurent {

class HeartbeatBatcher {
 public:
  struct Beat {
    std::string node_id;
    Timestamp received_at;  // the control plane's clock: the node's last_heartbeat_at
    Timestamp sent_at;      // the agent's clock, for the lag
    // The node's telemetry when a sample of it is due (agent_telemetry_interval).
    std::optional<inventory::TelemetrySample> sample;
    // After the batch committed (true) or failed (false); on the batcher's thread.
    std::function<void(bool committed)> done;
  };
  // Writes one batch in one transaction; throws when it could not.
  using Write = std::function<void(const std::vector<Beat>&)>;

  enum class Admission {
    kQueued,   // `done` will be called
    kStopped,  // the batcher has stopped: the caller records it itself
    kFull,     // max_pending are waiting already: refused, and counted
  };

  // A batch is written `window` after its first heartbeat arrived, or at once when it holds
  // `max_batch` of them. `max_pending` is at least 1.
  HeartbeatBatcher(std::chrono::milliseconds window, std::size_t max_batch, std::size_t max_pending,
                   Write write);
  ~HeartbeatBatcher();
  HeartbeatBatcher(const HeartbeatBatcher&) = delete;
  HeartbeatBatcher& operator=(const HeartbeatBatcher&) = delete;

  // Queues a heartbeat, unless stopped or full.
  Admission add(Beat beat);
  // Writes what is queued, then stops. Idempotent.
  void stop();

  std::size_t max_pending() const { return max_pending_; }
  // Heartbeats queued or being written, not yet done.
  std::size_t pending() const;
  // Heartbeats refused as kFull since start.
  std::uint64_t refused_total() const;

 private:
  void run();

  std::chrono::milliseconds window_;
  std::size_t max_batch_;
  std::size_t max_pending_;
  Write write_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Beat> pending_;
  std::size_t writing_ = 0;  // the batch being written
  std::uint64_t refused_ = 0;
  std::chrono::steady_clock::time_point first_at_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gpurent
