// The agent's dialogue driven without a channel or threads: the test plays the server,
// reads what the dialogue sent from a fake sink, and runs its tasks when it is woken.
#include "agent/agent_dialogue.h"

#include "agent/agent_messages.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace gpurent::agent::agent_dialogue_test {

namespace fs = std::filesystem;
namespace proto = agent_proto;

const std::string kHostKey =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl root@node";
const std::string kTaskA = "tsk_" + std::string(22, 'A');
const std::string kTaskB = "tsk_" + std::string(22, 'B');

// What the dialogue sent, decoded (the dialogue writes only what the server reads).
struct RecordingSink final : MessageSink {
  bool send(std::string text) override {
    if (!accepting) return false;
    sent.push_back(proto::decode(text));
    return true;
  }
  template <typename T>
  std::vector<std::pair<std::string, T>> of() const {
    std::vector<std::pair<std::string, T>> out;
    for (const auto& m : sent) {
      if (const auto* b = std::get_if<T>(&m.body)) out.emplace_back(m.id, *b);
    }
    return out;
  }
  bool accepting = true;
  std::vector<proto::Message> sent;
};

// Counts its wake-ups and what it was told of each task; the test runs the tasks itself.
struct RecordingRunner final : TaskRunner {
  bool wake() override {
    ++wakes;
    return accepting;
  }
  void accepted(const proto::Task& task) override { accepted_ids.push_back(task.task_id); }
  void started(const proto::Task& task) override { started_ids.push_back(task.task_id); }
  void ended(const proto::TaskResult& result) override { ended_ids.push_back(result.task_id); }
  void stopped(const proto::Task& task) override { stopped_ids.push_back(task.task_id); }
  bool accepting = true;
  int wakes = 0;
  std::vector<std::string> accepted_ids, started_ids, ended_ids, stopped_ids;
};

// Each task reports progress once and succeeds; `give_up` makes it stop unfinished instead.
struct CountingDialogueExecutor final : TaskExecutor {
  std::optional<TaskOutcome> execute(const proto::Task& task, const ProgressFn& progress,
                                     const std::stop_token&) override {
    ++runs;
    if (give_up) return std::nullopt;
    progress(50, "half way");
    return TaskOutcome{.ok = true, .message = "ran " + task.task_id, .result = std::nullopt};
  }
  int runs = 0;
  bool give_up = false;
};

// A simulated node whose XID events and hang the test decides.
struct ScriptedBackend final : GpuBackend {
  ScriptedBackend()
      : node(make_simulated_backend({.gpus = 2,
                                     .model = "NVIDIA H100 80GB HBM3",
                                     .interconnect = topology::Interconnect::kNvswitch,
                                     .nvlink_kind = "NV18"})) {}
  proto::GpuInventory inventory() override { return node->inventory(); }
  topology::Matrix topology() override { return node->topology(); }
  std::vector<proto::GpuTelemetry> telemetry() override { return node->telemetry(); }
  std::vector<proto::XidEvent> new_events() override { return std::exchange(events, {}); }
  bool hung() override { return is_hung; }
  std::unique_ptr<GpuBackend> node;
  std::vector<proto::XidEvent> events;
  bool is_hung = false;
};

proto::XidEvent xid(int code) {
  return {.pci = "0000:83:00",
          .xid = code,
          .pid = std::nullopt,
          .process = std::nullopt,
          .message = "Graphics Exception",
          .at = std::nullopt};
}

class AgentDialogueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpurent-dialogue-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    journal_.emplace(dir_ / "tasks.json");
    dialogue_.emplace(DialogueOptions{.hostname = "gpu-node-1", .ssh_host_keys = {kHostKey}},
                      backend_, *journal_, sink_, runner_);
  }
  void TearDown() override {
    dialogue_.reset();
    journal_.reset();
    fs::remove_all(dir_);
  }

  // What the server says, as the dialogue hears it.
  AgentDialogue::Heard say(proto::Body body) {
    return dialogue_->receive(
        proto::encode({.id = "srv-" + std::to_string(++server_ids_), .body = std::move(body)}));
  }
  std::string last_server_id() const { return "srv-" + std::to_string(server_ids_); }
  // A new connection whose hello the server acks: the session has started.
  void connect() {
    auto hello = proto::decode(dialogue_->hello());
    ASSERT_EQ(say(proto::Ack{hello.id}).what, AgentDialogue::Heard::What::kHelloAccepted);
    dialogue_->session_started();
  }
  void run_tasks() { dialogue_->run_tasks(executor_, std::stop_token{}); }

  static proto::Task task(const std::string& id, int deadline_in_s = 3600) {
    return {.task_id = id,
            .kind = proto::TaskKind::kProvision,
            .rental_id = std::nullopt,
            .payload = nlohmann::json::object(),
            .deadline = std::chrono::time_point_cast<std::chrono::microseconds>(
                std::chrono::system_clock::now() + std::chrono::seconds(deadline_in_s))};
  }
  std::vector<proto::TaskResult> results() const {
    std::vector<proto::TaskResult> out;
    for (auto& [id, r] : sink_.of<proto::TaskResult>()) out.push_back(r);
    return out;
  }
  // The index in what was sent of the first message of type T for `task_id`.
  template <typename T>
  std::ptrdiff_t position_of(const std::string& task_id) const {
    for (std::size_t i = 0; i < sink_.sent.size(); ++i) {
      const auto* b = std::get_if<T>(&sink_.sent[i].body);
      if (b && b->task_id == task_id) return static_cast<std::ptrdiff_t>(i);
    }
    return -1;
  }

  fs::path dir_;
  ScriptedBackend backend_;
  RecordingSink sink_;
  RecordingRunner runner_;
  CountingDialogueExecutor executor_;
  std::optional<TaskJournal> journal_;
  std::optional<AgentDialogue> dialogue_;
  int server_ids_ = 0;
};

TEST_F(AgentDialogueTest, TheHelloIsAnsweredBeforeAnythingElseCounts) {
  journal_->begin(kTaskB);
  journal_->finish({.task_id = kTaskB, .ok = true, .message = "", .result = std::nullopt});
  auto hello_message = proto::decode(dialogue_->hello());
  const auto* hello = std::get_if<proto::Hello>(&hello_message.body);
  ASSERT_NE(hello, nullptr);
  EXPECT_EQ(hello->hostname, "gpu-node-1");
  EXPECT_EQ(hello->gpus.count, 2);
  EXPECT_EQ(hello->ssh_host_keys, std::vector<std::string>{kHostKey});
  EXPECT_EQ(hello->recent_task_ids, std::vector<std::string>{kTaskB});
  EXPECT_TRUE(sink_.sent.empty()) << "the hello is the caller's to send";

  // Before the answer: a task is dropped (the server sends it again after the ack), and an
  // ack of something else is not the answer.
  EXPECT_EQ(say(task(kTaskA)).what, AgentDialogue::Heard::What::kOther);
  EXPECT_EQ(say(proto::Ack{"a-999"}).what, AgentDialogue::Heard::What::kOther);
  EXPECT_TRUE(sink_.sent.empty());
  EXPECT_EQ(journal_->seen(kTaskA), TaskJournal::Seen::kNew);
  EXPECT_EQ(runner_.wakes, 0);

  EXPECT_EQ(say(proto::Ack{hello_message.id}).what, AgentDialogue::Heard::What::kHelloAccepted);
  auto beat_id = dialogue_->session_started();
  ASSERT_EQ(sink_.of<proto::Heartbeat>().size(), 1u) << "the session starts with a heartbeat";
  EXPECT_EQ(beat_id, sink_.of<proto::Heartbeat>()[0].first);
  EXPECT_EQ(sink_.of<proto::Heartbeat>()[0].second.gpus.size(), 2u);
  EXPECT_EQ(say(proto::Ack{*beat_id}).acked_id, *beat_id);

  // In the session a task counts.
  EXPECT_EQ(say(task(kTaskA)).what, AgentDialogue::Heard::What::kTask);
  EXPECT_EQ(journal_->seen(kTaskA), TaskJournal::Seen::kRunning);
}

TEST_F(AgentDialogueTest, AnErrorRefusesTheHello) {
  auto hello = proto::decode(dialogue_->hello());
  auto heard = say(proto::Error{"inventory_mismatch", "the node has 8 GPUs on record", hello.id});
  EXPECT_EQ(heard.what, AgentDialogue::Heard::What::kHelloRefused);
  ASSERT_TRUE(heard.error);
  EXPECT_EQ(heard.error->code, "inventory_mismatch");
  // A late ack of that hello starts nothing.
  EXPECT_EQ(say(proto::Ack{hello.id}).what, AgentDialogue::Heard::What::kAck);
}

TEST_F(AgentDialogueTest, ATaskIsAckedThenRunOnce) {
  connect();
  EXPECT_EQ(say(task(kTaskA)).what, AgentDialogue::Heard::What::kTask);
  auto acks = sink_.of<proto::Ack>();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].second.acked_id, last_server_id());
  EXPECT_EQ(runner_.wakes, 1);
  EXPECT_EQ(runner_.accepted_ids, std::vector<std::string>{kTaskA});
  EXPECT_EQ(executor_.runs, 0) << "run by the runner, not on the receiving thread";

  run_tasks();
  EXPECT_EQ(executor_.runs, 1);
  EXPECT_EQ(runner_.started_ids, std::vector<std::string>{kTaskA});
  EXPECT_EQ(runner_.ended_ids, std::vector<std::string>{kTaskA});
  ASSERT_EQ(results().size(), 1u);
  EXPECT_TRUE(results()[0].ok);
  EXPECT_EQ(results()[0].message, "ran " + kTaskA);
  auto ack_at = static_cast<std::ptrdiff_t>(sink_.sent.size());
  for (std::size_t i = 0; i < sink_.sent.size(); ++i) {
    if (std::holds_alternative<proto::Ack>(sink_.sent[i].body)) {
      ack_at = static_cast<std::ptrdiff_t>(i);
      break;
    }
  }
  EXPECT_LT(ack_at, position_of<proto::TaskProgress>(kTaskA)) << "acked before it runs";
  EXPECT_LT(position_of<proto::TaskProgress>(kTaskA), position_of<proto::TaskResult>(kTaskA));
  EXPECT_EQ(journal_->seen(kTaskA), TaskJournal::Seen::kFinished);

  run_tasks();  // woken for nothing: nothing more runs
  EXPECT_EQ(executor_.runs, 1);
}

TEST_F(AgentDialogueTest, ARentalsAccessGoesAheadOfTheLongTasksQueued) {
  connect();
  // A task id of the wire's shape whose last characters name it.
  auto id = [](const std::string& name) { return "tsk_" + std::string(20, 'X') + name; };
  auto of_kind = [](const std::string& id, proto::TaskKind kind) {
    auto t = task(id);
    t.kind = kind;
    return t;
  };
  // Eight rentals' provisions came at once; the first one's access comes while seven wait.
  say(of_kind(id("p1"), proto::TaskKind::kProvision));
  say(of_kind(id("w1"), proto::TaskKind::kWipe));
  say(of_kind(id("p2"), proto::TaskKind::kProvision));
  say(of_kind(id("r1"), proto::TaskKind::kRevokeAccess));
  say(of_kind(id("a1"), proto::TaskKind::kInstallAccess));
  say(of_kind(id("a2"), proto::TaskKind::kInstallAccess));
  run_tasks();
  // The accesses ahead of every provision and wipe, in the order they came; everything else
  // in the order it came.
  EXPECT_EQ(runner_.started_ids,
            (std::vector<std::string>{id("a1"), id("a2"), id("p1"), id("w1"), id("p2"), id("r1")}));
}

TEST_F(AgentDialogueTest, ARepeatedTaskIdIsAckedWithoutRunningAgain) {
  connect();
  say(task(kTaskA));
  say(task(kTaskA));  // while it waits to run
  EXPECT_EQ(sink_.of<proto::Ack>().size(), 2u) << "each delivery acked";
  EXPECT_EQ(runner_.wakes, 1);
  run_tasks();
  EXPECT_EQ(executor_.runs, 1);
  ASSERT_EQ(results().size(), 1u);

  say(task(kTaskA));  // once it ended: its remembered result again
  EXPECT_EQ(sink_.of<proto::Ack>().size(), 3u);
  ASSERT_EQ(results().size(), 2u);
  EXPECT_EQ(results()[1], results()[0]);
  run_tasks();
  EXPECT_EQ(executor_.runs, 1);
  EXPECT_EQ(runner_.wakes, 1);
}

TEST_F(AgentDialogueTest, ATaskPastItsDeadlineIsAnsweredWithoutRunning) {
  connect();
  say(task(kTaskA, -10));
  EXPECT_EQ(sink_.of<proto::Ack>().size(), 1u);
  ASSERT_EQ(results().size(), 1u);
  EXPECT_FALSE(results()[0].ok);
  EXPECT_EQ(runner_.wakes, 0);
  run_tasks();
  EXPECT_EQ(executor_.runs, 0);
}

TEST_F(AgentDialogueTest, AResultIsResentAfterReconnectionUntilAcked) {
  connect();
  say(task(kTaskA));
  run_tasks();
  ASSERT_EQ(results().size(), 1u);
  auto first = results()[0];

  // The channel dropped before the server acked it.
  dialogue_->session_ended();
  sink_.sent.clear();
  connect();
  auto resent = sink_.of<proto::TaskResult>();
  ASSERT_EQ(resent.size(), 1u);
  EXPECT_EQ(resent[0].second, first);
  EXPECT_TRUE(std::holds_alternative<proto::Heartbeat>(sink_.sent.front().body))
      << "the heartbeat first, then the results";

  // Dropped again: sent again.
  dialogue_->session_ended();
  sink_.sent.clear();
  connect();
  resent = sink_.of<proto::TaskResult>();
  ASSERT_EQ(resent.size(), 1u);

  // Acked this time: not sent on the next connection.
  EXPECT_EQ(say(proto::Ack{resent[0].first}).what, AgentDialogue::Heard::What::kAck);
  dialogue_->session_ended();
  sink_.sent.clear();
  connect();
  EXPECT_TRUE(results().empty());
  EXPECT_EQ(executor_.runs, 1);
}

TEST_F(AgentDialogueTest, HeartbeatsCarryRunningIdsAndPendingEvents) {
  connect();
  sink_.sent.clear();
  say(task(kTaskA));
  backend_.events = {xid(13)};
  sink_.accepting = false;  // no channel: the event waits
  EXPECT_EQ(dialogue_->send_heartbeat(), std::nullopt);

  sink_.accepting = true;
  backend_.events = {xid(79)};
  ASSERT_TRUE(dialogue_->send_heartbeat());
  auto beats = sink_.of<proto::Heartbeat>();
  ASSERT_EQ(beats.size(), 1u);
  EXPECT_EQ(beats[0].second.running_task_ids, std::vector<std::string>{kTaskA})
      << "queued counts as running";
  EXPECT_EQ(beats[0].second.events, (std::vector<proto::XidEvent>{xid(13), xid(79)}));

  run_tasks();
  ASSERT_TRUE(dialogue_->send_heartbeat());
  beats = sink_.of<proto::Heartbeat>();
  ASSERT_EQ(beats.size(), 2u);
  EXPECT_TRUE(beats[1].second.running_task_ids.empty());
  EXPECT_TRUE(beats[1].second.events.empty()) << "events once carried are not sent again";

  backend_.is_hung = true;
  EXPECT_EQ(dialogue_->send_heartbeat(), std::nullopt);
  EXPECT_EQ(sink_.of<proto::Heartbeat>().size(), 2u) << "a hung node sends no heartbeats";
}

TEST_F(AgentDialogueTest, ATaskStoppedUnfinishedIsNotReportedAndTheNextOneWakesTheRunner) {
  connect();
  executor_.give_up = true;
  say(task(kTaskA));
  run_tasks();
  EXPECT_EQ(runner_.stopped_ids, std::vector<std::string>{kTaskA});
  EXPECT_TRUE(results().empty());
  EXPECT_EQ(journal_->seen(kTaskA), TaskJournal::Seen::kRunning);

  executor_.give_up = false;
  say(task(kTaskB));
  EXPECT_EQ(runner_.wakes, 2);
  run_tasks();
  ASSERT_EQ(results().size(), 1u);
  EXPECT_EQ(results()[0].task_id, kTaskB);
}

TEST_F(AgentDialogueTest, ARunnerThatCannotStartIsWokenByTheNextTask) {
  connect();
  runner_.accepting = false;
  say(task(kTaskA));
  runner_.accepting = true;
  say(task(kTaskB));
  EXPECT_EQ(runner_.wakes, 2);
  run_tasks();
  EXPECT_EQ(runner_.ended_ids, (std::vector<std::string>{kTaskA, kTaskB})) << "in order";
}

TEST_F(AgentDialogueTest, StoppingStartsNoQueuedTask) {
  connect();
  say(task(kTaskA));
  std::stop_source stopping;
  stopping.request_stop();
  dialogue_->run_tasks(executor_, stopping.get_token());
  EXPECT_EQ(executor_.runs, 0);
  say(task(kTaskB));
  EXPECT_EQ(runner_.wakes, 2) << "the runner is idle again";
}

TEST_F(AgentDialogueTest, WhatTheAgentCannotTakeIsAnsweredWithAnError) {
  connect();
  sink_.sent.clear();
  EXPECT_EQ(dialogue_->receive("{not json").what, AgentDialogue::Heard::What::kOther);
  auto errors = sink_.of<proto::Error>();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].second.code, proto::kErrorMalformed);
  EXPECT_EQ(errors[0].second.offending_id, std::nullopt);

  say(proto::Heartbeat{.sent_at = now_utc(), .gpus = {}, .events = {}, .running_task_ids = {}});
  errors = sink_.of<proto::Error>();
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[1].second.offending_id, last_server_id());

  // The server's errors are logged, never answered.
  say(proto::Error{"unknown_task", "no such task", std::nullopt});
  EXPECT_EQ(sink_.of<proto::Error>().size(), 2u);
}

}  // namespace gpurent::agent::agent_dialogue_test
