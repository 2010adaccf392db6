// The sshd banner check against small TCP servers of the test's own: an SSH server's
// identification line is found (after other lines, as RFC 4253 allows), anything else —
// another protocol, silence, a closed port — is no banner, within the time given.
#include "agent/sshd_banner.h"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace gpurent::agent::sshd_banner_test {

// Listens on 127.0.0.1; each connection gets `greeting`, then is held open a while.
class TinyServer {
 public:
  explicit TinyServer(std::string greeting) : greeting_(std::move(greeting)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 4);
    socklen_t n = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &n);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      if (!greeting_.empty()) (void)!::write(c, greeting_.data(), greeting_.size());
      std::this_thread::sleep_for(std::chrono::milliseconds(700));
      ::close(c);
    });
  }
  ~TinyServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  HostPort address() const { return {"127.0.0.1", port_}; }

 private:
  std::string greeting_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

TEST(SshdBanner, AnSshServersIdentificationLineIsTheBanner) {
  TinyServer sshd("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n");
  EXPECT_EQ(sshd_banner(sshd.address(), std::chrono::seconds(2)),
            "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3");
  TinyServer chatty("Welcome to the node\r\nAuthorised use only\r\nSSH-2.0-dropbear_2022.83\r\n");
  EXPECT_EQ(sshd_banner(chatty.address(), std::chrono::seconds(2)), "SSH-2.0-dropbear_2022.83");
}

TEST(SshdBanner, AnythingElseIsNoBanner) {
  TinyServer http("HTTP/1.1 400 Bad Request\r\n\r\n");
  EXPECT_EQ(sshd_banner(http.address(), std::chrono::seconds(1)), std::nullopt);
  TinyServer silent("");
  auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(sshd_banner(silent.address(), std::chrono::milliseconds(300)), std::nullopt);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2))
      << "the wait ends at the time given";
  int closed_port = 0;
  {
    TinyServer gone("SSH-2.0-x\r\n");
    closed_port = gone.address().port;
    EXPECT_TRUE(sshd_banner(gone.address(), std::chrono::seconds(2)));
  }
  EXPECT_EQ(sshd_banner({"127.0.0.1", closed_port}, std::chrono::seconds(1)), std::nullopt);
}

TEST(ParseHostPort, HostsAndPorts) {
  auto v4 = parse_host_port("127.0.0.1:22");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 22);
  auto v6 = parse_host_port("[::1]:2222");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 2222);
  for (std::string bad :
       {"", "host", ":22", "host:", "host:0", "host:65536", "host:2x", "[::1:22"}) {
    EXPECT_EQ(parse_host_port(bad), std::nullopt) << bad;
  }
}

}  // namespace gpurent::agent::sshd_banner_test
