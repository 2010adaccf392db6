// The agent's main loop and its task worker.
#include "agent/agent_runner.h"

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
      executor_(executor),
      open_(std::move(open)),
      dialogue_({.agent_version = options_.agent_version,
                 .hostname = options_.hostname,
                 .ssh_host_keys = options_.ssh_host_keys,
                 .ssh_probe_key = options_.ssh_probe_key,
                 .log_prefix = ""},
                backend, journal, *this, *this) {
  mark_progress();
}

AgentRunner::~AgentRunner() {
  stop();
}

void AgentRunner::stop() {
  bool first = false;
  {
    std::lock_guard lock(stop_mutex_);
    first = !stopping_.exchange(true);
  }
  stop_cv_.notify_all();
  if (first) tell("STOPPING=1");
}

void AgentRunner::mark_progress() {
  progress_ = Clock::now().time_since_epoch().count();
}

bool AgentRunner::responsive(std::chrono::milliseconds within) const {
  // Ahead of now while the loop is in a timed wait (pause).
  auto last = Clock::time_point(Clock::duration(progress_.load()));
  return Clock::now() - last <= within;
}

void AgentRunner::tell(const std::string& state) {
  if (options_.notify) options_.notify(state);
}

void AgentRunner::pause(std::chrono::milliseconds d) {
  // A timed wait cannot hang: the loop is accounted for until it ends, so a minute's backoff
  // is not taken for a stuck loop.
  auto until = Clock::now() + d;
  progress_ = until.time_since_epoch().count();
  std::unique_lock lock(stop_mutex_);
  stop_cv_.wait_until(lock, until, [&] { return stopping_.load(); });
  lock.unlock();
  mark_progress();
}

void AgentRunner::run() {
  {
    // Tasks a previous run() left queued are this worker's too.
    std::lock_guard lock(wake_mutex_);
    woken_ = true;
  }
  std::jthread worker([this](std::stop_token stop) { work(stop); });
  Backoff backoff(options_.backoff_initial, options_.backoff_max, std::random_device{}());
  while (!stopping_) {
    mark_progress();
    std::shared_ptr<Channel> channel;
    try {
      channel = open_();
    } catch (const ChannelError& e) {
      auto wait = backoff.next();
      log::warn("cannot reach the control plane: {}; trying again in {} ms", e.what(),
                wait.count());
      tell("STATUS=cannot reach the control plane: " + std::string(e.what()));
      pause(wait);
      continue;
    }
    mark_progress();
    if (say_hello(*channel)) {
      backoff.reset();
      tell("STATUS=connected to the control plane");
      session(channel);
    }
    {
      std::lock_guard lock(channel_mutex_);
      channel_.reset();
    }
    dialogue_.session_ended();
    if (stopping_) {
      channel->close();
      break;
    }
    auto wait = backoff.next();
    log::warn("the channel to the control plane closed; reconnecting in {} ms", wait.count());
    tell("STATUS=reconnecting to the control plane");
    pause(wait);
  }
  worker.request_stop();
  wake_cv_.notify_all();
}

bool AgentRunner::say_hello(Channel& channel) {
  std::string hello;
  try {
    hello = dialogue_.hello();
  } catch (const proto::ProtocolError& e) {
    log::warn("sending the hello failed: {}", e.what());
    return false;
  } catch (const std::exception& e) {
    log::error("cannot read this node's GPUs for the hello: {}", e.what());
    return false;
  }
  try {
    channel.send(hello);
  } catch (const std::exception& e) {
    log::warn("sending the hello failed: {}", e.what());
    return false;
  }
  auto deadline = Clock::now() + options_.hello_timeout;
  while (!stopping_ && Clock::now() < deadline) {
    mark_progress();
    auto text = channel.receive(std::chrono::milliseconds(200));
    if (!text) {
      if (channel.closed()) break;
      continue;
    }
    auto heard = dialogue_.receive(*text);
    if (heard.what == AgentDialogue::Heard::What::kHelloAccepted) {
      log::info("connected to the control plane");
      return true;
    }
    if (heard.what == AgentDialogue::Heard::What::kHelloRefused) {
      log::error("the control plane refused the hello: {}: {}", heard.error->code,
                 heard.error->message);
      return false;
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
  dialogue_.session_started();
  auto next_beat = Clock::now() + options_.heartbeat;
  while (!stopping_ && !channel->closed()) {
    mark_progress();
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_beat - Clock::now());
    auto text = channel->receive(
        std::clamp(wait, std::chrono::milliseconds(0), std::chrono::milliseconds(200)));
    if (text) dialogue_.receive(*text);
    if (Clock::now() >= next_beat) {
      dialogue_.send_heartbeat();
      next_beat = Clock::now() + options_.heartbeat;
    }
  }
}

bool AgentRunner::send(std::string text) {
  std::shared_ptr<Channel> channel;
  {
    std::lock_guard lock(channel_mutex_);
    channel = channel_;
  }
  if (!channel) return false;
  try {
    channel->send(text);
    return true;
  } catch (const std::exception& e) {
    log::warn("sending to the control plane failed: {}", e.what());
    return false;
  }
}

bool AgentRunner::wake() {
  {
    std::lock_guard lock(wake_mutex_);
    woken_ = true;
  }
  wake_cv_.notify_all();
  return true;
}

void AgentRunner::work(const std::stop_token& stop) {
  while (!stop.stop_requested()) {
    {
      std::unique_lock lock(wake_mutex_);
      if (!wake_cv_.wait(lock, stop, [&] { return woken_; })) return;
      woken_ = false;
    }
    dialogue_.run_tasks(executor_, stop);
  }
}

void AgentRunner::accepted(const proto::Task& task) {
  log::info("task {} ({}) accepted", task.task_id, proto::to_string(task.kind));
}

void AgentRunner::started(const proto::Task& task) {
  log::info("task {} ({}) started", task.task_id, proto::to_string(task.kind));
}

void AgentRunner::ended(const proto::TaskResult& result) {
  log::info("task {} ended: {} {}", result.task_id, result.ok ? "ok" : "failed", result.message);
}

void AgentRunner::stopped(const proto::Task& task) {
  log::warn("task {} stopped unfinished", task.task_id);
}

}  // namespace gpurent::agent
