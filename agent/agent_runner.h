// `gpurent-agent run`: keeps one channel to the control plane (reconnecting with backoff),
// says hello, sends heartbeats, and runs tasks one at a time in the order they came, each id
// at most once (agent_proto/README.md).
#pragma once

#include "agent/channel.h"
#include "agent/gpu_backend.h"
#include "agent/task_executor.h"
#include "agent/task_journal.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpurent::agent {

struct RunnerOptions {
  std::string agent_version = GPURENT_VERSION;
  std::string hostname;
  std::chrono::milliseconds heartbeat{10000};
  std::chrono::milliseconds backoff_initial{1000};
  std::chrono::milliseconds backoff_max{60000};
  std::chrono::seconds hello_timeout{30};
  // The node's sshd host keys (host_keys.h), sent in every hello.
  std::vector<std::string> ssh_host_keys;
  // The agent's probe key's public line (login_probe.h), sent in every hello; none when the
  // agent has no sshd to probe.
  std::optional<std::string> ssh_probe_key;
};

// Opens a new channel; throws ChannelError. Tests give one of their own.
using ChannelOpener = std::function<std::unique_ptr<Channel>()>;

class AgentRunner {
 public:
  // The references outlive the runner.
  AgentRunner(RunnerOptions options, GpuBackend& backend, TaskExecutor& executor,
              TaskJournal& journal, ChannelOpener open);
  ~AgentRunner();
  AgentRunner(const AgentRunner&) = delete;
  AgentRunner& operator=(const AgentRunner&) = delete;

  // Until stop(): connect, talk, reconnect. Returns once the channel is closed and the
  // running task has been asked to stop.
  void run();
  // From any thread.
  void stop();

 private:
  void session(const std::shared_ptr<Channel>& channel);
  bool say_hello(Channel& channel);
  void handle(const std::string& text);
  void handle_task(const std::string& message_id, const agent_proto::Task& task);
  void send_heartbeat();
  void send_result(const agent_proto::TaskResult& result);
  // Sends on the current channel; false when there is none or it broke.
  bool send(agent_proto::Body body);
  void work(const std::stop_token& stop);
  // Waits `d` unless stop() comes first.
  void pause(std::chrono::milliseconds d);

  RunnerOptions options_;
  GpuBackend& backend_;
  TaskExecutor& executor_;
  TaskJournal& journal_;
  ChannelOpener open_;

  std::atomic<bool> stopping_{false};
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;

  std::mutex channel_mutex_;
  std::shared_ptr<Channel> channel_;
  std::atomic<std::uint64_t> next_id_{0};
  std::mutex sent_mutex_;
  std::map<std::string, std::string> result_messages_;  // message id -> task id, until acked

  std::mutex queue_mutex_;
  std::condition_variable_any queue_cv_;
  std::deque<agent_proto::Task> queue_;
  std::set<std::string> running_;  // queued or running now: a heartbeat's running_task_ids

  std::vector<agent_proto::XidEvent> pending_events_;
  bool hung_logged_ = false;  // on the session thread, as send_heartbeat
};

}  // namespace gpurent::agent
