// The agent's main loop and its task worker.
#include "agent/agent_runner.h"

#include "agent/agent_messages.h"
#include "agent/backoff.h"
#include "core/log.h"

#include <algorithm>
#include <random>
#include <thread>

namespace gpurent::agent {

namespace proto = agent_proto;
using Clock = std::chrono::steady_clock;

AgentRunner::AgentRunner(RunnerOptions options, GpuBackend& backend, TaskExecutor& executor,
                         TaskJournal& journal, ChannelOpener open)
    : options_(std::move(options)),
      backend_(backend),
      executor_(executor),
      journal_(journal),
      open_(std::move(open)) {}

AgentRunner::~AgentRunner() {
  stop();
}

void AgentRunner::stop() {
  {
    std::lock_guard lock(stop_mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
}

void AgentRunner::pause(std::chrono::milliseconds d) {
  std::unique_lock lock(stop_mutex_);
  stop_cv_.wait_for(lock, d, [&] { return stopping_.load(); });
}

void AgentRunner::run() {
  std::jthread worker([this](std::stop_token stop) { work(stop); });
  Backoff backoff(options_.backoff_initial, options_.backoff_max, std::random_device{}());
  while (!stopping_) {
    std::shared_ptr<Channel> channel;
    try {
      channel = open_();
    } catch (const ChannelError& e) {
      auto wait = backoff.next();
      log::warn("cannot reach the control plane: {}; trying again in {} ms", e.what(),
                wait.count());
      pause(wait);
      continue;
    }
    if (say_hello(*channel)) {
      backoff.reset();
      session(channel);
    }
    {
      std::lock_guard lock(channel_mutex_);
      channel_.reset();
    }
    if (stopping_) {
      channel->close();
      break;
    }
    auto wait = backoff.next();
    log::warn("the channel to the control plane closed; reconnecting in {} ms", wait.count());
    pause(wait);
  }
  worker.request_stop();
  queue_cv_.notify_all();
}

bool AgentRunner::say_hello(Channel& channel) {
  proto::Hello hello;
  try {
    hello = make_hello(options_.agent_version, options_.hostname, backend_, journal_);
    hello.ssh_host_keys = options_.ssh_host_keys;
    hello.ssh_probe_key = options_.ssh_probe_key;
  } catch (const std::exception& e) {
    log::error("cannot read this node's GPUs for the hello: {}", e.what());
    return false;
  }
  std::string id = "a-" + std::to_string(++next_id_);
  try {
    channel.send(proto::encode({.id = id, .body = std::move(hello)}));
  } catch (const std::exception& e) {
    log::warn("sending the hello failed: {}", e.what());
    return false;
  }
  auto deadline = Clock::now() + options_.hello_timeout;
  while (!stopping_ && Clock::now() < deadline) {
    auto text = channel.receive(std::chrono::milliseconds(200));
    if (!text) {
      if (channel.closed()) break;
      continue;
    }
    try {
      auto m = proto::decode(*text);
      if (const auto* ack = std::get_if<proto::Ack>(&m.body); ack && ack->acked_id == id) {
        log::info("connected to the control plane");
        return true;
      }
      if (const auto* error = std::get_if<proto::Error>(&m.body)) {
        log::error("the control plane refused the hello: {}: {}", error->code, error->message);
        return false;
      }
    } catch (const proto::ProtocolError& e) {
      log::warn("the control plane sent a malformed message: {}", e.what());
    }
  }
  log::warn("no answer to the hello");
  return false;
}

void AgentRunner::session(const std::shared_ptr<Channel>& channel) {
  {
    std::lock_guard lock(channel_mutex_);
    channel_ = channel;
  }
  send_heartbeat();
  // Results the server may not have: it records the first and acks repeats.
  for (const auto& result : journal_.unacked_results()) send_result(result);
  auto next_beat = Clock::now() + options_.heartbeat;
  while (!stopping_ && !channel->closed()) {
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_beat - Clock::now());
    auto text = channel->receive(
        std::clamp(wait, std::chrono::milliseconds(0), std::chrono::milliseconds(200)));
    if (text) handle(*text);
    if (Clock::now() >= next_beat) {
      send_heartbeat();
      next_beat = Clock::now() + options_.heartbeat;
    }
  }
}

bool AgentRunner::send(proto::Body body) {
  std::shared_ptr<Channel> channel;
  {
    std::lock_guard lock(channel_mutex_);
    channel = channel_;
  }
  if (!channel) return false;
  std::string id = "a-" + std::to_string(++next_id_);
  if (const auto* result = std::get_if<proto::TaskResult>(&body)) {
    std::lock_guard lock(sent_mutex_);
    result_messages_[id] = result->task_id;
  }
  try {
    channel->send(proto::encode({.id = id, .body = std::move(body)}));
    return true;
  } catch (const std::exception& e) {
    log::warn("sending to the control plane failed: {}", e.what());
    return false;
  }
}

void AgentRunner::send_heartbeat() {
  if (backend_.hung()) {
    if (!hung_logged_) log::warn("the node does not answer (simulated hang): no heartbeats");
    hung_logged_ = true;
    return;
  }
  std::vector<std::string> running;
  {
    std::lock_guard lock(queue_mutex_);
    running.assign(running_.begin(), running_.end());
  }
  auto draft = make_heartbeat(backend_, pending_events_, std::move(running));
  // Events that did not go out (no channel, too long a message) go with the next one.
  bool sent = false;
  try {
    sent = send(std::move(draft.beat));
  } catch (const proto::ProtocolError& e) {
    log::warn("the heartbeat did not fit: {}", e.what());
  }
  if (sent) {
    pending_events_.erase(pending_events_.begin(),
                          pending_events_.begin() + static_cast<std::ptrdiff_t>(draft.carried));
  }
}

void AgentRunner::send_result(const proto::TaskResult& result) {
  send(result);
}

void AgentRunner::handle(const std::string& text) {
  proto::Message m;
  try {
    m = proto::decode(text);
  } catch (const proto::ProtocolError& e) {
    log::warn("the control plane sent a malformed message: {}", e.what());
    send(proto::Error{std::string(proto::kErrorMalformed), e.what(), std::nullopt});
    return;
  }
  log::debug("received {} {}", proto::type_name(m.body), m.id);
  if (const auto* task = std::get_if<proto::Task>(&m.body)) {
    handle_task(m.id, *task);
  } else if (const auto* ack = std::get_if<proto::Ack>(&m.body)) {
    std::string task_id;
    {
      std::lock_guard lock(sent_mutex_);
      auto it = result_messages_.find(ack->acked_id);
      if (it == result_messages_.end()) return;
      task_id = it->second;
      result_messages_.erase(it);
    }
    journal_.mark_acked(task_id);
  } else if (const auto* error = std::get_if<proto::Error>(&m.body)) {
    log::warn("the control plane answered an error: {}: {}", error->code, error->message);
  } else {
    send(proto::Error{std::string(proto::kErrorMalformed),
                      std::string(proto::type_name(m.body)) + " is sent by the agent", m.id});
  }
}

void AgentRunner::handle_task(const std::string& message_id, const proto::Task& task) {
  auto intake = take_task(journal_, task, now_utc());
  if (intake.action != TaskIntake::Action::kRun) {
    send(proto::Ack{message_id});
    if (intake.result) send_result(*intake.result);
    return;
  }
  log::info("task {} ({}) accepted", task.task_id, proto::to_string(task.kind));
  {
    std::lock_guard lock(queue_mutex_);
    queue_.push_back(task);
    running_.insert(task.task_id);
  }
  queue_cv_.notify_all();
  send(proto::Ack{message_id});
}

void AgentRunner::work(const std::stop_token& stop) {
  while (!stop.stop_requested()) {
    proto::Task task;
    {
      std::unique_lock lock(queue_mutex_);
      if (!queue_cv_.wait(lock, stop, [&] { return !queue_.empty(); })) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    log::info("task {} ({}) started", task.task_id, proto::to_string(task.kind));
    std::optional<TaskOutcome> outcome;
    try {
      outcome = executor_.execute(
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
      log::warn("task {} stopped unfinished", task.task_id);
      return;
    }
    proto::TaskResult result = result_of(task, *outcome);
    journal_.finish(result);
    {
      std::lock_guard lock(queue_mutex_);
      running_.erase(task.task_id);
    }
    log::info("task {} ended: {} {}", task.task_id, result.ok ? "ok" : "failed", result.message);
    send_result(result);
  }
}

}  // namespace gpurent::agent
