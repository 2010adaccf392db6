// `gpurent-agent run`: keeps one channel to the control plane (reconnecting with backoff),
// says hello, sends heartbeats, and runs tasks one at a time in the order they came, each id
// at most once (agent_proto/README.md).
#pragma once

#include "agent/agent_dialogue.h"
#include "agent/channel.h"
#include "agent/gpu_backend.h"
#include "agent/task_executor.h"
#include "agent/task_journal.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
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
  // Told how the agent is doing, in sd_notify's words (service::notify in the binary, under
  // the unit's Type=notify): a STATUS= line as the channel comes and goes, STOPPING=1 when
  // stop() is first called. Unset: nobody is told.
  std::function<void(const std::string&)> notify;
};

// Opens a new channel; throws ChannelError. Tests give one of their own.
using ChannelOpener = std::function<std::unique_ptr<Channel>()>;

// What is the real agent's own: the channel (opened, reconnected with backoff, the hello's
// time limit) and the one worker thread that runs tasks. What it says is the dialogue's.
class AgentRunner : private MessageSink, private TaskRunner {
 public:
  // The references outlive the runner.
  AgentRunner(RunnerOptions options, GpuBackend& backend, TaskExecutor& executor,
              TaskJournal& journal, ChannelOpener open);
  ~AgentRunner() override;
  AgentRunner(const AgentRunner&) = delete;
  AgentRunner& operator=(const AgentRunner&) = delete;

  // Until stop(): connect, talk, reconnect. Returns once the channel is closed and the
  // running task has been asked to stop.
  void run();
  // From any thread.
  void stop();
  // Whether run()'s loop (or, before run(), the constructor) showed progress within `within`;
  // from any thread. The loop blocks at most for a channel's open timeout and the reads of
  // the GPUs (hello, heartbeat) at a time, and marks progress between them and through every
  // wait, so a loop silent for longer is stuck: the systemd watchdog's question.
  bool responsive(std::chrono::milliseconds within) const;

 private:
  void session(const std::shared_ptr<Channel>& channel);
  bool say_hello(Channel& channel);
  void work(const std::stop_token& stop);
  // Waits `d` unless stop() comes first; progress is marked through the wait.
  void pause(std::chrono::milliseconds d);
  void mark_progress();
  void tell(const std::string& state);

  // MessageSink: the current channel, once its hello was acked.
  bool send(std::string text) override;
  // TaskRunner: the worker thread, and the log of each task.
  bool wake() override;
  void accepted(const agent_proto::Task& task) override;
  void started(const agent_proto::Task& task) override;
  void ended(const agent_proto::TaskResult& result) override;
  void stopped(const agent_proto::Task& task) override;

  RunnerOptions options_;
  TaskExecutor& executor_;
  ChannelOpener open_;

  std::atomic<bool> stopping_{false};
  // steady_clock's count at the loop's last sign of progress (the end of a timed wait while
  // it waits).
  std::atomic<std::chrono::steady_clock::rep> progress_;
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;

  std::mutex channel_mutex_;
  std::shared_ptr<Channel> channel_;

  std::mutex wake_mutex_;
  std::condition_variable_any wake_cv_;
  bool woken_ = false;

  AgentDialogue dialogue_;
};

}  // namespace gpurent::agent
