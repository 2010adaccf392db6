// How long heartbeats take from the agent's send (its `sent_at`) to their commit in the
// database: a Prometheus histogram, lock-free to record. The agent's clock is the node's;
// skew between the two shows up here too, which is worth seeing.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace gpurent {

class HeartbeatLag {
 public:
  static constexpr std::array<double, 12> kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                      0.5,   1,    2,     5,    10,  30};

  void record(std::chrono::microseconds lag) {
    double s = static_cast<double>(std::max<std::int64_t>(0, lag.count())) / 1e6;
    std::size_t i = 0;
    while (i < kBuckets.size() && s > kBuckets[i]) ++i;
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    sum_us_.fetch_add(static_cast<std::uint64_t>(std::max<std::int64_t>(0, lag.count())),
                      std::memory_order_relaxed);
  }

  // `name`_bucket{le=…}, _sum and _count.
  void render(std::string& out, const char* name) const {
    out.append("# HELP ").append(name).append(
        " Time from a heartbeat's sent_at (the agent's clock) to its commit.\n");
    out.append("# TYPE ").append(name).append(" histogram\n");
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i <= kBuckets.size(); ++i) {
      cumulative += counts_[i].load(std::memory_order_relaxed);
      std::string le = i < kBuckets.size() ? bound(kBuckets[i]) : "+Inf";
      out.append(name).append("_bucket{le=\"").append(le).append("\"} ");
      out.append(std::to_string(cumulative)).append("\n");
    }
    out.append(name).append("_sum ").append(
        std::to_string(static_cast<double>(sum_us_.load(std::memory_order_relaxed)) / 1e6));
    out.append("\n").append(name).append("_count ").append(std::to_string(cumulative)).append("\n");
  }

 private:
  // 0.005 -> "0.005", 1 -> "1".
  static std::string bound(double b) {
    std::string s = std::to_string(b);
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
    return s;
  }

  std::array<std::atomic<std::uint64_t>, kBuckets.size() + 1> counts_{};
  std::atomic<std::uint64_t> sum_us_{0};
};

}  // namespace gpurent
