// One agent's side of the conversation with the control plane, whatever carries it: the
// hello and its answer, heartbeats, what the server sends and how it is answered, the task
// queue, and the results the server has not acknowledged yet (agent_proto/README.md). The
// real agent (AgentRunner) and the fleet simulator (fleetsim::SimulatedAgent) each give it a
// way to send and a way to run tasks, so the two cannot disagree about the protocol.
#pragma once

#include "agent/gpu_backend.h"
#include "agent/task_executor.h"
#include "agent/task_journal.h"
#include "agent_proto/messages.h"

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

namespace gpurent::agent {

// Where the dialogue's messages go: the current connection, or nowhere while there is none.
// Called from the thread that receives and from the one that runs tasks.
class MessageSink {
 public:
  virtual ~MessageSink() = default;
  // One message's text. False when it did not go out (no connection, or it broke): what must
  // reach the server (XID events, results) is kept and sent again.
  virtual bool send(std::string text) = 0;
};

// How the dialogue's tasks are run, one at a time in the order they came (a rental's access
// ahead of the long tasks: AgentDialogue::enqueue): the real agent's
// worker thread, the simulator's shared pool.
class TaskRunner {
 public:
  virtual ~TaskRunner() = default;
  // Tasks are queued and nothing is running them: have AgentDialogue::run_tasks called soon,
  // on a thread of the runner's. False when it cannot (it is stopping): they stay queued.
  virtual bool wake() = 0;
  // What became of each task, for the agent's own log and counters; on the thread that
  // receives (accepted) or the one in run_tasks.
  virtual void accepted(const agent_proto::Task& /*task*/) {}
  virtual void started(const agent_proto::Task& /*task*/) {}
  virtual void ended(const agent_proto::TaskResult& /*result*/) {}
  virtual void stopped(const agent_proto::Task& /*task*/) {}
};

struct DialogueOptions {
  std::string agent_version = GPURENT_VERSION;
  std::string hostname;
  // The node's sshd host keys and the agent's probe key (host_keys.h, login_probe.h), sent in
  // every hello; none for a node without an sshd.
  std::vector<std::string> ssh_host_keys;
  std::optional<std::string> ssh_probe_key;
  // Put before every line the dialogue logs: a process with many agents names each.
  std::string log_prefix;
};

class AgentDialogue {
 public:
  // The references outlive the dialogue.
  AgentDialogue(DialogueOptions options, GpuBackend& backend, TaskJournal& journal,
                MessageSink& sink, TaskRunner& runner);
  AgentDialogue(const AgentDialogue&) = delete;
  AgentDialogue& operator=(const AgentDialogue&) = delete;

  // A new connection: the hello to send first. Until it is answered only its answer counts.
  // Throws what the backend throws when it cannot read the GPUs.
  std::string hello();

  struct Heard {
    enum class What {
      kOther,
      kHelloAccepted,  // the session has started: call session_started()
      kHelloRefused,   // the server answered the hello with an error: close, back off
      kAck,            // an ack of a message after the hello
      kTask,           // a task, answered and queued as take_task says
    };
    What what = What::kOther;
    std::string acked_id;                     // kAck: the id of the message acknowledged
    std::optional<agent_proto::Error> error;  // kHelloRefused: the server's answer
  };
  // A message from the server: answers it through the sink. From one thread at a time.
  Heard receive(const std::string& text);

  // After the hello's ack: the first heartbeat, then the results the server may not have.
  // The heartbeat's id as send_heartbeat() gives it.
  std::optional<std::string> session_started();
  // The connection closed: a hello in flight will not be answered.
  void session_ended();

  // A heartbeat now, unless the node is hung (a hung node sends none). The message's id
  // when it went out; XID events it could not carry go with the next one. From one thread
  // at a time (events are drafted outside the lock, as nvidia-smi may be slow).
  std::optional<std::string> send_heartbeat();

  // On the runner's thread, after wake(): runs the queued tasks with `executor` until none
  // is left or `stop` is requested; a task it cuts short is left unfinished, as a killed
  // agent leaves it (the journal ends it as interrupted after a restart).
  void run_tasks(TaskExecutor& executor, const std::stop_token& stop);

 private:
  void handle_task(const std::string& message_id, const agent_proto::Task& task);
  // Queues a task to run (mutex_ held).
  void enqueue(const agent_proto::Task& task);
  // Encodes and sends with the next id; false when it did not go out.
  bool send(agent_proto::Body body);
  std::string next_id();

  DialogueOptions options_;
  GpuBackend& backend_;
  TaskJournal& journal_;
  MessageSink& sink_;
  TaskRunner& runner_;

  std::atomic<std::uint64_t> next_id_{0};

  std::mutex mutex_;
  std::string hello_id_;  // the hello awaiting its answer; empty once answered
  std::map<std::string, std::string> result_messages_;  // message id -> task id, until acked
  std::deque<agent_proto::Task> queue_;
  std::set<std::string> running_;  // queued or running: a heartbeat's running_task_ids
  bool runner_busy_ = false;       // woken and not yet back from run_tasks

  // The heartbeat thread's own.
  std::vector<agent_proto::XidEvent> pending_events_;
  bool hung_logged_ = false;
};

}  // namespace gpurent::agent
