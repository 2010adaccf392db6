// The agent's hello, heartbeats and task intake, shared by gpurent-agent and gpurent-fleetsim.
#include "agent/agent_messages.h"

#include <algorithm>

namespace gpurent::agent {

namespace proto = agent_proto;

Timestamp now_utc() {
  return std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
}

proto::Hello make_hello(const std::string& agent_version, const std::string& hostname,
                        GpuBackend& backend, const TaskJournal& journal) {
  proto::Hello hello;
  hello.agent_version = agent_version;
  hello.hostname = hostname;
  hello.gpus = backend.inventory();
  hello.topology = backend.topology();
  hello.recent_task_ids = journal.recent_ids();
  return hello;
}

HeartbeatDraft make_heartbeat(GpuBackend& backend, std::vector<proto::XidEvent>& pending_events,
                              std::vector<std::string> running_task_ids) {
  HeartbeatDraft draft;
  draft.beat.sent_at = now_utc();
  draft.beat.gpus = backend.telemetry();
  auto events = backend.new_events();
  pending_events.insert(pending_events.end(), events.begin(), events.end());
  draft.carried = std::min(pending_events.size(), proto::kMaxEventsPerHeartbeat);
  draft.beat.events.assign(pending_events.begin(),
                           pending_events.begin() + static_cast<std::ptrdiff_t>(draft.carried));
  draft.beat.running_task_ids = std::move(running_task_ids);
  return draft;
}

TaskIntake take_task(TaskJournal& journal, const proto::Task& task, Timestamp now) {
  switch (journal.seen(task.task_id)) {
    case TaskJournal::Seen::kFinished: {
      // Delivered again (the ack or the result was lost): the remembered result, not a rerun.
      auto result = journal.result_of(task.task_id);
      return {.action = result ? TaskIntake::Action::kAckResult : TaskIntake::Action::kAck,
              .result = result};
    }
    case TaskJournal::Seen::kRunning:
      return {.action = TaskIntake::Action::kAck, .result = std::nullopt};
    case TaskJournal::Seen::kNew:
      break;
  }
  if (task.deadline < now) {
    proto::TaskResult late{.task_id = task.task_id,
                           .ok = false,
                           .message = "not started: its deadline had passed",
                           .result = std::nullopt};
    journal.finish(late);
    return {.action = TaskIntake::Action::kAckResult, .result = late};
  }
  // Recorded before the ack: once acked, a crash must not let it run again.
  journal.begin(task.task_id);
  return {.action = TaskIntake::Action::kRun, .result = std::nullopt};
}

proto::TaskResult result_of(const proto::Task& task, const TaskOutcome& outcome) {
  return {.task_id = task.task_id,
          .ok = outcome.ok,
          .message = outcome.message.substr(0, proto::kMaxTextBytes),
          .result = outcome.result};
}

}  // namespace gpurent::agent
