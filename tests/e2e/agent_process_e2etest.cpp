// The real `gpurent-agent` against a real gpurentd: enrolment with the node's token, then
// `run --backend simulated` as its own process brings the node into service and carries a
// rental's provisioning tasks until the rental is active. An agent killed in the middle of a
// task and started again ends that task once (as interrupted) and never runs it twice; the
// control plane's retry then gets the rental going.
#include "core/subprocess.h"
#include "tests/support/child_process.h"
#include "tests/support/paths.h"
#include "tests/support/rental_fleet_fixture.h"
#include "tests/support/test_keys.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpurent::testing::agent_process_e2e {

using nlohmann::json;
namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// `gpurent-agent run` as a child process, its output in a log file; killed at the end.
class AgentProcess : public ChildProcess {
 public:
  AgentProcess(std::vector<std::string> args, fs::path log)
      : ChildProcess(agent_path(), std::move(args), std::move(log)) {}
};

class AgentProcessE2E : public RentalFleetTest {
 protected:
  void SetUp() override {
    pki_dir_ = make_temp_dir("gpurent-agent-pki");
    work_ = make_temp_dir("gpurent-agent-run");
    server_ = agent_server(pki_dir_);
    ASSERT_NE(server_->agent_port(), 0) << "the agent listener is on";
    seed_fleet({1, 2, 4, 8});
    url_ = "https://127.0.0.1:" + std::to_string(server_->agent_port());
  }

  void TearDown() override {
    ApiTest::TearDown();
    fs::remove_all(pki_dir_);
    fs::remove_all(work_);
  }

  SubprocessResult enroll(const std::string& token) {
    return run_subprocess({agent_path(), "enroll", "--url", url_, "--token", token, "--ca-file",
                           pki_dir_ + "/ca.crt", "--state-dir", state_dir(), "--log-format",
                           "text"});
  }
  // `extra`: more flags for `run` (a fault schedule).
  std::unique_ptr<AgentProcess> start_agent(const std::string& provision_delay,
                                            std::vector<std::string> extra = {}) {
    extra.insert(extra.begin(), {"--log-level", "debug"});
    auto args = simulated_agent_run(url_, work_, provision_delay, extra);
    return std::make_unique<AgentProcess>(std::move(args), fs::path(work_) / "agent.log");
  }
  std::string state_dir() const { return work_ + "/state"; }
  std::string access_root() const { return work_ + "/access"; }

  // Waits until the node is in service and healthy: the agent's hello and first heartbeat.
  void expect_in_service(const std::string& node_id, AgentProcess& agent) {
    bool up = wait_for([&] {
      json n = node_view(node_id);
      return n["state"] == "available" && n["health"] == "ok";
    });
    ASSERT_TRUE(up) << node_view(node_id).dump() << "\n" << agent.log();
  }

  // Two GPUs from now, with a registered SSH key (public_key_) for its access.
  std::string book(const Login& owner) {
    public_key_ = slurp(ssh_key_pair("agent-e2e-ed25519", {"-t", "ed25519"}) + ".pub");
    while (!public_key_.empty() && public_key_.back() == '\n') public_key_.pop_back();
    return book_with_key(owner, public_key_);
  }

  json journal() { return json::parse(slurp(fs::path(state_dir()) / "tasks.json")); }

  std::string pki_dir_;
  std::string work_;
  std::string url_;
  std::string public_key_;
};

TEST_F(AgentProcessE2E, AnEnrolledAgentBringsItsNodeIntoServiceAndProvisionsARental) {
  auto [node_id, token] = create_enrolling_node("gpu-proc-1");
  auto enrolled = enroll(token);
  ASSERT_EQ(enrolled.exit_code, 0) << enrolled.output;
  EXPECT_NE(enrolled.output.find(node_id), std::string::npos) << enrolled.output;
  struct stat key {};
  ASSERT_EQ(stat((state_dir() + "/agent.key").c_str(), &key), 0);
  EXPECT_EQ(key.st_mode & 0777, 0600u);
  EXPECT_EQ(slurp(state_dir() + "/ca.crt"), slurp(pki_dir_ + "/ca.crt"));
  EXPECT_NE(slurp(state_dir() + "/agent.crt").find("BEGIN CERTIFICATE"), std::string::npos);
  // The token was single-use: a second enrolment is refused with the server's reason.
  auto again = enroll(token);
  EXPECT_EQ(again.exit_code, 1) << again.output;
  EXPECT_NE(again.output.find("401"), std::string::npos) << again.output;

  auto agent = start_agent("300ms");
  expect_in_service(node_id, *agent);
  json shown = node_view(node_id);
  EXPECT_EQ(shown["topology_source"], "agent");
  EXPECT_EQ(shown["agent_version"], GPURENT_VERSION);

  Login owner = account("owner@example.com", "Acme");
  std::string rental = book(owner);
  ASSERT_FALSE(rental.empty());
  ASSERT_TRUE(drive_until(owner, rental, "active"))
      << agent->log() << get("/v1/rentals/" + rental, session(owner)).body;
  // install_access wrote sshd's files for the rental's own login: its principal and the
  // owner's registered key.
  fs::path users = fs::path(access_root()) / "users";
  ASSERT_TRUE(fs::is_directory(users)) << agent->log();
  std::vector<fs::path> logins(fs::directory_iterator(users), fs::directory_iterator{});
  ASSERT_EQ(logins.size(), 1u);
  EXPECT_EQ(logins[0].filename().string().rfind("gpu-", 0), 0u) << logins[0];
  EXPECT_EQ(slurp(logins[0] / "rental"), rental + "\n");
  EXPECT_EQ(slurp(logins[0] / "principals"), rental + "\n");
  EXPECT_EQ(slurp(logins[0] / "authorized_keys"), public_key_ + "\n");

  // Each task ran once and its result was acknowledged. The ack follows the commit that
  // made the rental active, so the agent may record it a moment after the test saw that.
  json tasks;
  wait_for([&] {
    tasks = journal()["tasks"];
    for (const auto& t : tasks) {
      if (!t["acked"].get<bool>()) return false;
    }
    return true;
  });
  ASSERT_EQ(tasks.size(), 2u) << tasks;
  for (const auto& t : tasks) {
    EXPECT_TRUE(t["result"]["ok"].get<bool>()) << t;
    EXPECT_TRUE(t["acked"].get<bool>()) << t;
  }

  // Terminated: revoke_access and the wipe remove the login's files, and the rental ends.
  auto ended = post("/v1/rentals/" + rental + "/terminate", json::object(), session(owner));
  ASSERT_EQ(ended.status, 200) << ended.body;
  ASSERT_TRUE(drive_until(owner, rental, "ended"))
      << agent->log() << get("/v1/rentals/" + rental, session(owner)).body;
  EXPECT_FALSE(fs::exists(logins[0])) << agent->log();

  EXPECT_EQ(agent->stop(SIGTERM), 0) << agent->log();
  EXPECT_NE(agent->log().find("stopped"), std::string::npos) << agent->log();
}

TEST_F(AgentProcessE2E, AnAgentKilledMidTaskNeverRunsItTwice) {
  auto [node_id, token] = create_enrolling_node("gpu-proc-2");
  ASSERT_EQ(enroll(token).exit_code, 0);
  auto agent = start_agent("60s");  // provisioning outlasts the agent
  expect_in_service(node_id, *agent);

  Login owner = account("owner@example.com", "Acme");
  std::string rental = book(owner);
  ASSERT_FALSE(rental.empty());
  advance(1);
  run_lifecycle();
  // The provision task was taken (journalled before its ack) and is running.
  std::string provision;
  ASSERT_TRUE(wait_for([&] {
    if (!fs::exists(fs::path(state_dir()) / "tasks.json")) return false;
    json tasks = journal()["tasks"];
    if (tasks.empty()) return false;
    provision = tasks[0]["task_id"];
    return agent->log().find(provision + " (provision) started") != std::string::npos;
  })) << agent->log();
  EXPECT_EQ(agent->stop(SIGKILL), -SIGKILL);

  // Started again, it ends the cut-short task as interrupted rather than running it again,
  // even though the server sends it once more on the new connection.
  agent = start_agent("200ms");
  expect_in_service(node_id, *agent);
  ASSERT_TRUE(drive_until(owner, rental, "active")) << agent->log() << server_->logs();
  json tasks = journal()["tasks"];
  ASSERT_GE(tasks.size(), 3u) << tasks;
  EXPECT_EQ(tasks[0]["task_id"], provision);
  EXPECT_FALSE(tasks[0]["result"]["ok"].get<bool>()) << tasks[0];
  EXPECT_NE(tasks[0]["result"]["message"].get<std::string>().find("interrupted"),
            std::string::npos);
  std::string log = agent->log();
  std::string started = "task " + provision + " (provision) started";
  auto first = log.find(started);
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find(started, first + 1), std::string::npos) << "ran twice:\n" << log;
  EXPECT_EQ(agent->stop(SIGTERM), 0) << agent->log();
}

TEST_F(AgentProcessE2E, AnXid79FailsTheNodeAndInterruptsItsRentalWithinTwoHeartbeats) {
  auto [node_id, token] = create_enrolling_node("gpu-proc-3");
  ASSERT_EQ(enroll(token).exit_code, 0);
  // GPU 1 falls off the bus 8 s after the agent starts; heartbeats every second.
  constexpr auto kFaultAt = std::chrono::seconds(8);
  constexpr auto kHeartbeat = std::chrono::seconds(1);
  const auto spawned = std::chrono::steady_clock::now();
  auto agent = start_agent("300ms", {"--faults", "xid79@8s:gpu1"});
  expect_in_service(node_id, *agent);

  Login owner = account("owner@example.com", "Acme");
  std::string rental = book(owner);
  ASSERT_FALSE(rental.empty());
  ASSERT_TRUE(drive_until(owner, rental, "active")) << agent->log();
  ASSERT_LT(std::chrono::steady_clock::now() - spawned, kFaultAt)
      << "the rental must be active before the fault: the machine was too slow";

  // Polled until the node has failed; the time is measured from the agent's spawn, which
  // is before its fault clock started, so it can only overstate the delay.
  bool failed = wait_for([&] { return node_view(node_id)["state"] == "failed"; },
                         std::chrono::seconds(30), std::chrono::milliseconds(50));
  const auto took = std::chrono::steady_clock::now() - spawned - kFaultAt;
  ASSERT_TRUE(failed) << agent->log();
  // Two heartbeats, and a second for the sanitizer build to read, decide and commit.
  EXPECT_LE(took, 2 * kHeartbeat + std::chrono::seconds(1))
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  json shown = get("/v1/rentals/" + rental, session(owner)).json();
  EXPECT_EQ(shown["state"], "interrupted") << shown;
  json events = get("/v1/rentals/" + rental + "/events", session(owner)).json()["items"];
  ASSERT_FALSE(events.empty());
  EXPECT_NE(events.back().dump().find("79"), std::string::npos) << events.back();
  EXPECT_EQ(agent->stop(SIGTERM), 0) << agent->log();
}

}  // namespace gpurent::testing::agent_process_e2e
