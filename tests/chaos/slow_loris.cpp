// SlowLoris: one thread, non-blocking sockets, a byte per connection per round.
#include "tests/chaos/slow_loris.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

namespace gpurent::testing::chaos {
namespace {

// What each connection trickles: a request line and headers that never end (no blank line).
const std::string& trickle() {
  static const std::string text = [] {
    std::string t =
        "POST /v1/rentals HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";
    for (int i = 0; i < 2000; ++i) t += "X-Slow-" + std::to_string(i) + ": a\r\n";
    return t;
  }();
  return text;
}

int open_connection(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

struct Slow {
  int fd = -1;
  std::size_t sent = 0;
};

}  // namespace

SlowLoris::SlowLoris(int port, int connections, std::chrono::milliseconds interval)
    : thread_([this, port, connections, interval] { run(port, connections, interval); }) {}

SlowLoris::~SlowLoris() {
  stop_ = true;
  thread_.join();
}

void SlowLoris::run(int port, int connections, std::chrono::milliseconds interval) {
  std::vector<Slow> slow(static_cast<std::size_t>(connections));
  while (!stop_) {
    auto round = std::chrono::steady_clock::now();
    for (auto& s : slow) {
      if (stop_) break;
      if (s.fd < 0) {
        s.fd = open_connection(port);
        s.sent = 0;
        if (s.fd < 0) {
          ++refused_;
          continue;
        }
        ++opened_;
      }
      // Anything the server sent (a 408 or 431) or its close ends this connection.
      char buf[512];
      ssize_t got = recv(s.fd, buf, sizeof buf, 0);
      bool ended = got >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
      if (!ended) {
        const std::string& t = trickle();
        ssize_t w = send(s.fd, t.data() + s.sent % t.size(), 1, MSG_NOSIGNAL);
        ended = w < 0 && errno != EAGAIN && errno != EWOULDBLOCK;
        if (w == 1) ++s.sent;
      }
      if (ended) {
        ++closed_;
        close(s.fd);
        s.fd = -1;
      }
    }
    std::this_thread::sleep_until(round + interval);
  }
  for (auto& s : slow) {
    if (s.fd >= 0) close(s.fd);
  }
}

}  // namespace gpurent::testing::chaos
