// What one heartbeat does to a node's recorded health: the health rules
// (agent_proto/health_rules.h) applied to each GPU with the node's previous counters, then
// compared with the health stored now, giving the new health of the node and each GPU and
// the health events to append (every XID event, every change). Pure: no database, no clock.
#pragma once

#include "agent_proto/health_rules.h"
#include "agent_proto/messages.h"
#include "inventory/health.h"
#include "inventory/node_health_log.h"
#include "inventory/node_store.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::fleet {

// What the control plane keeps of a node's last heartbeat between two: the counters whose
// rise the rules judge (volatile double-bit ECC, NVLink CRC errors, PCIe replays).
struct GpuCounters {
  int index = 0;
  std::optional<std::int64_t> ecc_volatile_dbe;
  std::optional<std::int64_t> nvlink_crc_errors;
  std::optional<std::int64_t> pcie_replays;
};
struct HeartbeatCounters {
  Timestamp at;  // the heartbeat's sent_at
  std::vector<GpuCounters> gpus;
};
HeartbeatCounters counters_of(const agent_proto::Heartbeat& beat);

using StoredHealth = inventory::NodeHealthState;

// A health and why: the findings of its severity, "; "-joined ("" for ok).
struct JudgedHealth {
  inventory::Health health = inventory::Health::kOk;  // ok, warning or critical: never unknown
  std::string reason;
};

struct HeartbeatVerdict {
  JudgedHealth node;                 // the worst GPU's; silence is judged elsewhere
  std::map<int, JudgedHealth> gpus;  // each reported GPU, by index
  // The heartbeat's XID events, each with its GPU (matched by bus address) and severity.
  std::vector<inventory::HealthEvent> xid_events;
  // Healthy and without events: nothing to record but the heartbeat itself (the batched
  // path, which also puts back to ok what was not).
  bool routine() const { return node.health == inventory::Health::kOk && xid_events.empty(); }
};

// `previous` is the node's last heartbeat's counters, if this replica saw one; events are
// dated `at` unless their log line carries a time.
HeartbeatVerdict judge_heartbeat(const std::string& node_id, Timestamp at,
                                 const agent_proto::Heartbeat& beat,
                                 const std::optional<HeartbeatCounters>& previous);

// The health events of going from `stored` to `now` (node and each GPU in `now.gpus`): one
// per health that changed, except from `unknown` to `ok` (a node's first report, which its
// state events already show).
std::vector<inventory::HealthEvent> health_changes(const std::string& node_id, Timestamp at,
                                                   const StoredHealth& stored,
                                                   const HeartbeatVerdict& now);

// The charted values of a heartbeat's GPUs, for the telemetry history.
std::vector<inventory::GpuPoint> points_of(const agent_proto::Heartbeat& beat);

}  // namespace gpurent::fleet
