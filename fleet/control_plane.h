// The fleet's control plane as a domain (DESIGN.md "Agent protocol", "Health"): what each
// message of a node's agent does to the node's record — the hello (inventory, links, host
// keys; an enrolling node becomes available), heartbeats (last seen, health by the rules of
// agent_proto/health_rules.h, the health → node-state policy), task reports (the
// scheduler's lifecycle told) — and the one way a node fails, whether from a critical
// verdict or its agent's silence. Each use case owns its transaction. The transport (the
// agent listener, channels, protocol versions, batching healthy heartbeats, acks) is
// api/modules/agent_module's: it calls these and sends what they answer.
#pragma once

#include "agent_proto/messages.h"
#include "core/audit.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "fleet/heartbeat_verdict.h"
#include "inventory/node_health_log.h"
#include "inventory/node_host_keys.h"
#include "inventory/node_store.h"
#include "scheduler/lifecycle.h"
#include "scheduler/ssh_access.h"
#include "scheduler/task_store.h"

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::fleet {

struct ControlPlaneOptions {
  // A node's telemetry is kept at most this often (every unhealthy heartbeat is kept too),
  // and samples older than the retention are deleted.
  std::chrono::seconds telemetry_interval{60};
  std::chrono::seconds telemetry_retention{24 * 3600};
  // A node whose agent has said nothing for longer is unreachable: failed, and what runs on
  // it interrupted. Nodes that never heard from an agent are not judged.
  std::chrono::seconds silence_limit{60};
};

// The other modules' parts the control plane works through, one instance each per process.
struct ControlPlanePeers {
  inventory::NodeStore& nodes;           // inventory: the node's record and state machine
  inventory::NodeHostKeys& host_keys;    // inventory: the sshd host keys a hello reports
  inventory::NodeHealthLog& health_log;  // inventory: telemetry and health events
  scheduler::TaskStore& tasks;           // scheduler: the agents' task queue
  scheduler::Lifecycle& lifecycle;       // scheduler: rentals on a failed node, task reports
  // The SSH capability's host CA, which certifies the host keys a hello reports; none: the
  // keys are kept without certificates.
  scheduler::SshAccess* host_certificates = nullptr;
};

// A heartbeat judged against the node's last one (counters) and sampling due.
struct JudgedHeartbeat {
  std::string node_id;
  Timestamp received_at;
  HeartbeatVerdict verdict;
  // The node's telemetry to keep, when a sample is due or the heartbeat is not healthy.
  std::optional<inventory::TelemetrySample> sample;
  // Healthy and without events: its only writes are the node's last-seen time, health back
  // to ok, and the sample, which many nodes' heartbeats can share one transaction for.
  bool routine() const { return verdict.routine(); }
};

class ControlPlane {
 public:
  ControlPlane(PgPool& pool, const Clock& clock, const ControlPlanePeers& peers,
               ControlPlaneOptions options);

  // The node's record takes what its agent's hello reports: agent and driver versions, the
  // probe key, the link matrix, the sshd host keys (certified when a host CA is given), and
  // an enrolling node becomes available. Refused, with why, when the agent found another
  // GPU count than the record holds (nothing is written). Throws not_found for a node
  // without a record.
  std::optional<std::string> hello(const std::string& node_id, const agent_proto::Hello& hello,
                                   const Actor& agent);

  // Judges a heartbeat by the health rules with the node's previous counters on this
  // replica, and decides whether a telemetry sample is due. In memory only.
  JudgedHeartbeat judge(const std::string& node_id, const agent_proto::Heartbeat& beat);
  // Records one heartbeat in its own transaction: the last-seen time, the health of the node
  // and its GPUs with an event for each change and each XID, the sample, and what the health
  // does to the node: critical fails it (fail_node), warning drains an available one (what
  // runs goes on; no new work).
  void record(const JudgedHeartbeat& beat);
  // Records routine heartbeats of many nodes in one transaction: each node's last-seen time,
  // health back to ok where it was not (with the event), and the samples.
  struct Routine {
    std::string node_id;
    Timestamp received_at;
    std::optional<inventory::TelemetrySample> sample;
  };
  void record_routine(const std::vector<Routine>& beats);
  // The node's agent disconnected from this replica: its counters and sampling start over.
  void forget(const std::string& node_id);

  // An agent's report of one of its node's tasks, in one transaction: the task completed and
  // the scheduler's lifecycle told. Another node's task is as unknown as none, and a repeated
  // report changes nothing: false for both.
  bool task_reported(const std::string& node_id, const agent_proto::TaskResult& result);

  // The one way a node fails, inside the caller's transaction: the node leaves service
  // (`failed`, by its state machine), and every rental running on it is interrupted with
  // `reason` (and credited by billing). False when the machine refuses (already failed, or
  // retired): nothing changes.
  bool fail_node(Tx& tx, const std::string& node_id, const std::string& reason, Timestamp now);

  // Fails every node in service whose agent has been silent past the limit, with its health
  // and its GPUs' critical and the event; how many. Nothing before judge_silence_from's time.
  int fail_silent_nodes(Timestamp now);
  // Silence is judged from `t` on: a replica that has just started, after an outage of the
  // control plane, has not been listening long enough to tell a silent node from one that
  // has yet to reconnect. The process wiring sets it to its start plus the silence limit.
  void judge_silence_from(Timestamp t) {
    silence_judged_from_us_.store(t.time_since_epoch().count(), std::memory_order_relaxed);
  }
  // Deletes up to `limit` telemetry samples older than the retention; how many.
  int purge_telemetry(Timestamp now, int limit);

  const ControlPlaneOptions& options() const { return options_; }

 private:
  PgPool& pool_;
  const Clock& clock_;
  ControlPlanePeers peers_;
  ControlPlaneOptions options_;
  std::atomic<Timestamp::rep> silence_judged_from_us_{Timestamp::min().time_since_epoch().count()};

  // Per node whose agent is connected to this replica: its last heartbeat's counters (the
  // rules judge their rise) and when its telemetry was last kept.
  struct NodeSeen {
    std::optional<HeartbeatCounters> counters;
    std::optional<Timestamp> sampled_at;
  };
  std::mutex mutex_;
  std::map<std::string, NodeSeen> seen_;  // by node id, under mutex_
};

}  // namespace gpurent::fleet
