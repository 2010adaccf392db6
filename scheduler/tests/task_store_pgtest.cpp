// TaskStore against a real PostgreSQL: creation (with a deadline of its own or none), a
// node's open tasks in order, at-least-once delivery counting, and an outcome recorded once.
#include "scheduler/task_store.h"

#include "core/id.h"
#include "scheduler/tests/scheduler_fixture.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <latch>
#include <thread>

namespace gpurent::scheduler {
namespace task_store_pgtest {

class TaskStoreTest : public SchedulerTest {
 protected:
  AgentTask create(const std::string& node_id, const std::optional<std::string>& rental_id,
                   TaskKind kind, const nlohmann::json& payload = nlohmann::json::object()) {
    clock_.advance(std::chrono::milliseconds(1));  // distinct creation times, in call order
    return transact([&](Tx& tx) { return tasks_.create(tx, node_id, rental_id, kind, payload); });
  }

  std::optional<AgentTask> get(const std::string& id) {
    return read([&](Tx& tx) { return tasks_.get(tx, id); });
  }

  std::vector<std::string> open_ids(const std::string& node_id, int limit = 50) {
    std::vector<std::string> out;
    for (const auto& t : read([&](Tx& tx) { return tasks_.queued_for_node(tx, node_id, limit); })) {
      out.push_back(t.id);
    }
    return out;
  }

  bool delivered(const std::string& id) {
    return transact([&](Tx& tx) { return tasks_.mark_delivered(tx, id); });
  }
  bool complete(const std::string& id, bool ok, const std::string& message) {
    return transact([&](Tx& tx) { return tasks_.complete(tx, id, ok, message); });
  }
};

TEST_F(TaskStoreTest, CreateStoresTheTaskQueued) {
  std::string n = node("h-1");
  std::string rental = book(a_, n, {0}, hours(0, 24));
  nlohmann::json payload = {
      {"image_id", image_}, {"gpus", nlohmann::json::array({0})}, {"note", "quote \" and \\"}};
  auto task = create(n, rental, TaskKind::kProvision, payload);
  EXPECT_TRUE(is_valid_id(id_prefix::kTask, task.id)) << task.id;
  EXPECT_EQ(task.node_id, n);
  EXPECT_EQ(task.rental_id, rental);
  EXPECT_EQ(task.kind, TaskKind::kProvision);
  EXPECT_EQ(task.payload, payload);
  EXPECT_EQ(task.state, TaskState::kQueued);
  EXPECT_EQ(task.attempts, 0);
  EXPECT_EQ(task.created_at, task.updated_at);
  EXPECT_FALSE(task.result_message);

  auto again = get(task.id);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->payload, payload);
  EXPECT_EQ(again->created_at, task.created_at);
  EXPECT_FALSE(get("tsk_0000000000000000000000"));

  auto wipe = create(n, std::nullopt, TaskKind::kWipe);
  EXPECT_FALSE(wipe.rental_id);
  EXPECT_EQ(wipe.payload, nlohmann::json::object());
  EXPECT_FALSE(wipe.deadline) << "the delivery's default";

  // A deadline of its own (an install_access with a probe certificate) is kept to the
  // microsecond.
  Timestamp due = clock_.now() + std::chrono::seconds(110) + std::chrono::microseconds(7);
  auto access = transact([&](Tx& tx) {
    return tasks_.create(tx, n, rental, TaskKind::kInstallAccess, nlohmann::json::object(), due);
  });
  EXPECT_EQ(access.deadline, due);
  EXPECT_EQ(get(access.id)->deadline, due);
  EXPECT_FALSE(get(task.id)->deadline);

  EXPECT_THROW(transact([&](Tx& tx) {
                 return tasks_.create(tx, n, std::nullopt, TaskKind::kWipe,
                                      nlohmann::json::array());
               }),
               std::invalid_argument);
}

TEST_F(TaskStoreTest, ARentalsTasksAndANodesOpenTasksComeOldestFirst) {
  std::string n = node("h-1");
  std::string other = node("h-2");
  std::string rental = book(a_, n, {0}, hours(0, 24));
  auto provision = create(n, rental, TaskKind::kProvision);
  auto access = create(n, rental, TaskKind::kInstallAccess);
  auto housekeeping = create(n, std::nullopt, TaskKind::kWipe);
  auto elsewhere = create(other, std::nullopt, TaskKind::kWipe);
  auto revoke = create(n, rental, TaskKind::kRevokeAccess);

  std::vector<std::string> of_rental;
  for (const auto& t : read([&](Tx& tx) { return tasks_.for_rental(tx, rental); })) {
    of_rental.push_back(t.id);
  }
  EXPECT_EQ(of_rental, (std::vector<std::string>{provision.id, access.id, revoke.id}));

  EXPECT_EQ(open_ids(n),
            (std::vector<std::string>{provision.id, access.id, housekeeping.id, revoke.id}));
  EXPECT_EQ(open_ids(n, 2), (std::vector<std::string>{provision.id, access.id}));
  EXPECT_EQ(open_ids(other), std::vector<std::string>{elsewhere.id});
}

// A notification and the poll sending a node's tasks at once: each task goes out once, and
// the poll finds the nodes that still have some to send.
TEST_F(TaskStoreTest, ClaimsOfANodesQueuedTasksAreDisjoint) {
  std::string n = node("h-1");
  std::string other = node("h-2");
  std::vector<std::string> made;
  for (int i = 0; i < 40; ++i) made.push_back(create(n, std::nullopt, TaskKind::kWipe).id);
  create(other, std::nullopt, TaskKind::kWipe);
  auto nodes = read([&](Tx& tx) { return tasks_.nodes_with_queued(tx, 10); });
  std::sort(nodes.begin(), nodes.end());
  std::vector<std::string> both{n, other};
  std::sort(both.begin(), both.end());
  EXPECT_EQ(nodes, both);

  std::vector<std::string> a, b;
  std::latch go(2);
  auto claim = [&](std::vector<std::string>& into) {
    go.arrive_and_wait();
    for (;;) {
      auto got = transact([&](Tx& tx) { return tasks_.claim_queued(tx, n, 3); });
      if (got.empty()) return;
      for (const auto& t : got) {
        EXPECT_EQ(t.state, TaskState::kDelivered);
        into.push_back(t.id);
      }
    }
  };
  std::thread first([&] { claim(a); });
  std::thread second([&] { claim(b); });
  first.join();
  second.join();
  std::vector<std::string> all = a;
  all.insert(all.end(), b.begin(), b.end());
  std::sort(all.begin(), all.end());
  std::sort(made.begin(), made.end());
  EXPECT_EQ(all, made) << "every task claimed, none twice";
  EXPECT_EQ(read([&](Tx& tx) { return tasks_.nodes_with_queued(tx, 10); }),
            std::vector<std::string>{other});
}

TEST_F(TaskStoreTest, DeliveredTasksStayOpenUntilTheirOutcomeIsRecordedOnce) {
  std::string n = node("h-1");
  auto ok_task = create(n, std::nullopt, TaskKind::kWipe);
  auto failing = create(n, std::nullopt, TaskKind::kProvision);

  EXPECT_TRUE(delivered(ok_task.id));
  auto once = get(ok_task.id);
  EXPECT_EQ(once->state, TaskState::kDelivered);
  EXPECT_EQ(once->attempts, 1);
  // Delivered again after a reconnect: still open, counted.
  EXPECT_TRUE(delivered(ok_task.id));
  EXPECT_EQ(get(ok_task.id)->attempts, 2);
  EXPECT_EQ(open_ids(n), (std::vector<std::string>{ok_task.id, failing.id}));

  clock_.advance(std::chrono::seconds(3));
  EXPECT_TRUE(complete(ok_task.id, true, "wiped"));
  auto done = get(ok_task.id);
  EXPECT_EQ(done->state, TaskState::kSucceeded);
  EXPECT_EQ(done->result_message, "wiped");
  EXPECT_GT(done->updated_at, done->created_at);
  // A repeated report, or a late delivery, changes nothing.
  EXPECT_FALSE(complete(ok_task.id, false, "late duplicate"));
  EXPECT_FALSE(delivered(ok_task.id));
  EXPECT_EQ(get(ok_task.id)->state, TaskState::kSucceeded);
  EXPECT_EQ(get(ok_task.id)->attempts, 2);

  // Straight from queued: an agent may report before the delivery is recorded.
  EXPECT_TRUE(complete(failing.id, false, "image checksum mismatch"));
  EXPECT_EQ(get(failing.id)->state, TaskState::kFailed);
  EXPECT_EQ(get(failing.id)->result_message, "image checksum mismatch");
  EXPECT_TRUE(open_ids(n).empty());

  EXPECT_FALSE(delivered("tsk_0000000000000000000000"));
  EXPECT_FALSE(complete("tsk_0000000000000000000000", true, "?"));
}

TEST(TaskNames, RoundTripAndRefuseUnknownNames) {
  for (auto kind :
       {TaskKind::kProvision, TaskKind::kInstallAccess, TaskKind::kRevokeAccess, TaskKind::kWipe,
        TaskKind::kBurnIn, TaskKind::kDoctor, TaskKind::kNotice, TaskKind::kReboot}) {
    EXPECT_EQ(parse_task_kind(to_string(kind)), kind);
  }
  for (auto state :
       {TaskState::kQueued, TaskState::kDelivered, TaskState::kSucceeded, TaskState::kFailed}) {
    EXPECT_EQ(parse_task_state(to_string(state)), state);
  }
  EXPECT_EQ(to_string(TaskKind::kInstallAccess), "install_access");
  EXPECT_EQ(to_string(TaskKind::kReboot), "reboot");
  EXPECT_FALSE(parse_task_kind("power_cycle"));
  EXPECT_FALSE(parse_task_kind("Reboot"));
  EXPECT_FALSE(parse_task_state("Queued"));
}

}  // namespace task_store_pgtest
}  // namespace gpurent::scheduler
