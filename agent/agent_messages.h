// What an agent says and how it takes a task: its hello, its heartbeats, and the at-most-once
// rule for a task it is sent (agent_proto/README.md "Task delivery"). Written once, for the
// real agent (AgentRunner) and the fleet simulator (agent/fleetsim/), so the two cannot
// disagree about the protocol.
#pragma once

#include "agent/gpu_backend.h"
#include "agent/task_executor.h"
#include "agent/task_journal.h"
#include "agent_proto/messages.h"

#include <cstddef>
#include <string>
#include <vector>

namespace gpurent::agent {

// This machine's clock, as a message's times are written.
Timestamp now_utc();

// The hello of a new connection: the node's GPUs and links from `backend`, the task ids the
// journal remembers. Throws what the backend throws when it cannot read the GPUs.
agent_proto::Hello make_hello(const std::string& agent_version, const std::string& hostname,
                              GpuBackend& backend, const TaskJournal& journal);

// A heartbeat now: the backend's telemetry, its new XID events appended to `pending_events`
// and as many of those as a heartbeat carries, and the tasks running. Once it was sent, the
// caller drops the first `carried` events from `pending_events`; the rest go next time.
struct HeartbeatDraft {
  agent_proto::Heartbeat beat;
  std::size_t carried = 0;
};
HeartbeatDraft make_heartbeat(GpuBackend& backend,
                              std::vector<agent_proto::XidEvent>& pending_events,
                              std::vector<std::string> running_task_ids);

// What to do with a task the server sent, after the journal has recorded what it must.
struct TaskIntake {
  enum class Action {
    kRun,        // new: journalled as begun; ack it, then run it
    kAck,        // already taken and still running: ack it again, nothing else
    kAckResult,  // ended (before, or now as too late): ack it and send `result` (again)
  };
  Action action = Action::kRun;
  std::optional<agent_proto::TaskResult> result;
};
TaskIntake take_task(TaskJournal& journal, const agent_proto::Task& task, Timestamp now);

// The result message of a task that ran to its end.
agent_proto::TaskResult result_of(const agent_proto::Task& task, const TaskOutcome& outcome);

}  // namespace gpurent::agent
