// One simulated node's agent, without the network: what it says on a new connection (the
// hello), every heartbeat, and how it answers what the server sends (acks, tasks run by the
// simulated executor on a shared thread pool, one at a time in order, each id once). The
// messages are the real agent's (agent/agent_messages.h); the connection (fleet_runner.cpp)
// only carries their text.
#pragma once

#include "agent/agent_messages.h"
#include "agent/fleetsim/fleet_stats.h"
#include "agent/gpu_backend.h"
#include "agent/task_executor.h"
#include "agent/task_journal.h"
#include "core/worker_pool.h"

#include <chrono>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

namespace gpurent::agent::fleetsim {

// Where a connection's messages go: the current channel, or nowhere while there is none.
// Thread-safe (task workers send progress and results).
class Outbox {
 public:
  virtual ~Outbox() = default;
  virtual void send(std::string text) = 0;
};

// What the fleet's agents share. Outlives them.
struct AgentShared {
  GpuBackend& backend;  // the simulated backend: stateless, safe from any thread
  WorkerPool& task_workers;
  std::stop_token stop;
  FleetStats& stats;
  std::chrono::milliseconds provision_delay{2000};
  std::string agent_version = GPURENT_VERSION;
};

class SimulatedAgent {
 public:
  // `state_dir` holds the node's task journal and its access files.
  SimulatedAgent(AgentShared& shared, std::string hostname, std::filesystem::path state_dir,
                 Outbox& outbox);

  // A new connection: the hello to send first. Its ack starts the session.
  std::string hello();

  enum class Heard {
    kOther,
    kHelloAccepted,  // the session has started: call session_started()
    kHelloRefused,   // the server answered the hello with an error: close, back off
  };
  // A message from the server: answers it through the outbox.
  Heard receive(const std::string& text);

  // After the hello's ack: the first heartbeat and the results the server may not have.
  void session_started();
  // The connection closed: heartbeats in flight will not be acked.
  void session_ended();
  void send_heartbeat();

 private:
  std::string next_id();
  void send(agent_proto::Body body);
  void handle_task(const std::string& message_id, const agent_proto::Task& task);
  void run_tasks();
  TaskExecutor& executor();

  AgentShared& shared_;
  std::string hostname_;
  std::filesystem::path state_dir_;
  Outbox& outbox_;
  TaskJournal journal_;

  std::mutex mutex_;
  std::uint64_t next_id_ = 0;
  std::string hello_id_;
  std::deque<std::pair<std::string, std::chrono::steady_clock::time_point>> heartbeats_;
  std::map<std::string, std::string> result_messages_;  // message id -> task id, until acked
  std::deque<agent_proto::Task> queue_;
  std::set<std::string> running_;  // queued or running: a heartbeat's running_task_ids
  bool worker_busy_ = false;
  std::vector<agent_proto::XidEvent> pending_events_;
  std::unique_ptr<TaskExecutor> executor_;  // made at the first task
};

}  // namespace gpurent::agent::fleetsim
