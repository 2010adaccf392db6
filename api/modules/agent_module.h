// The control plane's side of the node agents: the platform's CA, the agent listener, and
// what each agent message does — enrolment, the hello (the node's inventory and link
// matrix; an enrolling node becomes available), heartbeats (last seen, health by the rules
// of agent_proto/health_rules.h), task results for the lifecycle worker, and the tasks sent
// to each connected agent.
#pragma once

#include "agent_proto/messages.h"
#include "api/agent_listener.h"
#include "api/metrics.h"
#include "api/modules/heartbeat_batcher.h"
#include "api/modules/heartbeat_health.h"
#include "api/modules/heartbeat_lag.h"
#include "api/modules/module_context.h"
#include "core/certificate_authority.h"
#include "core/worker_pool.h"
#include "inventory/node_health_log.h"
#include "inventory/node_host_keys.h"
#include "inventory/node_identity.h"
#include "inventory/node_store.h"
#include "scheduler/task_store.h"

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace gpurent {

class AgentModule final : public http::AgentEndpoint {
 public:
  // Loads or makes the CA in config.agent_pki_dir. The listener starts with start().
  // The stores it reads and writes, one instance each per process: inventory's (nodes and
  // their host keys) and the scheduler's (agent tasks).
  struct Peers {
    inventory::NodeStore& nodes;
    inventory::NodeHostKeys& host_keys;
    scheduler::TaskStore& tasks;
  };
  AgentModule(const ModuleContext& ctx, WorkerPool& workers, const Peers& peers);
  ~AgentModule() override;
  AgentModule(const AgentModule&) = delete;
  AgentModule& operator=(const AgentModule&) = delete;

  // Starts the listener unless agent_listen is off; the bound port, or 0 when off.
  unsigned short start();
  void stop();
  // Sends the node's tasks to its agent if it is connected to this replica: the ones not
  // sent yet, or with `resend_delivered` every unfinished one (after a reconnection).
  void deliver_tasks(const std::string& node_id, bool resend_delivered);
  const CertificateAuthority& ca() const { return ca_; }

  // The listener's channels and messages, and the heartbeats' lag to their commit.
  void add_metrics(http::Metrics& metrics);
  // What a node failing under its rentals does to them (the scheduler's), in the heartbeat's
  // transaction; set by the process's wiring.
  using NodeFailed =
      std::function<void(Tx&, const std::string& node_id, const std::string& reason)>;
  void when_node_fails(NodeFailed on_failed) { on_failed_ = std::move(on_failed); }
  // Signs the host keys a hello reports for the node's host name (the SSH capability's host
  // CA), in the hello's transaction; set by the process's wiring. Unset: no certificates.
  using CertifyHostKeys =
      std::function<void(Tx&, const std::string& node_id, const std::string& hostname,
                         std::vector<inventory::HostKey>&)>;
  void certify_host_keys_with(CertifyHostKeys certify) { certify_ = std::move(certify); }
  // What an agent's report of a task does for the rentals (the scheduler's lifecycle), in the
  // transaction that records it, with the task as it was before; set by the process's wiring.
  using TaskFinished = std::function<void(Tx&, const scheduler::AgentTask&, bool ok)>;
  void when_task_finishes(TaskFinished on_finished) { on_task_finished_ = std::move(on_finished); }

  nlohmann::json enroll(const nlohmann::json& body, const std::string& remote_ip) override;
  std::string admit(const std::string& serial, const std::string& remote_ip) override;
  void opened(const std::shared_ptr<http::AgentChannel>& channel) override;
  void received(const std::shared_ptr<http::AgentChannel>& channel, std::string text) override;
  void closed(const std::shared_ptr<http::AgentChannel>& channel) override;

 private:
  std::shared_ptr<http::AgentChannel> channel_of(const std::string& node_id);
  // Encodes and sends one message of this replica's on `channel`.
  void send_to(http::AgentChannel& channel, agent_proto::Body body);
  void heartbeat(const std::shared_ptr<http::AgentChannel>& channel, const std::string& message_id,
                 const agent_proto::Heartbeat& beat);
  // The batched healthy heartbeats, in one transaction.
  void write_heartbeats(const std::vector<HeartbeatBatcher::Beat>& batch);
  void poll_loop();

  const Config& config_;
  PgPool& pool_;
  const Clock& clock_;
  WorkerPool& workers_;
  CertificateAuthority ca_;
  inventory::NodeStore& nodes_;
  inventory::NodeHostKeys& host_keys_;
  inventory::NodeHealthLog health_log_;
  inventory::NodeIdentity identity_;
  scheduler::TaskStore& tasks_;
  std::optional<http::AgentListener> listener_;
  HeartbeatLag heartbeat_lag_;
  std::optional<HeartbeatBatcher> heartbeats_;  // while the listener runs
  NodeFailed on_failed_;
  CertifyHostKeys certify_;
  TaskFinished on_task_finished_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<http::AgentChannel>> channels_;  // by node id
  // Per connected node: its last heartbeat's counters (the rules judge their rise) and when
  // its telemetry was last kept.
  struct NodeSeen {
    std::optional<HeartbeatCounters> counters;
    std::optional<Timestamp> sampled_at;
  };
  std::map<std::string, NodeSeen> seen_;  // by node id, under mutex_
  // Per connected node: the protocol version its hello offered, which every message to it
  // is written in.
  std::map<std::string, int> versions_;  // by node id, under mutex_
  int sent_ = 0;                         // message ids of this replica's sends
  std::thread poller_;
  std::condition_variable poll_wake_;
  bool stopping_ = false;  // under mutex_
};

}  // namespace gpurent
