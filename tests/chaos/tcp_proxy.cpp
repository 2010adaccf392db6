// TcpProxy: one poll thread forwards every pair's bytes both ways.
#include "tests/chaos/tcp_proxy.h"

#include "tests/support/wait_for.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

namespace gpurent::testing::chaos {
namespace {

int connect_loopback(int port) {
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
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// Closes with a reset: the peer sees "connection reset", as when a link fails mid-stream.
void reset_close(int fd) {
  linger hard{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  close(fd);
}

// Moves what `from` has to `to` (blocking write: loopback, small messages). False when
// either side has ended.
bool forward(int from, int to) {
  char buf[65536];
  ssize_t n = recv(from, buf, sizeof buf, 0);
  if (n <= 0) return false;
  ssize_t sent = 0;
  while (sent < n) {
    ssize_t w = send(to, buf + sent, static_cast<std::size_t>(n - sent), MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    sent += w;
  }
  return true;
}

}  // namespace

TcpProxy::TcpProxy(std::function<std::vector<int>()> upstreams) : upstreams_(std::move(upstreams)) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listen_fd_, 128) != 0) {
    throw std::runtime_error("the agent proxy cannot listen");
  }
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe failed");
  thread_ = std::thread([this] { run(); });
}

TcpProxy::~TcpProxy() {
  stop_ = true;
  char c = 's';
  (void)!write(wake_[1], &c, 1);
  thread_.join();
  for (auto& p : pairs_) {
    close(p.down);
    close(p.up);
  }
  close(listen_fd_);
  close(wake_[0]);
  close(wake_[1]);
}

int TcpProxy::cut_all() {
  int ticket = ++cut_requests_;
  char c = 'c';
  (void)!write(wake_[1], &c, 1);
  wait_for([&] { return cut_done_.load() >= ticket; }, std::chrono::seconds(10));
  return last_cut_.load();
}

void TcpProxy::accept_one() {
  int down = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (down < 0) return;
  int one = 1;
  setsockopt(down, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  for (int port : upstreams_()) {
    int up = connect_loopback(port);
    if (up >= 0) {
      pairs_.push_back({down, up});
      open_ = static_cast<int>(pairs_.size());
      return;
    }
  }
  // No replica's listener answers: to the agent, the same as a refused connection.
  reset_close(down);
}

void TcpProxy::run() {
  while (!stop_) {
    std::vector<pollfd> fds;
    fds.push_back({wake_[0], POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (const auto& p : pairs_) {
      fds.push_back({p.down, POLLIN, 0});
      fds.push_back({p.up, POLLIN, 0});
    }
    if (poll(fds.data(), fds.size(), 200) < 0 && errno != EINTR) return;
    if (fds[0].revents & POLLIN) {
      char buf[64];
      while (read(wake_[0], buf, sizeof buf) > 0) {
      }
    }
    if (cut_done_.load() < cut_requests_.load()) {
      int cut = 0;
      for (auto& p : pairs_) {
        reset_close(p.down);
        reset_close(p.up);
        ++cut;
      }
      pairs_.clear();
      open_ = 0;
      last_cut_ = cut;
      cut_done_ = cut_requests_.load();
      continue;
    }
    std::vector<Pair> kept;
    for (std::size_t i = 0; i < pairs_.size(); ++i) {
      const auto& d = fds[2 + 2 * i];
      const auto& u = fds[3 + 2 * i];
      bool alive = true;
      if (d.revents & (POLLIN | POLLHUP | POLLERR)) alive = forward(pairs_[i].down, pairs_[i].up);
      if (alive && (u.revents & (POLLIN | POLLHUP | POLLERR))) {
        alive = forward(pairs_[i].up, pairs_[i].down);
      }
      if (alive) {
        kept.push_back(pairs_[i]);
      } else {
        // One side ended: so does the other, as a direct connection would.
        reset_close(pairs_[i].down);
        reset_close(pairs_[i].up);
      }
    }
    pairs_ = std::move(kept);
    if (fds[1].revents & POLLIN) accept_one();
    open_ = static_cast<int>(pairs_.size());
  }
}

}  // namespace gpurent::testing::chaos
