// What each agent message does to the fleet's records, and how a node fails.
#include "fleet/control_plane.h"

#include "core/error.h"
#include "core/log.h"
#include "core/time.h"
#include "identity/ssh_public_key.h"
#include "inventory/node_state.h"

#include <algorithm>

namespace gpurent::fleet {
namespace {

namespace proto = agent_proto;
using inventory::Health;
using inventory::NodeAction;
using inventory::NodeState;

// The hello's sshd host keys with their fingerprints, each parsed as a registered SSH key is
// (the decoder checked only their shape); one that does not parse is left out with a log
// line rather than refusing the agent. Stored without the comment.
std::vector<inventory::HostKey> read_host_keys(const std::string& node,
                                               const std::vector<std::string>& lines) {
  std::vector<inventory::HostKey> out;
  for (const auto& line : lines) {
    try {
      auto key = identity::parse_ssh_public_key(line);
      std::string canonical = key.canonical();
      auto comment = canonical.find(' ', canonical.find(' ') + 1);
      out.push_back({key.type, canonical.substr(0, comment), key.fingerprint, {}});
    } catch (const Error& e) {
      log::warn("agent of node {} reported an SSH host key that does not parse: {}", node,
                e.what());
    }
  }
  return out;
}

// The hello's probe key ("ssh-ed25519 BASE64", without its comment) when it parses as a
// registered SSH key does; one that does not is left out with a log line, as a host key is.
std::optional<std::string> read_probe_key(const std::string& node,
                                          const std::optional<std::string>& line) {
  if (!line) return std::nullopt;
  try {
    auto key = identity::parse_ssh_public_key(*line);
    if (key.type != "ssh-ed25519") throw Error::invalid_field("ssh_probe_key", "not Ed25519");
    return key.type + " " + identity::ssh_base64(key.blob);
  } catch (const Error& e) {
    log::warn("agent of node {} reported an SSH probe key that does not parse: {}", node, e.what());
    return std::nullopt;
  }
}

// The heartbeat's GPUs whole, as they become the node's latest telemetry.
nlohmann::json telemetry_json(const proto::Heartbeat& beat) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : beat.gpus) gpus.push_back(proto::to_json(g));
  return gpus;
}

std::optional<NodeState> state_of(const inventory::NodeDetail& node) {
  return inventory::parse_node_state(node.node.state);
}

// Silent nodes failed per transaction: each interrupts its rentals in it.
constexpr int kSilentNodesPerPass = 50;

}  // namespace

ControlPlane::ControlPlane(PgPool& pool, const Clock& clock, const ControlPlanePeers& peers,
                           ControlPlaneOptions options)
    : pool_(pool), clock_(clock), peers_(peers), options_(options) {}

std::optional<std::string> ControlPlane::hello(const std::string& node, const proto::Hello& hello,
                                               const Actor& agent) {
  auto host_keys = read_host_keys(node, hello.ssh_host_keys);
  auto probe_key = read_probe_key(node, hello.ssh_probe_key);
  return pool_.transact("agent_hello", [&](Tx& tx) -> std::optional<std::string> {
    auto current = peers_.nodes.get(tx, node);
    if (!current) throw Error(ErrorCode::kNotFound, "No such node.");
    if (hello.gpus.count != current->node.gpu_count) {
      return "the node has " + std::to_string(current->node.gpu_count) +
             " GPUs on record and the agent found " + std::to_string(hello.gpus.count);
    }
    peers_.nodes.record_agent(tx, node, hello.agent_version, hello.gpus.driver_version);
    // None in this hello clears an earlier one: the agent has nothing to probe with now.
    peers_.nodes.record_ssh_probe_key(tx, node, probe_key);
    peers_.nodes.set_topology(tx, node, hello.topology, "agent", agent);
    auto certified = host_keys;
    if (peers_.host_certificates) {
      peers_.host_certificates->certify_host_keys(tx, node, current->node.hostname, certified);
    }
    peers_.host_keys.replace(tx, node, certified);
    if (state_of(*current) == NodeState::kEnrolling) {
      peers_.nodes.transition(tx, node, NodeAction::kEnrolled,
                              "agent " + hello.agent_version + " connected", std::nullopt);
      // Measured before anyone relies on it: a failure drains it (docs/burn-in.md).
      peers_.lifecycle.node_burn_in(tx, node, current->node.gpu_count, "enrolment");
    }
    return std::nullopt;
  });
}

JudgedHeartbeat ControlPlane::judge(const std::string& node, const proto::Heartbeat& beat) {
  auto now = clock_.now();
  std::optional<HeartbeatCounters> previous;
  bool sample_due = false;
  {
    std::lock_guard lock(mutex_);
    auto& seen = seen_[node];
    previous = std::exchange(seen.counters, counters_of(beat));
    sample_due = !seen.sampled_at || now - *seen.sampled_at >= options_.telemetry_interval;
  }
  JudgedHeartbeat out{node, now, judge_heartbeat(node, now, beat, previous), std::nullopt};
  // Every unhealthy heartbeat is kept: what the GPUs looked like when it went wrong.
  if (sample_due || !out.routine()) {
    out.sample = inventory::TelemetrySample{node, now, telemetry_json(beat), points_of(beat)};
    std::lock_guard lock(mutex_);
    seen_[node].sampled_at = now;
  }
  return out;
}

void ControlPlane::forget(const std::string& node) {
  std::lock_guard lock(mutex_);
  seen_.erase(node);
}

void ControlPlane::record(const JudgedHeartbeat& beat) {
  const std::string& node = beat.node_id;
  const auto& verdict = beat.verdict;
  const std::string& why = verdict.node.reason;
  pool_.transact("agent_heartbeat", [&](Tx& tx) {
    peers_.nodes.record_heartbeat(tx, node);
    auto stored = peers_.nodes.health_state(tx, node);
    if (!stored) return;
    auto events = verdict.xid_events;
    for (auto& e : health_changes(node, beat.received_at, *stored, verdict)) {
      events.push_back(std::move(e));
    }
    inventory::NodeHealthState health{verdict.node.health, {}};
    for (const auto& [index, gpu] : verdict.gpus) health.gpus[index] = gpu.health;
    peers_.nodes.set_health(tx, node, health);
    peers_.health_log.record_events(tx, events);
    if (beat.sample) peers_.health_log.record_samples(tx, {*beat.sample});
    if (verdict.node.health == Health::kCritical) {
      // The node's GPUs cannot be trusted with work: out of service now.
      fail_node(tx, node, why, beat.received_at);
    } else if (verdict.node.health == Health::kWarning) {
      auto current = peers_.nodes.get(tx, node);
      if (!current || state_of(*current) != NodeState::kAvailable) return;
      // Keep what runs; take no new work; maintenance once the rentals have ended.
      peers_.nodes.transition(tx, node, NodeAction::kDrain, why, std::nullopt);
      log::warn("node {} draining: {}", node, why);
    }
  });
}

void ControlPlane::record_routine(const std::vector<Routine>& beats) {
  std::vector<inventory::NodeStore::HeartbeatSeen> seen;
  std::vector<inventory::TelemetrySample> samples;
  std::map<std::string, Timestamp> received;
  seen.reserve(beats.size());
  for (const auto& b : beats) {
    seen.push_back({b.node_id, b.received_at});
    received.emplace(b.node_id, b.received_at);
    if (b.sample) samples.push_back(*b.sample);
  }
  pool_.transact("agent_heartbeats", [&](Tx& tx) {
    // Nodes or GPUs that were not ok are ok again: each change is in the health history.
    std::vector<inventory::HealthEvent> events;
    auto before = peers_.nodes.record_healthy_heartbeats(tx, seen);
    for (const auto& [node, health] : before) {
      HeartbeatVerdict now{.node = {Health::kOk, ""}};
      for (const auto& [index, _] : health.gpus) now.gpus[index] = {Health::kOk, ""};
      for (auto& e : health_changes(node, received.at(node), health, now)) {
        events.push_back(std::move(e));
      }
    }
    peers_.health_log.record_events(tx, events);
    peers_.health_log.record_samples(tx, samples);
  });
}

bool ControlPlane::task_reported(const std::string& node, const proto::TaskResult& result) {
  bool settled = pool_.transact("agent_task_result", [&](Tx& tx) {
    auto task = peers_.tasks.get(tx, result.task_id);
    // Another node's task is as unknown as none: an agent reports on its own work only.
    if (!task || task->node_id != node) return false;
    if (task->state == scheduler::TaskState::kSucceeded ||
        task->state == scheduler::TaskState::kFailed) {
      return false;  // a repeated report changes nothing
    }
    bool ok = result.ok;
    std::string message = result.message;
    // A burn-in's figures are judged here, not on the node: it succeeded only if they pass.
    if (task->kind == scheduler::TaskKind::kBurnIn) {
      auto judged = peers_.lifecycle.judge_burn_in(tx, *task, result.ok, result.message,
                                                   result.result, clock_.now());
      ok = judged.passed;
      message = judged.message;
    }
    // A doctor's figures are read by the request waiting for them (scheduler/doctor.h).
    std::optional<nlohmann::json> kept;
    if (task->kind == scheduler::TaskKind::kDoctor) kept = result.result;
    if (!peers_.tasks.complete(tx, result.task_id, ok, message, kept)) return false;
    auto reported = *task;
    reported.result_message = message;
    peers_.lifecycle.task_finished(tx, reported, ok, clock_.now());
    return true;
  });
  // The rental's next step (its access, or active) is due now; committed, so the run sees it.
  if (settled) peers_.lifecycle.due_now();
  return settled;
}

bool ControlPlane::fail_node(Tx& tx, const std::string& node, const std::string& reason,
                             Timestamp now) {
  auto current = peers_.nodes.get(tx, node);
  if (!current) return false;
  auto state = state_of(*current);
  if (!state || !inventory::next_state(*state, NodeAction::kFail)) return false;
  peers_.nodes.transition(tx, node, NodeAction::kFail, reason, std::nullopt);
  // What runs on it is interrupted, and credited by billing.
  auto interrupted = peers_.lifecycle.interrupt_node(tx, node, reason, now);
  log::warn("node {} failed: {} ({} rentals interrupted)", node, reason, interrupted.size());
  return true;
}

int ControlPlane::fail_silent_nodes(Timestamp now) {
  if (now.time_since_epoch().count() < silence_judged_from_us_.load(std::memory_order_relaxed)) {
    return 0;
  }
  return pool_.transact("fleet_silent_nodes", [&](Tx& tx) {
    int failed = 0;
    for (const auto& silent :
         peers_.nodes.lock_silent(tx, now - options_.silence_limit, kSilentNodesPerPass)) {
      const std::string& node = silent.node_id;
      std::string reason =
          "agent silent since " + format_rfc3339(silent.last_heartbeat_at) + ": node unreachable";
      peers_.nodes.set_health(tx, node, Health::kCritical);
      peers_.health_log.record_events(tx, {{.node_id = node,
                                            .at = now,
                                            .kind = "health",
                                            .severity = std::string(to_string(Health::kCritical)),
                                            .reason = reason}});
      failed += fail_node(tx, node, reason, now) ? 1 : 0;
    }
    return failed;
  });
}

int ControlPlane::purge_telemetry(Timestamp now, int limit) {
  return pool_.transact("agent_telemetry_purge", [&](Tx& tx) {
    return peers_.health_log.purge_samples(tx, now - options_.telemetry_retention, limit);
  });
}

}  // namespace gpurent::fleet
