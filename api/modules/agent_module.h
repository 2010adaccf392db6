// The agents' transport to the fleet's control plane: the platform's CA, the agent listener,
// one channel per connected node with the protocol version its hello offered, healthy
// heartbeats batched into shared transactions, acks, and the tasks sent to each connected
// agent. What each message does to the fleet's records is fleet::ControlPlane's
// (fleet/control_plane.h); this module decodes, calls it and answers.
#pragma once

#include "agent_proto/messages.h"
#include "api/agent_listener.h"
#include "api/metrics.h"
#include "api/modules/heartbeat_batcher.h"
#include "api/modules/heartbeat_lag.h"
#include "api/modules/module.h"
#include "api/modules/module_context.h"
#include "core/certificate_authority.h"
#include "core/periodic_worker.h"
#include "core/worker_pool.h"
#include "fleet/control_plane.h"
#include "inventory/node_identity.h"
#include "inventory/node_store.h"
#include "scheduler/task_store.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace gpurent {

class AgentModule final : public Module, public http::AgentEndpoint {
 public:
  // Loads or makes the CA in config.agent_pki_dir. The listener starts with start().
  // The other modules' parts it works through, one instance each per process: inventory's
  // (nodes, their host keys, the health log) and the scheduler's (agent tasks, the lifecycle
  // told of failed nodes and finished tasks, the SSH host CA).
  struct Peers {
    inventory::NodeStore& nodes;
    inventory::NodeHostKeys& host_keys;
    inventory::NodeHealthLog& health_log;
    scheduler::TaskStore& tasks;
    scheduler::Lifecycle& lifecycle;
    scheduler::SshAccess& ssh_access;
  };
  AgentModule(const ModuleContext& ctx, WorkerPool& workers, const Peers& peers);
  ~AgentModule() override;
  AgentModule(const AgentModule&) = delete;
  AgentModule& operator=(const AgentModule&) = delete;

  // Agents speak on their own listener: no HTTP routes.
  void add_routes(http::Router&) override {}
  // Starts the listener unless agent_listen is off, and the poll (on every replica, listener
  // or not): tasks whose notification was missed, silent nodes, old telemetry.
  void start() override;
  void stop() override;
  // The listener's bound port once started; 0 when it is off.
  unsigned short agent_port() const { return agent_port_; }
  // Sends the node's tasks to its agent if it is connected to this replica: the ones not
  // sent yet, or with `resend_delivered` every unfinished one (after a reconnection).
  void deliver_tasks(const std::string& node_id, bool resend_delivered);
  const CertificateAuthority& ca() const { return ca_; }
  // The control plane's use cases, for the test-only routes (silence judged by hand).
  fleet::ControlPlane& control_plane() { return fleet_; }

  // The listener's channels and messages, and the heartbeats' lag to their commit.
  void add_metrics(http::Metrics& metrics) override;

  nlohmann::json enroll(const nlohmann::json& body, const std::string& remote_ip) override;
  std::string admit(const std::string& serial, const std::string& remote_ip) override;
  void opened(const std::shared_ptr<http::AgentChannel>& channel) override;
  void received(const std::shared_ptr<http::AgentChannel>& channel, std::string text) override;
  void closed(const std::shared_ptr<http::AgentChannel>& channel) override;

 private:
  std::shared_ptr<http::AgentChannel> channel_of(const std::string& node_id);
  // Encodes and sends one message of this replica's on `channel`.
  void send_to(http::AgentChannel& channel, agent_proto::Body body);
  void hello(const std::shared_ptr<http::AgentChannel>& channel,
             const agent_proto::Message& message, const agent_proto::Hello& hello);
  void heartbeat(const std::shared_ptr<http::AgentChannel>& channel, const std::string& message_id,
                 const agent_proto::Heartbeat& beat);
  // Tasks whose notification was missed, silent nodes, old telemetry.
  void poll_once();

  const Config& config_;
  PgPool& pool_;
  const Clock& clock_;
  WorkerPool& workers_;
  CertificateAuthority ca_;
  inventory::NodeIdentity identity_;
  scheduler::TaskStore& tasks_;
  fleet::ControlPlane fleet_;
  std::optional<http::AgentListener> listener_;
  unsigned short agent_port_ = 0;
  HeartbeatLag heartbeat_lag_;
  std::optional<HeartbeatBatcher> heartbeats_;  // while the listener runs
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<http::AgentChannel>> channels_;  // by node id
  // Per connected node: the protocol version its hello offered, which every message to it
  // is written in.
  std::map<std::string, int> versions_;  // by node id, under mutex_
  int sent_ = 0;                         // message ids of this replica's sends
  PeriodicWorker poll_;
};

}  // namespace gpurent
