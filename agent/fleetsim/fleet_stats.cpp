// The fleet's counters and its status lines.
#include "agent/fleetsim/fleet_stats.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <utility>

namespace gpurent::agent::fleetsim {

namespace {

std::uint32_t clamp_us(std::chrono::microseconds rtt) {
  auto us = std::max<std::int64_t>(0, rtt.count());
  return static_cast<std::uint32_t>(
      std::min<std::int64_t>(us, std::numeric_limits<std::uint32_t>::max()));
}

double round_ms(double ms) {
  return static_cast<double>(static_cast<std::int64_t>(ms * 100 + 0.5)) / 100;
}

nlohmann::json counters(const FleetStats& s, double uptime_s) {
  return {{"uptime_s", round_ms(uptime_s)},
          {"agents", s.agents.load()},
          {"connected", s.connected.load()},
          {"connects", s.connects.load()},
          {"reconnects", s.reconnects.load()},
          {"errors", s.errors.load()},
          {"refused", s.refused.load()},
          {"heartbeats_sent", s.heartbeats_sent.load()},
          {"heartbeats_acked", s.heartbeats_acked.load()},
          {"tasks_received", s.tasks_received.load()},
          {"tasks_finished", s.tasks_finished.load()},
          {"messages_sent", s.messages_sent.load()},
          {"messages_received", s.messages_received.load()}};
}

nlohmann::json latency_json(const LatencyRecorder::Summary& l) {
  return {{"count", l.count}, {"p50_ms", l.p50_ms}, {"p99_ms", l.p99_ms}, {"max_ms", l.max_ms}};
}

}  // namespace

void LatencyRecorder::record(std::chrono::microseconds rtt) {
  std::uint32_t us = clamp_us(rtt);
  std::lock_guard lock(mutex_);
  interval_.push_back(us);
  all_.push_back(us);
}

LatencyRecorder::Summary LatencyRecorder::summarise(std::vector<std::uint32_t>& samples) {
  Summary out;
  out.count = samples.size();
  if (samples.empty()) return out;
  std::sort(samples.begin(), samples.end());
  auto at = [&](double p) {
    // Nearest rank: the smallest sample with at least p% of them at or below it.
    auto rank =
        static_cast<std::size_t>(p / 100.0 * static_cast<double>(samples.size()) + 0.999999);
    rank = std::clamp<std::size_t>(rank, 1, samples.size());
    return round_ms(samples[rank - 1] / 1000.0);
  };
  out.p50_ms = at(50);
  out.p99_ms = at(99);
  out.max_ms = round_ms(samples.back() / 1000.0);
  return out;
}

LatencyRecorder::Summary LatencyRecorder::take_interval() {
  std::vector<std::uint32_t> samples;
  {
    std::lock_guard lock(mutex_);
    samples.swap(interval_);
  }
  return summarise(samples);
}

LatencyRecorder::Summary LatencyRecorder::total() const {
  std::vector<std::uint32_t> samples;
  {
    std::lock_guard lock(mutex_);
    samples = all_;
  }
  return summarise(samples);
}

void FleetStats::error(std::string reason) {
  errors.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  last_error_ = std::move(reason);
}

std::string FleetStats::status_line(double uptime_s) {
  auto out = counters(*this, uptime_s);
  {
    std::lock_guard lock(mutex_);
    if (!last_error_.empty()) out["last_error"] = std::exchange(last_error_, "");
  }
  out["heartbeat_ack"] = latency_json(heartbeat_rtt.take_interval());
  return out.dump();
}

std::string FleetStats::summary_line(double uptime_s) const {
  auto out = counters(*this, uptime_s);
  out["summary"] = true;
  {
    std::lock_guard lock(mutex_);
    if (!last_error_.empty()) out["last_error"] = last_error_;
  }
  out["heartbeat_ack"] = latency_json(heartbeat_rtt.total());
  return out.dump();
}

}  // namespace gpurent::agent::fleetsim
