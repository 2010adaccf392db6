// RawConnection: poll-based reads with deadlines, minimal response parsing.
#include "tests/support/http_client.h"

#include "tests/support/response_reader.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

namespace gpurent::testing {

RawConnection::RawConnection(int port) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd_);
    throw std::runtime_error("connect to port " + std::to_string(port) + " failed");
  }
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

RawConnection::~RawConnection() {
  if (fd_ >= 0) close(fd_);
}

bool RawConnection::send(const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads what is available; false on EOF, error or deadline.
bool RawConnection::fill(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return false;
  pollfd p{fd_, POLLIN, 0};
  int r = poll(&p, 1, static_cast<int>(left.count()));
  if (r <= 0) return false;
  char buf[65536];
  ssize_t n = recv(fd_, buf, sizeof buf, 0);
  if (n <= 0) return false;
  buffer_.append(buf, static_cast<std::size_t>(n));
  return true;
}

HttpResult RawConnection::read_response(std::chrono::milliseconds timeout, bool head) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  return read_http_response(
      buffer_, [this, deadline] { return fill(deadline); }, head);
}

bool RawConnection::closed_within(std::chrono::milliseconds timeout, std::string* received) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left.count()));
    if (r == 0) return false;
    if (r < 0) continue;
    char buf[4096];
    ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return true;
    if (received) received->append(buf, static_cast<std::size_t>(n));
  }
}

std::string build_request(const std::string& method, const std::string& target,
                          const std::string& body,
                          const std::map<std::string, std::string>& headers) {
  std::string out = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (const auto& [k, v] : headers) out += k + ": " + v + "\r\n";
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    if (!headers.count("Content-Length")) {
      out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    }
  }
  out += "\r\n" + body;
  return out;
}

HttpResult http_request(int port, const std::string& method, const std::string& target,
                        const std::string& body, const std::map<std::string, std::string>& headers,
                        std::chrono::milliseconds timeout) {
  RawConnection conn(port);
  if (!conn.send(build_request(method, target, body, headers))) {
    throw std::runtime_error("send failed");
  }
  return conn.read_response(timeout, method == "HEAD");
}

long long read_metric(int port, const std::string& name) {
  auto r = http_request(port, "GET", "/metrics", "", {}, std::chrono::seconds(10));
  std::string needle = "\n" + name + " ";
  auto at = r.body.find(needle);
  return at == std::string::npos ? -1 : std::stoll(r.body.substr(at + needle.size()));
}

}  // namespace gpurent::testing
