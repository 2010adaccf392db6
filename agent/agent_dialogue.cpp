// The agent's side of the protocol, shared by gpurent-agent and gpurent-fleetsim.
#include "agent/agent_dialogue.h"

#include "agent/agent_messages.h"
#include "core/log.h"

#include <algorithm>
#include <utility>

namespace gpurent::agent {

namespace proto = agent_proto;

AgentDialogue::AgentDialogue(DialogueOptions options, GpuBackend& backend, TaskJournal& journal,
                             MessageSink& sink, TaskRunner& runner)
    : options_(std::move(options)),
      backend_(backend),
      journal_(journal),
      sink_(sink),
      runner_(runner) {}

std::string AgentDialogue::next_id() {
  return "a-" + std::to_string(++next_id_);
}

std::string AgentDialogue::hello() {
  auto body = make_hello(options_.agent_version, options_.hostname, backend_, journal_);
  body.ssh_host_keys = options_.ssh_host_keys;
  body.ssh_probe_key = options_.ssh_probe_key;
  std::string id = next_id();
  std::string text = proto::encode({.id = id, .body = std::move(body)});
  std::lock_guard lock(mutex_);
  hello_id_ = std::move(id);
  return text;
}

bool AgentDialogue::send(proto::Body body) {
  std::string_view type = proto::type_name(body);
  std::string id = next_id();
  if (const auto* result = std::get_if<proto::TaskResult>(&body)) {
    // Before it goes out: the ack may come back before send returns.
    std::lock_guard lock(mutex_);
    result_messages_[id] = result->task_id;
  }
  std::string text;
  try {
    text = proto::encode({.id = id, .body = std::move(body)});
  } catch (const proto::ProtocolError& e) {
    log::warn("{}the {} did not fit: {}", options_.log_prefix, type, e.what());
    return false;
  }
  return sink_.send(std::move(text));
}

std::optional<std::string> AgentDialogue::session_started() {
  auto beat = send_heartbeat();
  // Results the server may not have: it records the first and acks repeats.
  for (const auto& result : journal_.unacked_results()) send(result);
  return beat;
}

void AgentDialogue::session_ended() {
  std::lock_guard lock(mutex_);
  hello_id_.clear();
}

std::optional<std::string> AgentDialogue::send_heartbeat() {
  if (backend_.hung()) {
    if (!hung_logged_) {
      log::warn("{}the node does not answer (simulated hang): no heartbeats", options_.log_prefix);
    }
    hung_logged_ = true;
    return std::nullopt;
  }
  std::vector<std::string> running;
  {
    std::lock_guard lock(mutex_);
    running.assign(running_.begin(), running_.end());
  }
  auto draft = make_heartbeat(backend_, pending_events_, std::move(running));
  std::string id = next_id();
  std::string text;
  try {
    text = proto::encode({.id = id, .body = std::move(draft.beat)});
  } catch (const proto::ProtocolError& e) {
    log::warn("{}the heartbeat did not fit: {}", options_.log_prefix, e.what());
    return std::nullopt;
  }
  // Events that did not go out (no connection, too long a message) go with the next one.
  if (!sink_.send(std::move(text))) return std::nullopt;
  pending_events_.erase(pending_events_.begin(),
                        pending_events_.begin() + static_cast<std::ptrdiff_t>(draft.carried));
  return id;
}

AgentDialogue::Heard AgentDialogue::receive(const std::string& text) {
  proto::Message m;
  try {
    m = proto::decode(text);
  } catch (const proto::ProtocolError& e) {
    log::warn("{}the control plane sent a malformed message: {}", options_.log_prefix, e.what());
    send(proto::Error{std::string(proto::kErrorMalformed), e.what(), std::nullopt});
    return {};
  }
  log::debug("{}received {} {}", options_.log_prefix, proto::type_name(m.body), m.id);
  {
    std::lock_guard lock(mutex_);
    if (!hello_id_.empty()) {
      // The server answers the hello before it says anything else; whatever it sends before
      // that answer is dropped (a task comes again once the hello is acked).
      if (const auto* ack = std::get_if<proto::Ack>(&m.body); ack && ack->acked_id == hello_id_) {
        hello_id_.clear();
        return {.what = Heard::What::kHelloAccepted, .acked_id = {}, .error = std::nullopt};
      }
      if (const auto* error = std::get_if<proto::Error>(&m.body)) {
        hello_id_.clear();
        return {.what = Heard::What::kHelloRefused, .acked_id = {}, .error = *error};
      }
      return {};
    }
  }
  if (const auto* ack = std::get_if<proto::Ack>(&m.body)) {
    std::optional<std::string> task_id;
    {
      std::lock_guard lock(mutex_);
      if (auto it = result_messages_.find(ack->acked_id); it != result_messages_.end()) {
        task_id = std::move(it->second);
        result_messages_.erase(it);
      }
    }
    if (task_id) journal_.mark_acked(*task_id);
    return {.what = Heard::What::kAck, .acked_id = ack->acked_id, .error = std::nullopt};
  }
  if (const auto* task = std::get_if<proto::Task>(&m.body)) {
    handle_task(m.id, *task);
    return {.what = Heard::What::kTask, .acked_id = {}, .error = std::nullopt};
  }
  if (const auto* error = std::get_if<proto::Error>(&m.body)) {
    log::warn("{}the control plane answered an error: {}: {}", options_.log_prefix, error->code,
              error->message);
    return {};
  }
  send(proto::Error{std::string(proto::kErrorMalformed),
                    std::string(proto::type_name(m.body)) + " is sent by the agent", m.id});
  return {};
}

void AgentDialogue::handle_task(const std::string& message_id, const proto::Task& task) {
  auto intake = take_task(journal_, task, now_utc());
  if (intake.action != TaskIntake::Action::kRun) {
    send(proto::Ack{message_id});
    if (intake.result) send(*intake.result);
    return;
  }
  runner_.accepted(task);
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    enqueue(task);
    running_.insert(task.task_id);
    wake = !std::exchange(runner_busy_, true);
  }
  send(proto::Ack{message_id});
  if (wake && !runner_.wake()) {
    std::lock_guard lock(mutex_);
    runner_busy_ = false;  // stopping: the journal ends the task as interrupted next run
  }
}

void AgentDialogue::enqueue(const proto::Task& task) {
  // A rental's access is its last step before `active` and takes a moment: it goes ahead of
  // the long tasks queued (provisions, wipes, probes), which are other rentals' or the
  // node's, since the server sends it only once this rental's provision has finished. A node
  // given eight one-GPU rentals at once so makes the first usable after one provision, not
  // after all eight. Among themselves tasks keep the order they came in.
  if (task.kind == proto::TaskKind::kInstallAccess) {
    auto long_task = std::find_if(queue_.begin(), queue_.end(), [](const proto::Task& t) {
      return t.kind == proto::TaskKind::kProvision || t.kind == proto::TaskKind::kWipe ||
             t.kind == proto::TaskKind::kHealthProbe;
    });
    queue_.insert(long_task, task);
    return;
  }
  queue_.push_back(task);
}

void AgentDialogue::run_tasks(TaskExecutor& executor, const std::stop_token& stop) {
  while (true) {
    proto::Task task;
    {
      std::lock_guard lock(mutex_);
      // Stopping: what is still queued is not started (the journal ends it as interrupted).
      if (queue_.empty() || stop.stop_requested()) {
        runner_busy_ = false;
        return;
      }
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    runner_.started(task);
    std::optional<TaskOutcome> outcome;
    try {
      outcome = executor.execute(
          task,
          [&](int percent, const std::string& message) {
            send(proto::TaskProgress{
                .task_id = task.task_id, .percent = percent, .message = message});
          },
          stop);
    } catch (const std::exception& e) {
      outcome = TaskOutcome{.ok = false, .message = e.what(), .result = std::nullopt};
    }
    if (!outcome) {
      {
        std::lock_guard lock(mutex_);
        runner_busy_ = false;
      }
      runner_.stopped(task);
      return;
    }
    auto result = result_of(task, *outcome);
    journal_.finish(result);
    {
      std::lock_guard lock(mutex_);
      running_.erase(task.task_id);
    }
    runner_.ended(result);
    send(result);
  }
}

}  // namespace gpurent::agent
