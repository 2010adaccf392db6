// The agent's connections to the control plane's agent listener: the enrolment POST over
// TLS, and the WebSocket channel over mutual TLS. Interfaces only; channel.cpp is the one
// translation unit with Beast.
#pragma once

#include "agent/server_url.h"

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace gpurent::agent {

// The connection could not be made or broke: TCP, TLS (an untrusted server, a refused
// certificate), the WebSocket upgrade ("403 …"), a timeout. One line.
class ChannelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct HttpsResponse {
  int status = 0;
  std::string body;
};

// POST `target` with a JSON body, trusting only `ca_pem` for the server's certificate
// (checked against the URL's host). Throws ChannelError.
HttpsResponse https_post_json(const ServerUrl& url, const std::string& ca_pem,
                              const std::string& target, const std::string& body,
                              std::chrono::seconds timeout);

// What the agent presents and trusts on its channel.
struct TlsIdentity {
  std::string ca_pem;
  std::string certificate_pem;
  std::string key_pem;
};

// One open WebSocket to /agent/v1/connect: one message per text frame. send and receive
// may be called from different threads.
class Channel {
 public:
  virtual ~Channel() = default;
  // Sends one message and waits until it was written; throws ChannelError once closed.
  virtual void send(const std::string& text) = 0;
  // The next message, or nullopt when none came within `timeout` or the channel closed.
  virtual std::optional<std::string> receive(std::chrono::milliseconds timeout) = 0;
  virtual bool closed() const = 0;
  // Closes with "going away"; what was sent before is written first.
  virtual void close() = 0;
};

// Connects, within `timeout` for each step (TCP, TLS, upgrade); throws ChannelError.
std::unique_ptr<Channel> open_channel(const ServerUrl& url, const TlsIdentity& identity,
                                      std::chrono::seconds timeout);

}  // namespace gpurent::agent
