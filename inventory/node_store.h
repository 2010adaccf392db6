// Nodes: the GPU servers, their GPUs and link matrix, their state machine with its event
// history, and the single-use token a new node's agent enrols with.
#pragma once

#include "core/audit.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "core/paging.h"
#include "inventory/health.h"
#include "inventory/node_state.h"
#include "inventory/records.h"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::inventory {

struct NewNode {
  std::string site_id;
  std::string hostname;
  std::string gpu_model;
  int gpu_count = 0;
  // nvswitch | nvlink-pairs | pcie; absent: nvswitch for HGX models, pcie otherwise.
  std::optional<std::string> interconnect;
  std::optional<std::string> cpu_model;
  std::optional<int> cpu_cores;
  std::optional<int> ram_gb;
  std::optional<int> disk_gb;
  nlohmann::json labels = nlohmann::json::object();
  int ssh_port = 22;  // 1 to 65535
};

// One optional hardware fact of a partial update: `change` when the update names it, with
// the new value, absent to clear the fact.
template <typename T>
struct FactChange {
  bool change = false;
  std::optional<T> value;
};

// A partial update: absent fields stay; a fact changed to no value is cleared.
struct NodeChange {
  std::optional<std::string> hostname;
  FactChange<std::string> cpu_model;
  FactChange<int> cpu_cores;
  FactChange<int> ram_gb;
  FactChange<int> disk_gb;
  std::optional<nlohmann::json> labels;  // replaces all labels
  std::optional<int> ssh_port;

  bool empty() const {
    return !hostname && !cpu_model.change && !cpu_cores.change && !ram_gb.change &&
           !disk_gb.change && !labels && !ssh_port;
  }
};

struct NodeFilter {
  std::optional<std::string> site_id;
  std::optional<std::string> state;
  std::optional<std::string> gpu_model;
};

// A node's health and its GPUs' by index.
struct NodeHealthState {
  Health node = Health::kUnknown;
  std::map<int, Health> gpus;

  bool operator==(const NodeHealthState&) const = default;
};

struct EnrollmentToken {
  std::string enrollment_token;  // shown once; only its SHA-256 is stored
  Timestamp enrollment_expires_at;
};

struct CreatedNode : EnrollmentToken {
  NodeDetail node;
};

class NodeStore {
 public:
  NodeStore(const Clock& clock, std::chrono::seconds enrollment_ttl)
      : clock_(clock), enrollment_ttl_(enrollment_ttl) {}

  // Inserts the node in `enrolling` with one GPU row per index and the matrix of its
  // declared interconnect, a `created` event, an audit row and a fresh enrolment token.
  // Unknown site or model, or an interconnect the model cannot have: invalid_request naming
  // the field; a hostname already in use: conflict.
  CreatedNode create(Tx& tx, const NewNode& node, const Actor& actor);

  // The node with its GPUs, link matrix and latest events.
  std::optional<NodeDetail> get(Tx& tx, const std::string& id);

  // Nodes in (created_at, id) order, filtered, after `cursor` (invalid_request naming
  // `cursor` for one that is not from this list).
  Page<NodeRecord> list(Tx& tx, const NodeFilter& filter, int limit,
                        const std::optional<std::string>& cursor);

  // Nullopt for an unknown node; conflict when the new hostname is taken.
  std::optional<NodeDetail> update(Tx& tx, const std::string& id, const NodeChange& change,
                                   const Actor& actor);

  // Moves the node through its state machine (node_state.h) under a row lock, held until the
  // caller's transaction ends, writing an event and, for people's actions, an audit row. A
  // refused move is invalid_state with details.state and details.action. `actor` is
  // absent for system events.
  std::optional<NodeDetail> transition(Tx& tx, const std::string& id, NodeAction action,
                                       const std::string& reason,
                                       const std::optional<Actor>& actor);

  // Replaces the node's link matrix; invalid_request naming `topology` when its GPU count
  // differs from the node's. `source` is "admin" (pasted `nvidia-smi topo -m`) or "agent".
  std::optional<NodeDetail> set_topology(Tx& tx, const std::string& id,
                                         const topology::Matrix& matrix, const std::string& source,
                                         const Actor& actor);

  // A fresh enrolment token for an existing node (its agent was reinstalled, or the first
  // token expired unused), with an audit row; earlier unused tokens stay valid until they
  // expire. Nullopt for an unknown node; invalid_state for a retired one.
  std::optional<EnrollmentToken> issue_enrollment_token(Tx& tx, const std::string& id,
                                                        const Actor& actor);

  // The node a valid enrolment token belongs to, marking the token used: a second use, an
  // expired token or an unknown one gives nullopt.
  std::optional<std::string> consume_enrollment_token(Tx& tx, const std::string& token);

  // What the node's agent said of itself in its hello, and when it was last heard from.
  void record_agent(Tx& tx, const std::string& id, const std::string& agent_version,
                    const std::string& driver_version);
  void record_heartbeat(Tx& tx, const std::string& id);
  // Nodes in service (kNodesInService) whose agent was last heard from before `before`,
  // longest silent first, at most `limit`, locked for the caller's transaction (skipping
  // those another holds): each with when it was last heard from. Nodes that never heard
  // from an agent are not among them.
  struct Silent {
    std::string node_id;
    Timestamp last_heartbeat_at;
  };
  std::vector<Silent> lock_silent(Tx& tx, Timestamp before, int limit);
  // The agent's probe key from its hello ("ssh-ed25519 BASE64", no comment), or none when
  // the hello carried none: a later hello without one clears it.
  void record_ssh_probe_key(Tx& tx, const std::string& id,
                            const std::optional<std::string>& public_key);

  // Healthy heartbeats of many nodes at once, as the agent listener batches them: each
  // node's last_heartbeat_at, and health 'ok' on every node and GPU not already ok, in one
  // statement each; the health is written only where it changes (the capacity triggers
  // fire on a health write, and a heartbeat that repeats the health changes no capacity).
  // The health the nodes had where any of it was not ok, by node id (for the health log).
  struct HeartbeatSeen {
    std::string node_id;
    Timestamp at;
  };
  std::map<std::string, NodeHealthState> record_healthy_heartbeats(
      Tx& tx, const std::vector<HeartbeatSeen>& beats);

  // The node's health and its GPUs'.
  std::optional<NodeHealthState> health_state(Tx& tx, const std::string& id);
  // Sets the node's health and that of the GPUs named (by index), writing only what differs.
  void set_health(Tx& tx, const std::string& id, const NodeHealthState& health);
  // Sets the node's health and all its GPUs': the silence rule, and the demo fleet for its
  // simulated nodes.
  void set_health(Tx& tx, const std::string& id, Health health);

 private:
  EnrollmentToken insert_enrollment_token(Tx& tx, const std::string& id, Timestamp now);

  const Clock& clock_;
  std::chrono::seconds enrollment_ttl_;
};

}  // namespace gpurent::inventory
