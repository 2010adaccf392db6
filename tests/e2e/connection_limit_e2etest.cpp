// The connection limit and slow clients: past http_max_connections a connection is
// answered 503 and closed, counted on /metrics; slow-drip clients (a byte a second) are cut
// off by the read timeout, so their slots free up, and below the limit they delay nobody;
// running out of file descriptors pauses accepting but never ends it.
#include "tests/support/http_client.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <optional>
#include <sstream>
#include <thread>

namespace gpurent::testing::connection_limit_e2e {

using namespace std::chrono_literals;

// Slow-loris clients: each connects and then sends a request one byte a second, from one
// background thread. The server answers them only by closing (read timeout) or, past its
// connection limit, with a 503 and a close; both are recorded.
class SlowDrippers {
 public:
  SlowDrippers(int port, int count) {
    for (int i = 0; i < count; ++i) {
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) throw std::runtime_error("socket failed: " + std::to_string(errno));
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<uint16_t>(port));
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        close(fd);
        throw std::runtime_error("connect failed: " + std::to_string(errno));
      }
      conns_.push_back({.fd = fd});
    }
    open_ = count;
    thread_ = std::thread([this] { run(); });
  }
  ~SlowDrippers() {
    stop_ = true;
    thread_.join();
    for (auto& c : conns_) {
      if (c.fd >= 0) close(c.fd);
    }
  }
  SlowDrippers(const SlowDrippers&) = delete;
  SlowDrippers& operator=(const SlowDrippers&) = delete;

  int open() const { return open_; }        // not closed by the server yet
  int refused() const { return refused_; }  // answered 503, then closed
  int cut_off() const { return cut_off_; }  // closed without an answer
  long long bytes_sent() const { return bytes_sent_; }

 private:
  struct Conn {
    int fd = -1;
    std::size_t sent = 0;
    std::string received;
  };
  static constexpr std::string_view kRequest = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

  void run() {
    auto next_drip = std::chrono::steady_clock::now();
    while (!stop_) {
      if (std::chrono::steady_clock::now() >= next_drip) {
        for (auto& c : conns_) {
          if (c.fd < 0 || c.sent >= kRequest.size()) continue;
          if (::send(c.fd, kRequest.data() + c.sent, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) {
            ++c.sent;
            ++bytes_sent_;
          }
        }
        next_drip += 1s;
      }
      std::vector<pollfd> fds;
      std::vector<Conn*> owners;
      for (auto& c : conns_) {
        if (c.fd < 0) continue;
        fds.push_back({c.fd, POLLIN, 0});
        owners.push_back(&c);
      }
      // Short, so stop_ is seen soon.
      if (poll(fds.data(), fds.size(), 50) <= 0) continue;
      for (std::size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        Conn& c = *owners[i];
        char buf[4096];
        ssize_t n = recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) {
          c.received.append(buf, static_cast<std::size_t>(n));
          continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        // EOF or reset: the server is done with this one.
        close(c.fd);
        c.fd = -1;
        --open_;
        if (c.received.rfind("HTTP/1.1 503", 0) == 0) {
          ++refused_;
        } else {
          ++cut_off_;
        }
      }
    }
  }

  std::vector<Conn> conns_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> open_{0};
  std::atomic<int> refused_{0};
  std::atomic<int> cut_off_{0};
  std::atomic<long long> bytes_sent_{0};
};

// Room for `needed` descriptors in this process (and the servers it starts, which inherit
// the limit); false when the hard limit is too low.
bool allow_descriptors(rlim_t needed) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < needed) {
    if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < needed) return false;
    limit.rlim_cur = needed;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
  }
  return true;
}

// A value from /metrics; nullopt when the server could not be asked (no free slot) or the
// metric is absent.
std::optional<long long> metric(int port, const std::string& name) {
  HttpResult r;
  try {
    r = http_request(port, "GET", "/metrics", "", {}, 10s);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (r.status != 200) return std::nullopt;
  std::istringstream lines(r.body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + " ", 0) == 0) return std::stoll(line.substr(name.size() + 1));
  }
  return std::nullopt;
}

// GET /healthz on a fresh connection: its status, or 0 when the connection was closed or
// reset without a whole response.
int healthz_status(int port) {
  try {
    return http_request(port, "GET", "/healthz", "", {}, 10s).status;
  } catch (const std::exception&) {
    return 0;
  }
}

TEST(ConnectionLimitE2E, PastTheLimitConnectionsAreRefusedCountedAndServedOnceASlotFrees) {
  constexpr int kLimit = 50;
  constexpr int kDrippers = 300;
  ASSERT_TRUE(allow_descriptors(1024)) << "the hard descriptor limit is below 1024";
  TestDatabase db;
  ServerProcess server(
      {.database_url = db.url(),
       .flags = {"--http_max_connections=" + std::to_string(kLimit), "--http_read_timeout=3s"}});
  SlowDrippers drippers(server.port(), kDrippers);

  // (a) Everyone past the limit is closed at once, most with a 503 (it is best effort: a
  // request byte arriving just after the close makes the kernel reset the connection) ...
  ASSERT_TRUE(wait_for([&] { return drippers.open() <= kLimit; }, 10s))
      << "refused " << drippers.refused() << ", cut off " << drippers.cut_off();
  EXPECT_GE(drippers.refused(), (kDrippers - kLimit) / 2);
  // ... and so is a normal client while the drippers hold every slot.
  EXPECT_NE(healthz_status(server.port()), 200) << "no slot should be free yet";

  // (b) The read timeout cuts the drippers off; the freed slots serve normal clients.
  ASSERT_TRUE(wait_for([&] { return drippers.open() == 0; }, 20s))
      << drippers.open() << " drippers still connected";
  EXPECT_TRUE(wait_for([&] { return healthz_status(server.port()) == 200; }, 10s));

  // (a, c) /metrics counted the refusals, and open connections never passed the limit.
  auto refused = metric(server.port(), "gpurent_http_connections_refused_total");
  ASSERT_TRUE(refused.has_value());
  EXPECT_GE(*refused, kDrippers - kLimit);
  EXPECT_GE(*refused, drippers.refused());
  EXPECT_EQ(metric(server.port(), "gpurent_http_connections_peak").value_or(-1), kLimit)
      << "the drippers filled every slot, and no more";
  EXPECT_EQ(metric(server.port(), "gpurent_http_connections_max").value_or(-1), kLimit);
  auto open = metric(server.port(), "gpurent_http_connections_open");
  ASSERT_TRUE(open.has_value());
  EXPECT_GE(*open, 1);  // this request's own
  EXPECT_LE(*open, kLimit);
}

TEST(ConnectionLimitE2E, BelowTheLimitSlowDripClientsDelayNobody) {
  constexpr int kDrippers = 300;
  ASSERT_TRUE(allow_descriptors(1024)) << "the hard descriptor limit is below 1024";
  TestDatabase db;
  // The default read timeout (10 s) keeps every dripper connected throughout.
  ServerProcess server({.database_url = db.url(), .flags = {"--http_max_connections=400"}});
  SlowDrippers drippers(server.port(), kDrippers);
  ASSERT_TRUE(wait_for([&] {
    return metric(server.port(), "gpurent_http_connections_open").value_or(0) > kDrippers;
  })) << "every dripper should hold a connection";

  long long dripped = drippers.bytes_sent();
  for (int i = 0; i < 10; ++i) {
    // Generous bounds: these take milliseconds; only being stuck behind the drippers would
    // take seconds.
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(healthz_status(server.port()), 200);
    auto ready = http_request(server.port(), "GET", "/readyz", "", {}, 10s);
    EXPECT_EQ(ready.status, 200) << ready.body;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
    std::this_thread::sleep_for(100ms);
  }
  // All of that while they dripped: none was cut off or refused, and bytes kept coming.
  EXPECT_EQ(drippers.open(), kDrippers);
  EXPECT_EQ(drippers.refused(), 0);
  EXPECT_TRUE(wait_for([&] { return drippers.bytes_sent() > dripped; }, 5s));
  EXPECT_EQ(metric(server.port(), "gpurent_http_connections_refused_total").value_or(-1), 0);
}

// Sanitizer runtimes need descriptors of their own: UBSan's vptr check reads a vtable it
// has not cached through a pipe, so a server out of descriptors reports a false "invalid
// vptr" and aborts. This runs in plain builds only.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitizerBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitizerBuild = true;
#else
constexpr bool kSanitizerBuild = false;
#endif
#else
constexpr bool kSanitizerBuild = false;
#endif

TEST(ConnectionLimitE2E, RunningOutOfDescriptorsPausesAcceptingButNeverEndsIt) {
  if (kSanitizerBuild) GTEST_SKIP() << "sanitizer runtimes fail without descriptors";
  TestDatabase db;
  ServerProcess server({.database_url = db.url()});
  ASSERT_EQ(healthz_status(server.port()), 200);
  // Leave the server room for a few more descriptors only.
  std::size_t in_use = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(server.pid()) + "/fd")) {
    ++in_use;
  }
  rlimit original{};
  ASSERT_EQ(prlimit(server.pid(), RLIMIT_NOFILE, nullptr, &original), 0);
  rlimit tight = original;
  tight.rlim_cur = in_use + 4;
  if (prlimit(server.pid(), RLIMIT_NOFILE, &tight, nullptr) != 0) {
    GTEST_SKIP() << "cannot change the server's descriptor limit here";
  }
  {
    std::vector<std::unique_ptr<RawConnection>> flood;
    for (int i = 0; i < 30; ++i) flood.push_back(std::make_unique<RawConnection>(server.port()));
    EXPECT_TRUE(wait_for([&] { return server.logs().find("accept failed") != std::string::npos; }))
        << "accepting should have run out of descriptors";
    // The flood leaves; its descriptors are freed and the queued connections drained.
  }
  EXPECT_TRUE(wait_for([&] { return healthz_status(server.port()) == 200; }))
      << "the listener should accept again";
  ASSERT_EQ(prlimit(server.pid(), RLIMIT_NOFILE, &original, nullptr), 0);
  EXPECT_GT(metric(server.port(), "gpurent_http_accept_errors_total").value_or(0), 0);
  EXPECT_NE(server.logs().find("accepting connections again"), std::string::npos);
}

}  // namespace gpurent::testing::connection_limit_e2e
