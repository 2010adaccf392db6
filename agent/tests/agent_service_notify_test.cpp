// The built `gpurent-agent run` under its unit's Type=notify (agent/gpurent-agent.service),
// the test standing in for systemd: it binds the datagram socket NOTIFY_SOCKET names and reads
// what the agent says. READY=1 comes once the agent's state is read, before any control plane
// answers (none does here: the state's certificates are not certificates, so every attempt
// fails and the agent backs off); WATCHDOG=1 at least every half of WATCHDOG_USEC through
// those attempts and waits; STOPPING=1 on SIGTERM, then exit 0. (ServiceNotifyE2E is the same
// for gpurentd; AgentRunnerTest covers STATUS= and the loop's progress.)
#include "tests/support/child_process.h"
#include "tests/support/paths.h"

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace gpurent::agent::service_notify_test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The socket systemd would listen on.
class NotifySocket {
 public:
  explicit NotifySocket(fs::path path) : path_(std::move(path)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path_.c_str(), sizeof(address.sun_path) - 1);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
      ADD_FAILURE() << "cannot bind " << path_ << ": " << std::strerror(errno);
    }
  }
  ~NotifySocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;
  const fs::path& path() const { return path_; }

  // The next datagram within `timeout`; empty when none came.
  std::string next(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return "";
    char buffer[4096];
    ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
    return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
  }

 private:
  fs::path path_;
  int fd_ = -1;
};

class AgentServiceNotify : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpurent-agent-notify-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    fs::create_directories(dir_ / "state");
    for (const char* name : {"ca.crt", "agent.crt", "agent.key"}) {
      std::ofstream(dir_ / "state" / name) << "not a PEM file\n";
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
};

TEST_F(AgentServiceNotify, ReadyBeforeTheControlPlaneAnswersThenWatchdogPingsThenStopping) {
  NotifySocket systemd(dir_ / "notify");
  constexpr auto kWatchdog = 800ms;
  // env(1) sets the two variables systemd would and execs the agent in its own process.
  testing::ChildProcess agent(
      "/usr/bin/env",
      {"NOTIFY_SOCKET=" + systemd.path().string(),
       "WATCHDOG_USEC=" + std::to_string(std::chrono::microseconds(kWatchdog).count()),
       testing::agent_path(), "run", "--url", "https://127.0.0.1:9", "--state-dir",
       (dir_ / "state").string(), "--backend", "simulated", "--log-format", "text"},
      dir_ / "agent.log");

  std::string first = systemd.next(30s);
  ASSERT_EQ(first, "READY=1\nSTATUS=connecting to 127.0.0.1:9") << agent.log();

  // Five pings, each within the interval of the one before (at most half of it apart but for
  // a loaded machine's scheduling); the failed attempts' STATUS= lines come between them.
  std::vector<std::string> statuses;
  auto last = Clock::now();
  for (int pings = 0; pings < 5;) {
    std::string m = systemd.next(kWatchdog);
    ASSERT_FALSE(m.empty()) << "no ping within " << kWatchdog.count() << " ms after ping " << pings
                            << "\n"
                            << agent.log();
    if (m.rfind("STATUS=", 0) == 0) {
      statuses.push_back(m);
      continue;
    }
    ASSERT_EQ(m, "WATCHDOG=1");
    auto now = Clock::now();
    EXPECT_LT(now - last, kWatchdog) << "ping " << pings;
    last = now;
    ++pings;
  }
  ASSERT_FALSE(statuses.empty()) << "the failed attempt was not told";
  EXPECT_EQ(statuses.front().rfind("STATUS=cannot reach the control plane: ", 0), 0u)
      << statuses.front();

  // SIGTERM, as systemctl stop sends it; the agent's exit is waited for on another thread
  // while its last words are read here.
  int code = 0;
  std::thread stopper([&] { code = agent.stop(SIGTERM); });
  std::string m;
  for (auto deadline = Clock::now() + 10s; Clock::now() < deadline && m != "STOPPING=1";) {
    m = systemd.next(1s);
  }
  stopper.join();
  EXPECT_EQ(m, "STOPPING=1") << agent.log();
  EXPECT_EQ(code, 0) << agent.log();
}

// Outside systemd nothing is sent: without NOTIFY_SOCKET the agent runs as ever (every other
// test that starts one), and a socket it cannot reach is a warning, not a failure.
TEST_F(AgentServiceNotify, AnUnreachableSocketIsAWarningNotAFailure) {
  testing::ChildProcess agent(
      "/usr/bin/env",
      {"NOTIFY_SOCKET=" + (dir_ / "nobody-listens").string(), testing::agent_path(), "run", "--url",
       "https://127.0.0.1:9", "--state-dir", (dir_ / "state").string(), "--backend", "simulated",
       "--log-format", "text"},
      dir_ / "agent.log");
  ASSERT_TRUE(testing::wait_for([&] {
    return agent.log().find("cannot reach the control plane") != std::string::npos;
  })) << agent.log();
  EXPECT_FALSE(agent.exited()) << agent.log();
  EXPECT_NE(
      agent.log().find("systemd notification not sent to " + (dir_ / "nobody-listens").string()),
      std::string::npos)
      << agent.log();
  EXPECT_EQ(agent.stop(SIGTERM), 0) << agent.log();
}

}  // namespace gpurent::agent::service_notify_test
