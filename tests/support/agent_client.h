// A node agent as the end-to-end tests play it: enrolment over the agent listener's TLS and
// one WebSocket with the client certificate, speaking raw text so a test can send what a real
// agent would and what a hostile one might. Over the real agent's client (agent/channel.h).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace gpurent::testing {

struct AgentHttpResult {
  int status = 0;
  std::string body;
};

// POST /agent/v1/enroll with `body`, trusting only `ca_pem` for the server.
AgentHttpResult agent_enroll(int port, const std::string& ca_pem, const std::string& body);

// A fresh EC P-256 key and a CSR for it, made by the `openssl` command as an agent would.
struct AgentKey {
  std::string key_pem;
  std::string csr_pem;
};
AgentKey make_agent_key();

class AgentConnection {
 public:
  // Opens the channel with the client certificate; throws std::runtime_error with the
  // handshake's status ("403 …") or the TLS error when the listener refuses it.
  AgentConnection(int port, const std::string& ca_pem, const std::string& certificate_pem,
                  const std::string& key_pem);
  ~AgentConnection();
  AgentConnection(const AgentConnection&) = delete;
  AgentConnection& operator=(const AgentConnection&) = delete;

  void send(const std::string& text);
  // The next message, or nullopt when none came within `timeout` or the channel closed.
  std::optional<std::string> read(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Whether the listener closed the channel (after a read returned nullopt).
  bool closed() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpurent::testing
