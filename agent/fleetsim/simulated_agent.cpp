// A simulated agent's side of the conversation.
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
      journal_(state_dir_ / "tasks.json") {}

std::string SimulatedAgent::next_id() {
  return "a-" + std::to_string(++next_id_);
}

std::string SimulatedAgent::hello() {
  auto body = make_hello(shared_.agent_version, hostname_, shared_.backend, journal_);
  std::lock_guard lock(mutex_);
  hello_id_ = next_id();
  return proto::encode({.id = hello_id_, .body = std::move(body)});
}

void SimulatedAgent::send(proto::Body body) {
  std::string text;
  {
    std::lock_guard lock(mutex_);
    std::string id = next_id();
    if (const auto* result = std::get_if<proto::TaskResult>(&body)) {
      result_messages_[id] = result->task_id;
    }
    text = proto::encode({.id = id, .body = std::move(body)});
  }
  outbox_.send(std::move(text));
}

void SimulatedAgent::session_started() {
  send_heartbeat();
  // Results the server may not have: it records the first and acks repeats.
  for (const auto& result : journal_.unacked_results()) send(result);
}

void SimulatedAgent::session_ended() {
  std::lock_guard lock(mutex_);
  heartbeats_.clear();
  hello_id_.clear();
}

void SimulatedAgent::send_heartbeat() {
  std::string text;
  {
    std::lock_guard lock(mutex_);
    auto draft = make_heartbeat(shared_.backend, pending_events_,
                                std::vector<std::string>(running_.begin(), running_.end()));
    std::string id = next_id();
    try {
      text = proto::encode({.id = id, .body = std::move(draft.beat)});
    } catch (const proto::ProtocolError& e) {
      log::warn("the heartbeat did not fit: {}", e.what());
      return;
    }
    pending_events_.erase(pending_events_.begin(),
                          pending_events_.begin() + static_cast<std::ptrdiff_t>(draft.carried));
    heartbeats_.emplace_back(id, SteadyClock::now());
    if (heartbeats_.size() > kHeartbeatsTracked) heartbeats_.pop_front();
  }
  shared_.stats.heartbeats_sent.fetch_add(1, std::memory_order_relaxed);
  outbox_.send(std::move(text));
}

SimulatedAgent::Heard SimulatedAgent::receive(const std::string& text) {
  proto::Message m;
  try {
    m = proto::decode(text);
  } catch (const proto::ProtocolError& e) {
    log::warn("the control plane sent a malformed message: {}", e.what());
    send(proto::Error{std::string(proto::kErrorMalformed), e.what(), std::nullopt});
    return Heard::kOther;
  }
  if (const auto* ack = std::get_if<proto::Ack>(&m.body)) {
    std::string task_id;
    {
      std::lock_guard lock(mutex_);
      if (!hello_id_.empty() && ack->acked_id == hello_id_) {
        hello_id_.clear();
        return Heard::kHelloAccepted;
      }
      for (auto it = heartbeats_.begin(); it != heartbeats_.end(); ++it) {
        if (it->first != ack->acked_id) continue;
        shared_.stats.heartbeat_rtt.record(
            std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - it->second));
        shared_.stats.heartbeats_acked.fetch_add(1, std::memory_order_relaxed);
        heartbeats_.erase(it);
        return Heard::kOther;
      }
      auto it = result_messages_.find(ack->acked_id);
      if (it == result_messages_.end()) return Heard::kOther;
      task_id = it->second;
      result_messages_.erase(it);
    }
    journal_.mark_acked(task_id);
    return Heard::kOther;
  }
  if (const auto* task = std::get_if<proto::Task>(&m.body)) {
    handle_task(m.id, *task);
    return Heard::kOther;
  }
  if (const auto* error = std::get_if<proto::Error>(&m.body)) {
    bool about_hello = false;
    {
      std::lock_guard lock(mutex_);
      about_hello = !hello_id_.empty() && error->offending_id == hello_id_;
    }
    log::warn("{}: the control plane answered an error: {}: {}", hostname_, error->code,
              error->message);
    return about_hello ? Heard::kHelloRefused : Heard::kOther;
  }
  send(proto::Error{std::string(proto::kErrorMalformed),
                    std::string(proto::type_name(m.body)) + " is sent by the agent", m.id});
  return Heard::kOther;
}

void SimulatedAgent::handle_task(const std::string& message_id, const proto::Task& task) {
  shared_.stats.tasks_received.fetch_add(1, std::memory_order_relaxed);
  auto intake = take_task(journal_, task, now_utc());
  if (intake.action != TaskIntake::Action::kRun) {
    send(proto::Ack{message_id});
    if (intake.result) send(*intake.result);
    return;
  }
  bool start_worker = false;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(task);
    running_.insert(task.task_id);
    start_worker = !std::exchange(worker_busy_, true);
  }
  send(proto::Ack{message_id});
  if (start_worker && !shared_.task_workers.post([this] { run_tasks(); })) {
    std::lock_guard lock(mutex_);
    worker_busy_ = false;  // the pool is stopping; the journal ends it as interrupted next run
  }
}

TaskExecutor& SimulatedAgent::executor() {
  if (!executor_) {
    executor_ = make_simulated_executor(
        {.access_root = state_dir_ / "access", .provision_delay = shared_.provision_delay},
        shared_.backend);
  }
  return *executor_;
}

// On a task worker: this agent's queued tasks, one after the other.
void SimulatedAgent::run_tasks() {
  while (true) {
    proto::Task task;
    {
      std::lock_guard lock(mutex_);
      if (queue_.empty()) {
        worker_busy_ = false;
        return;
      }
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    std::optional<TaskOutcome> outcome;
    try {
      outcome = executor().execute(
          task,
          [&](int percent, const std::string& message) {
            send(proto::TaskProgress{
                .task_id = task.task_id, .percent = percent, .message = message});
          },
          shared_.stop);
    } catch (const std::exception& e) {
      outcome = TaskOutcome{.ok = false, .message = e.what(), .result = std::nullopt};
    }
    if (!outcome) {
      std::lock_guard lock(mutex_);
      worker_busy_ = false;
      return;  // stopping: left unfinished, as a killed agent leaves it
    }
    auto result = result_of(task, *outcome);
    journal_.finish(result);
    {
      std::lock_guard lock(mutex_);
      running_.erase(task.task_id);
    }
    shared_.stats.tasks_finished.fetch_add(1, std::memory_order_relaxed);
    send(result);
  }
}

}  // namespace gpurent::agent::fleetsim
