// One simulated node's agent, without the network: the real agent's dialogue
// (agent/agent_dialogue.h) with tasks run by the simulated executor on a shared thread pool,
// and the fleet's counters. The connection (fleet_runner.cpp) only carries the messages' text.
#pragma once

#include "agent/agent_dialogue.h"
#include "agent/fleetsim/fleet_stats.h"
#include "agent/gpu_backend.h"
#include "agent/task_executor.h"
#include "agent/task_journal.h"
#include "core/worker_pool.h"

#include <chrono>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>

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

class SimulatedAgent : private MessageSink, private TaskRunner {
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
  // Remembers a heartbeat that went out, for its round trip.
  void track_heartbeat(std::optional<std::string> id,
                       std::chrono::steady_clock::time_point sent_at);
  // MessageSink: the outbox, which drops what comes while no channel is open.
  bool send(std::string text) override;
  // TaskRunner: the shared pool, and the fleet's task counter.
  bool wake() override;
  void ended(const agent_proto::TaskResult& result) override;
  TaskExecutor& executor();

  AgentShared& shared_;
  std::string hostname_;
  std::filesystem::path state_dir_;
  Outbox& outbox_;
  TaskJournal journal_;
  AgentDialogue dialogue_;

  std::mutex mutex_;
  // Heartbeats awaiting their ack, with when each was sent: the round trip's clock.
  std::deque<std::pair<std::string, std::chrono::steady_clock::time_point>> heartbeats_;
  std::unique_ptr<TaskExecutor> executor_;  // made at the first task, on a task worker
};

}  // namespace gpurent::agent::fleetsim
