// What the agents reported about a node's GPUs, kept for the admin views (migration 0012):
// the latest telemetry, a history of the values people chart (temperature, power,
// utilisation, memory), and the health history — XID events and every change of health.
// The agent module writes it inside the heartbeats' transactions; the admin routes read it.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::inventory {

// One GPU's charted values in a sample; absent where the GPU did not report them.
struct GpuPoint {
  int index = 0;
  std::optional<double> temperature_c;
  std::optional<double> power_w;
  std::optional<int> utilization_pct;
  std::optional<std::int64_t> memory_used_mib;
  std::vector<std::string> throttle_reasons;  // active clock throttle reasons; none: empty
  std::optional<int> sm_clock_mhz;

  bool operator==(const GpuPoint&) const = default;
};

// A sample's throttle reasons of GPU `index` from the column's form ({"0": ["…"]}); empty
// for a GPU that reported none (or a row written before the column).
std::vector<std::string> throttle_reasons_of(const nlohmann::json& by_index, int index);

struct TelemetrySample {
  std::string node_id;
  Timestamp at;
  nlohmann::json telemetry;    // the heartbeat's GPUs, whole: an array of objects
  std::vector<GpuPoint> gpus;  // what the history keeps of them, in index order
};

struct LatestTelemetry {
  Timestamp at;
  nlohmann::json gpus;
};

// What a fleet overview shows of a node's latest telemetry without reading all of it.
struct TelemetrySummary {
  Timestamp at;
  std::optional<double> hottest_gpu_temperature_c;  // none when no GPU reported one
};

struct TelemetryPoint {
  Timestamp at;
  std::vector<GpuPoint> gpus;
};

struct HealthEvent {
  std::int64_t id = 0;  // set when read
  std::string node_id;
  Timestamp at;
  std::optional<int> gpu_index;  // absent: the node as a whole
  std::string kind;              // "xid" | "health"
  std::string severity;          // ok | info | warning | critical
  std::optional<int> xid;        // with kind "xid"
  std::string reason;            // at most 2,000 bytes; longer is cut

  bool operator==(const HealthEvent&) const = default;
};

class NodeHealthLog {
 public:
  // Each sample becomes its node's latest telemetry and a row of its history, in one
  // statement for the lot. A second sample of a node at the same instant is ignored.
  void record_samples(Tx& tx, const std::vector<TelemetrySample>& samples);
  void record_events(Tx& tx, const std::vector<HealthEvent>& events);

  std::optional<LatestTelemetry> latest(Tx& tx, const std::string& node_id);
  // The latest telemetry's time and hottest GPU for each of these nodes that has reported.
  std::map<std::string, TelemetrySummary> summaries(Tx& tx,
                                                    const std::vector<std::string>& node_ids);
  // The node's samples in [from, to), oldest first, at most `limit`.
  std::vector<TelemetryPoint> history(Tx& tx, const std::string& node_id, Timestamp from,
                                      Timestamp to, int limit);
  // The node's health events, newest first: at most `limit`, older than `before_id` if given.
  std::vector<HealthEvent> events(Tx& tx, const std::string& node_id, int limit,
                                  std::optional<std::int64_t> before_id = std::nullopt);
  // The events of the node's GPUs `gpus` (none of the node's own) within [from, to), oldest
  // first, at most `limit`: what a tenant of those GPUs may see.
  std::vector<HealthEvent> gpu_events(Tx& tx, const std::string& node_id,
                                      const std::vector<int>& gpus, Timestamp from, Timestamp to,
                                      int limit);

  // Deletes history rows older than `before` (the retention), at most `limit` of them so
  // the statement stays short; the number deleted.
  int purge_samples(Tx& tx, Timestamp before, int limit);
};

}  // namespace gpurent::inventory
