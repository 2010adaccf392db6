// gpurentd under systemd's Type=notify (deploy/systemd/gpurentd.service), with the test
// standing in for systemd: it binds the datagram socket named by NOTIFY_SOCKET and reads what
// the server says. READY=1 comes once the server answers (/readyz 200 at that moment),
// WATCHDOG=1 at least every half of WATCHDOG_USEC while it runs, STOPPING=1 on SIGTERM.
#include "tests/support/http_client.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <string>
#include <vector>

namespace gpurent::testing::service_notify_e2e {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The socket systemd would listen on.
class NotifySocket {
 public:
  NotifySocket() : path_(make_temp_dir("gpurent-notify") + "/notify") {
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
  const std::string& path() const { return path_; }

  // The next datagram within `timeout`; empty when none came.
  std::string next(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return "";
    char buffer[4096];
    ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
    return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
  }
  // Datagrams until one holds `wanted` or `timeout` passes; the one found is last.
  std::vector<std::string> until(const std::string& wanted, std::chrono::milliseconds timeout) {
    std::vector<std::string> seen;
    auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      std::string m = next(left);
      if (m.empty()) break;
      seen.push_back(m);
      if (m.find(wanted) != std::string::npos) break;
    }
    return seen;
  }

 private:
  std::string path_;
  int fd_ = -1;
};

TEST(ServiceNotifyE2E, ReadyOnceServingThenWatchdogPingsThenStoppingOnSigterm) {
  TestDatabase db;
  NotifySocket systemd;
  constexpr auto kWatchdog = 800ms;
  // Not waiting for the port file: READY=1 alone must say when the server can be used.
  ServerProcess server(
      {.database_url = db.url(),
       .env = {{"NOTIFY_SOCKET", systemd.path()},
               {"WATCHDOG_USEC", std::to_string(std::chrono::microseconds(kWatchdog).count())}},
       .wait_ready = false});

  auto first = systemd.until("READY=1", 30s);
  ASSERT_FALSE(first.empty()) << "no notification at all\n" << server.logs();
  ASSERT_NE(first.back().find("READY=1"), std::string::npos) << first.back();
  const std::string status = "STATUS=serving on port ";
  auto at = first.back().find(status);
  ASSERT_NE(at, std::string::npos) << first.back();
  int port = std::stoi(first.back().substr(at + status.size()));
  // Ready means migrated, listening and connected: the very next request is served.
  EXPECT_EQ(http_request(port, "GET", "/readyz").status, 200);
  EXPECT_EQ(first.size(), 1u) << "a watchdog ping before READY=1: " << first.front();

  // Pings at most half the interval apart (a quarter, give or take a sanitizer build's
  // scheduling): five in a row, none later than the interval itself, where systemd would
  // restart the service.
  auto last = Clock::now();
  for (int i = 0; i < 5; ++i) {
    std::string m = systemd.next(kWatchdog);
    ASSERT_EQ(m, "WATCHDOG=1") << "ping " << i << " not within " << kWatchdog.count() << " ms";
    auto now = Clock::now();
    EXPECT_LT(now - last, kWatchdog) << "ping " << i;
    last = now;
  }

  server.send_signal(SIGTERM);
  auto after = systemd.until("STOPPING=1", 10s);
  ASSERT_FALSE(after.empty());
  EXPECT_EQ(after.back(), "STOPPING=1");
  EXPECT_EQ(server.wait_exit(30s), 0) << server.logs();
}

// Outside systemd nothing is sent and nothing is asked: without NOTIFY_SOCKET the server
// starts and stops as ever (every other e2e test), and a socket it cannot reach is a warning.
TEST(ServiceNotifyE2E, AnUnreachableSocketIsAWarningNotAFailure) {
  TestDatabase db;
  ServerProcess server(
      {.database_url = db.url(), .env = {{"NOTIFY_SOCKET", "/nonexistent/notify"}}});
  EXPECT_EQ(http_request(server.port(), "GET", "/readyz").status, 200);
  EXPECT_NE(server.logs().find("systemd notification not sent to /nonexistent/notify"),
            std::string::npos)
      << server.logs();
}

}  // namespace gpurent::testing::service_notify_e2e
