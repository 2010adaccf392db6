// The banner read with POSIX sockets and poll(): one short connection, no library.
#include "agent/sshd_banner.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>

namespace gpurent::agent {
namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::optional<HostPort> parse_host_port(const std::string& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return std::nullopt;
  HostPort out;
  out.host = text.substr(0, colon);
  if (out.host.front() == '[') {
    if (out.host.size() < 3 || out.host.back() != ']') return std::nullopt;
    out.host = out.host.substr(1, out.host.size() - 2);
  }
  const char* begin = text.data() + colon + 1;
  const char* end = text.data() + text.size();
  auto [after, ec] = std::from_chars(begin, end, out.port);
  if (ec != std::errc() || after != end || out.port < 1 || out.port > 65535) return std::nullopt;
  return out;
}

std::optional<std::string> sshd_banner(const HostPort& address, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string port = std::to_string(address.port);
  if (getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found) != 0 || !found) {
    return std::nullopt;
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> list(found, freeaddrinfo);
  Fd sock{::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)};
  if (sock.fd < 0) return std::nullopt;
  if (::connect(sock.fd, found->ai_addr, found->ai_addrlen) != 0 && errno != EINPROGRESS) {
    return std::nullopt;
  }
  pollfd p{sock.fd, POLLOUT, 0};
  if (::poll(&p, 1, remaining_ms(deadline)) != 1) return std::nullopt;
  int error = 0;
  socklen_t len = sizeof error;
  if (::getsockopt(sock.fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0 || error != 0) {
    return std::nullopt;
  }
  // RFC 4253: lines of at most 255 bytes; a server may send other lines before its own.
  std::string pending;
  for (int lines = 0; lines < 16;) {
    p = {sock.fd, POLLIN, 0};
    if (::poll(&p, 1, remaining_ms(deadline)) != 1) return std::nullopt;
    char buf[256];
    ssize_t n = ::recv(sock.fd, buf, sizeof buf, 0);
    if (n <= 0) return std::nullopt;
    pending.append(buf, static_cast<std::size_t>(n));
    for (auto eol = pending.find('\n'); eol != std::string::npos; eol = pending.find('\n')) {
      std::string line = pending.substr(0, eol);
      pending.erase(0, eol + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.rfind("SSH-", 0) == 0) return line;
      ++lines;
    }
    if (pending.size() > 255) return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace gpurent::agent
