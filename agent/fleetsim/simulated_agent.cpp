// A simulated agent: the shared dialogue, the pool that runs its tasks, the fleet's counters.
#include "agent/fleetsim/simulated_agent.h"

#include "core/log.h"

namespace gpurent::agent::fleetsim {

namespace proto = agent_proto;
using SteadyClock = std::chrono::steady_clock;

namespace {
// Heartbeats awaiting their ack; older ones are forgotten (a server that slow shows anyway).
constexpr std::size_t kHeartbeatsTracked = 8;
}  // namespace

SimulatedAgent::SimulatedAgent(AgentShared& shared, std::string hostname,
                               std::filesystem::path state_dir, Outbox& outbox)
    : shared_(shared),
      hostname_(std::move(hostname)),
      state_dir_(std::move(state_dir)),
      outbox_(outbox),
      journal_(state_dir_ / "tasks.json"),
      dialogue_({.agent_version = shared_.agent_version,
                 .hostname = hostname_,
                 .ssh_host_keys = {},
                 .ssh_probe_key = std::nullopt,
                 .log_prefix = hostname_ + ": "},
                shared_.backend, journal_, *this, *this) {}

std::string SimulatedAgent::hello() {
  return dialogue_.hello();
}

bool SimulatedAgent::send(std::string text) {
  outbox_.send(std::move(text));
  return true;
}

void SimulatedAgent::session_started() {
  auto sent_at = SteadyClock::now();
  track_heartbeat(dialogue_.session_started(), sent_at);
}

void SimulatedAgent::session_ended() {
  dialogue_.session_ended();
  std::lock_guard lock(mutex_);
  heartbeats_.clear();
}

void SimulatedAgent::send_heartbeat() {
  auto sent_at = SteadyClock::now();
  track_heartbeat(dialogue_.send_heartbeat(), sent_at);
}

void SimulatedAgent::track_heartbeat(std::optional<std::string> id,
                                     SteadyClock::time_point sent_at) {
  if (!id) return;
  {
    std::lock_guard lock(mutex_);
    heartbeats_.emplace_back(std::move(*id), sent_at);
    if (heartbeats_.size() > kHeartbeatsTracked) heartbeats_.pop_front();
  }
  shared_.stats.heartbeats_sent.fetch_add(1, std::memory_order_relaxed);
}

SimulatedAgent::Heard SimulatedAgent::receive(const std::string& text) {
  auto heard = dialogue_.receive(text);
  switch (heard.what) {
    case AgentDialogue::Heard::What::kHelloAccepted:
      return Heard::kHelloAccepted;
    case AgentDialogue::Heard::What::kHelloRefused:
      log::warn("{}: the control plane answered an error: {}: {}", hostname_, heard.error->code,
                heard.error->message);
      return Heard::kHelloRefused;
    case AgentDialogue::Heard::What::kAck: {
      std::lock_guard lock(mutex_);
      for (auto it = heartbeats_.begin(); it != heartbeats_.end(); ++it) {
        if (it->first != heard.acked_id) continue;
        shared_.stats.heartbeat_rtt.record(
            std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - it->second));
        shared_.stats.heartbeats_acked.fetch_add(1, std::memory_order_relaxed);
        heartbeats_.erase(it);
        break;
      }
      return Heard::kOther;
    }
    case AgentDialogue::Heard::What::kTask:
      shared_.stats.tasks_received.fetch_add(1, std::memory_order_relaxed);
      return Heard::kOther;
    case AgentDialogue::Heard::What::kOther:
      return Heard::kOther;
  }
  return Heard::kOther;
}

bool SimulatedAgent::wake() {
  return shared_.task_workers.post([this] { dialogue_.run_tasks(executor(), shared_.stop); });
}

void SimulatedAgent::ended(const proto::TaskResult& /*result*/) {
  shared_.stats.tasks_finished.fetch_add(1, std::memory_order_relaxed);
}

TaskExecutor& SimulatedAgent::executor() {
  if (!executor_) {
    executor_ = make_simulated_executor(
        {.access_root = state_dir_ / "access", .provision_delay = shared_.provision_delay},
        shared_.backend);
  }
  return *executor_;
}

}  // namespace gpurent::agent::fleetsim
