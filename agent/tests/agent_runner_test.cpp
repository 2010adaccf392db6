// The agent's conversation over a channel the test plays the server on: hello first with the
// journal's ids, heartbeats, a task acked and run once, a redelivered id answered from
// memory, a task past its deadline refused, a reconnect after the channel drops, and what it
// tells the service manager (READY=1 is the binary's: agent_service_notify_test.cpp).
#include "agent/agent_runner.h"

#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>

namespace gpurent::agent::agent_runner_test {

const std::string kHostKey =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl root@node";
const std::string kProbeKey =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBPat5FwK6Ik5M6U7QJJmH2Z+lTK7r8CsLIcDY6anbov "
    "gpurent-probe";

namespace fs = std::filesystem;
namespace proto = agent_proto;
using testing::wait_for;

// The server's end: what the agent sent, and what the test has the server say.
struct Wire {
  std::mutex mutex;
  std::condition_variable arrived;
  std::deque<std::string> to_agent;
  std::vector<proto::Message> from_agent;
  bool closed = false;
  int server_ids = 0;

  void say(proto::Body body) {
    std::lock_guard lock(mutex);
    to_agent.push_back(
        proto::encode({.id = "srv-" + std::to_string(++server_ids), .body = std::move(body)}));
    arrived.notify_all();
  }
  std::vector<proto::Message> sent() {
    std::lock_guard lock(mutex);
    return from_agent;
  }
  template <typename T>
  std::vector<std::pair<std::string, T>> sent_of() {
    std::vector<std::pair<std::string, T>> out;
    for (const auto& m : sent()) {
      if (const auto* b = std::get_if<T>(&m.body)) out.emplace_back(m.id, *b);
    }
    return out;
  }
};

class FakeChannel final : public Channel {
 public:
  explicit FakeChannel(std::shared_ptr<Wire> wire) : wire_(std::move(wire)) {}
  void send(const std::string& text) override {
    auto m = proto::decode(text);  // the agent writes only what the server reads
    std::lock_guard lock(wire_->mutex);
    if (wire_->closed) throw ChannelError("closed");
    // The server acks every hello, and every result (as gpurentd does).
    if (std::holds_alternative<proto::Hello>(m.body) ||
        std::holds_alternative<proto::TaskResult>(m.body)) {
      wire_->to_agent.push_back(proto::encode(
          {.id = "srv-" + std::to_string(++wire_->server_ids), .body = proto::Ack{m.id}}));
      wire_->arrived.notify_all();
    }
    wire_->from_agent.push_back(std::move(m));
  }
  std::optional<std::string> receive(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(wire_->mutex);
    wire_->arrived.wait_for(lock, timeout,
                            [&] { return !wire_->to_agent.empty() || wire_->closed; });
    if (wire_->to_agent.empty()) return std::nullopt;
    auto text = std::move(wire_->to_agent.front());
    wire_->to_agent.pop_front();
    return text;
  }
  bool closed() const override {
    std::lock_guard lock(wire_->mutex);
    return wire_->closed;
  }
  void close() override {
    std::lock_guard lock(wire_->mutex);
    wire_->closed = true;
    wire_->arrived.notify_all();
  }

 private:
  std::shared_ptr<Wire> wire_;
};

// Counts what it runs; each task reports progress once and succeeds.
class CountingExecutor final : public TaskExecutor {
 public:
  std::optional<TaskOutcome> execute(const proto::Task& task, const ProgressFn& progress,
                                     const std::stop_token&) override {
    ++runs;
    progress(50, "half way");
    return TaskOutcome{.ok = true, .message = "ran " + task.task_id, .result = std::nullopt};
  }
  std::atomic<int> runs{0};
};

const std::string kOne = "tsk_" + std::string(22, '1');
const std::string kLate = "tsk_" + std::string(22, 'L');

class AgentRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpurent-runner-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    backend_ = make_simulated_backend({.gpus = 4,
                                       .model = "NVIDIA H100 80GB HBM3",
                                       .interconnect = topology::Interconnect::kNvswitch,
                                       .nvlink_kind = "NV18"});
  }
  void TearDown() override {
    stop();
    fs::remove_all(dir_);
  }

  void start() {
    journal_.emplace(dir_ / "tasks.json");
    runner_ = std::make_unique<AgentRunner>(
        RunnerOptions{.hostname = "gpu-node-1",
                      .heartbeat = std::chrono::milliseconds(100),
                      .backoff_initial = std::chrono::milliseconds(10),
                      .backoff_max = std::chrono::milliseconds(20),
                      .ssh_host_keys = {kHostKey},
                      .ssh_probe_key = kProbeKey,
                      .notify =
                          [this](const std::string& state) {
                            std::lock_guard lock(notes_mutex_);
                            notes_.push_back(state);
                          }},
        *backend_, executor_, *journal_, [this]() -> std::unique_ptr<Channel> {
          std::lock_guard lock(wires_mutex_);
          wires_.push_back(std::make_shared<Wire>());
          return std::make_unique<FakeChannel>(wires_.back());
        });
    std::size_t before = connections();
    thread_ = std::thread([this] { runner_->run(); });
    ASSERT_TRUE(wait_for([&] { return connections() > before && !wire()->sent().empty(); }));
  }
  void stop() {
    if (!runner_) return;
    runner_->stop();
    thread_.join();
    runner_.reset();
    journal_.reset();
  }
  std::shared_ptr<Wire> wire() {
    std::lock_guard lock(wires_mutex_);
    return wires_.empty() ? nullptr : wires_.back();
  }
  std::size_t connections() {
    std::lock_guard lock(wires_mutex_);
    return wires_.size();
  }

  static proto::Task task(const std::string& id, int deadline_in_s = 3600) {
    return {.task_id = id,
            .kind = proto::TaskKind::kProvision,
            .rental_id = std::nullopt,
            .payload = nlohmann::json::object(),
            .deadline = std::chrono::time_point_cast<std::chrono::microseconds>(
                std::chrono::system_clock::now() + std::chrono::seconds(deadline_in_s))};
  }
  std::vector<proto::TaskResult> results() {
    std::vector<proto::TaskResult> out;
    for (auto& [id, r] : wire()->sent_of<proto::TaskResult>()) out.push_back(r);
    return out;
  }

  fs::path dir_;
  std::unique_ptr<GpuBackend> backend_;
  CountingExecutor executor_;
  std::optional<TaskJournal> journal_;
  std::unique_ptr<AgentRunner> runner_;
  std::thread thread_;
  std::mutex wires_mutex_;
  std::vector<std::shared_ptr<Wire>> wires_;
  std::mutex notes_mutex_;
  std::vector<std::string> notes_;

  std::vector<std::string> notes() {
    std::lock_guard lock(notes_mutex_);
    return notes_;
  }
  long noted(const std::string& state) {
    auto n = notes();
    return std::count(n.begin(), n.end(), state);
  }
};

TEST_F(AgentRunnerTest, SaysHelloThenSendsHeartbeats) {
  start();
  auto first = wire()->sent().front();
  const auto* hello = std::get_if<proto::Hello>(&first.body);
  ASSERT_NE(hello, nullptr);
  EXPECT_EQ(hello->gpus.count, 4);
  EXPECT_EQ(hello->ssh_host_keys, std::vector<std::string>{kHostKey});
  EXPECT_EQ(hello->ssh_probe_key, kProbeKey);
  EXPECT_EQ(first.protocol_version, proto::kProtocolVersion);
  EXPECT_EQ(hello->topology,
            topology::declared_matrix(topology::Interconnect::kNvswitch, 4, "NV18"));
  EXPECT_EQ(hello->hostname, "gpu-node-1");
  ASSERT_TRUE(wait_for([&] { return wire()->sent_of<proto::Heartbeat>().size() >= 3; }));
  EXPECT_EQ(wire()->sent_of<proto::Heartbeat>()[0].second.gpus.size(), 4u);
}

TEST_F(AgentRunnerTest, RunsATaskOnceAndAnswersARedeliveryFromMemory) {
  start();
  wire()->say(task(kOne));
  ASSERT_TRUE(wait_for([&] { return results().size() == 1; }));
  EXPECT_TRUE(results()[0].ok);
  EXPECT_EQ(wire()->sent_of<proto::TaskProgress>().size(), 1u);
  wire()->say(task(kOne));  // the server's ack was lost, say
  ASSERT_TRUE(wait_for([&] { return results().size() == 2; }));
  EXPECT_EQ(results()[1], results()[0]);
  EXPECT_EQ(executor_.runs, 1);
  EXPECT_EQ(wire()->sent_of<proto::Ack>().size(), 2u) << "each delivery acked";

  // After a restart the journal still knows it: hello names it, a redelivery is not run.
  stop();
  start();
  auto hello = std::get<proto::Hello>(wire()->sent().front().body);
  EXPECT_EQ(hello.recent_task_ids, std::vector<std::string>{kOne});
  wire()->say(task(kOne));
  ASSERT_TRUE(wait_for([&] { return results().size() == 1; }));
  EXPECT_EQ(executor_.runs, 1);
}

TEST_F(AgentRunnerTest, ATaskPastItsDeadlineIsNotStarted) {
  start();
  wire()->say(task(kLate, -10));
  ASSERT_TRUE(wait_for([&] { return results().size() == 1; }));
  EXPECT_FALSE(results()[0].ok);
  EXPECT_EQ(executor_.runs, 0);
}

TEST_F(AgentRunnerTest, ReconnectsWhenTheChannelDrops) {
  start();
  wire()->sent();
  std::shared_ptr<Wire> first = wire();
  {
    std::lock_guard lock(first->mutex);
    first->closed = true;
    first->arrived.notify_all();
  }
  ASSERT_TRUE(wait_for([&] { return connections() >= 2 && !wire()->sent().empty(); }));
  EXPECT_TRUE(std::holds_alternative<proto::Hello>(wire()->sent().front().body));
}

TEST_F(AgentRunnerTest, TellsTheServiceManagerWhetherItIsConnectedAndWhenItStops) {
  const std::string connected = "STATUS=connected to the control plane";
  start();
  ASSERT_TRUE(wait_for([&] { return noted(connected) == 1; }));
  EXPECT_TRUE(runner_->responsive(std::chrono::seconds(1)));
  {
    std::shared_ptr<Wire> first = wire();
    std::lock_guard lock(first->mutex);
    first->closed = true;
    first->arrived.notify_all();
  }
  ASSERT_TRUE(wait_for([&] { return noted(connected) == 2; }));
  EXPECT_EQ(noted("STATUS=reconnecting to the control plane"), 1);
  stop();
  EXPECT_EQ(notes().back(), "STOPPING=1");
  EXPECT_EQ(noted("STOPPING=1"), 1) << "stop() and the destructor both stop it; one says so";
}

// The watchdog's question: a connection attempt that hangs leaves the loop silent, while a
// backoff's wait, however long, is progress (the loop is sure to come back from it).
TEST_F(AgentRunnerTest, AHungConnectionAttemptIsNotResponsiveALongBackoffIs) {
  std::mutex mutex;
  std::condition_variable cv;
  bool release = false;
  int attempts = 0;
  journal_.emplace(dir_ / "tasks.json");
  std::vector<std::string> told;
  AgentRunner runner({.hostname = "gpu-node-1",
                      .backoff_initial = std::chrono::seconds(30),
                      .backoff_max = std::chrono::seconds(30),
                      .notify =
                          [&](const std::string& state) {
                            std::lock_guard lock(mutex);
                            told.push_back(state);
                          }},
                     *backend_, executor_, *journal_, [&]() -> std::unique_ptr<Channel> {
                       std::unique_lock lock(mutex);
                       ++attempts;
                       cv.wait(lock, [&] { return release; });
                       throw ChannelError("connection refused");
                     });
  std::thread loop([&] { runner.run(); });
  constexpr std::chrono::milliseconds kWithin{100};
  EXPECT_TRUE(wait_for([&] { return !runner.responsive(kWithin); }))
      << "a hung connection attempt kept the loop responsive";
  {
    std::lock_guard lock(mutex);
    release = true;
  }
  cv.notify_all();
  ASSERT_TRUE(wait_for([&] {
    std::lock_guard lock(mutex);
    return !told.empty();
  }));
  // In the backoff's wait now (at least 15 s, jitter included), for longer than kWithin.
  std::this_thread::sleep_for(3 * kWithin);
  EXPECT_TRUE(runner.responsive(kWithin));
  runner.stop();
  loop.join();
  std::lock_guard lock(mutex);
  EXPECT_EQ(attempts, 1);
  EXPECT_EQ(told, (std::vector<std::string>{
                      "STATUS=cannot reach the control plane: connection refused", "STOPPING=1"}));
}

}  // namespace gpurent::agent::agent_runner_test
