// Whether the node's sshd answers: the identification line every SSH server sends first
// (RFC 4253 §4.2, "SSH-2.0-softwareversion"), read over a plain TCP connection. What the
// install_access task checks before it reports the rental's access ready.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace gpurent::agent {

// "host:port" or "[v6]:port" split; nullopt when it is not one.
struct HostPort {
  std::string host;
  int port = 0;
};
std::optional<HostPort> parse_host_port(const std::string& text);

// The server's identification line ("SSH-2.0-OpenSSH_9.2p1 Debian-2"), without its line end,
// when a connection to `address` gives one within `timeout`; nullopt when it cannot connect,
// the line does not start with "SSH-", or nothing comes in time. Lines before it that do not
// start with "SSH-" are skipped, as RFC 4253 allows.
std::optional<std::string> sshd_banner(const HostPort& address, std::chrono::milliseconds timeout);

}  // namespace gpurent::agent
