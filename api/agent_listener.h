// The agent listener: its own TLS port, apart from the public API, where node agents enrol
// (POST /agent/v1/enroll, no client certificate yet) and then hold one WebSocket each
// (GET /agent/v1/connect, mutual TLS: a client certificate the platform's CA issued).
// It carries bytes only: what the messages mean is the AgentEndpoint's business, so this
// header keeps Beast and OpenSSL out of its users, as http_server.h does.
#pragma once

#include "core/worker_pool.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace gpurent::http {

struct AgentListenerOptions {
  std::string host = "127.0.0.1";
  unsigned short port = 8443;  // 0: any free port (tests)
  int io_threads = 1;
  std::string server_certificate_pem;
  std::string server_key_pem;
  std::string client_ca_pem;                   // the only CA whose client certificates are accepted
  std::size_t max_message_bytes = 256 * 1024;  // a bigger frame closes the channel (1009)
  std::size_t max_connections = 20'000;
  // TLS handshake plus the first request; then, for a channel, silence from the agent (its
  // heartbeats and the WebSocket pings both count) after which it is closed.
  std::chrono::milliseconds handshake_timeout{10'000};
  std::chrono::milliseconds idle_timeout{60'000};
  // What may wait to be sent to one agent (one that stopped reading: nothing else ever
  // times a write out). A message that would take its channel past either is not queued:
  // the channel is cut instead, with a logged reason, and the agent reconnects (its hello
  // gets every unfinished task again). A message always fits an empty queue.
  std::size_t max_outbox_messages = 1000;
  std::size_t max_outbox_bytes = 4 * 1024 * 1024;
};

// One agent's open channel. Thread-safe: messages are sent in the order given, or the
// channel is cut when they pile up (AgentListenerOptions::max_outbox_messages).
class AgentChannel {
 public:
  virtual ~AgentChannel() = default;
  virtual void send(std::string text) = 0;
  // Closes with a WebSocket close frame carrying `reason` (policy violation).
  virtual void close(const std::string& reason) = 0;
  virtual const std::string& node_id() const = 0;
  virtual const std::string& remote_ip() const = 0;
};

// An agent's request the endpoint refuses: the HTTP status (enrolment) or the reason the
// channel is refused or closed with.
class AgentRefusal : public std::runtime_error {
 public:
  AgentRefusal(int status, std::string code, const std::string& message)
      : std::runtime_error(message), status_(status), code_(std::move(code)) {}
  int status() const { return status_; }
  const std::string& code() const { return code_; }

 private:
  int status_;
  std::string code_;
};

// What the listener asks of the control plane. Every call runs on a worker thread (it may
// wait on the database), and one channel's calls never overlap: the listener reads an
// agent's next message only once received() returned for the last one.
class AgentEndpoint {
 public:
  virtual ~AgentEndpoint() = default;
  // POST /agent/v1/enroll: the JSON body in, the JSON answer out (200). Throws AgentRefusal
  // or gpurent::Error for a refusal.
  virtual nlohmann::json enroll(const nlohmann::json& body, const std::string& remote_ip) = 0;
  // A connection with a client certificate the CA signed, by its serial (lowercase hex):
  // the node it speaks for. Throws AgentRefusal (403) when it may not (revoked, retired…).
  virtual std::string admit(const std::string& serial, const std::string& remote_ip) = 0;
  virtual void opened(const std::shared_ptr<AgentChannel>& channel) = 0;
  virtual void received(const std::shared_ptr<AgentChannel>& channel, std::string text) = 0;
  // The last call for a channel; the endpoint drops its references to it here (a channel
  // must not outlive the listener).
  virtual void closed(const std::shared_ptr<AgentChannel>& channel) = 0;
};

struct AgentListenerStats {
  std::size_t channels_open = 0;
  std::uint64_t channels_opened_total = 0;
  std::uint64_t refused_total = 0;  // TLS failures, refused certificates, bad requests
  std::uint64_t messages_received_total = 0;
  std::uint64_t messages_sent_total = 0;
  // Waiting to be sent, all channels together, and channels cut because theirs was full.
  std::size_t outbox_messages = 0;
  std::size_t outbox_bytes = 0;
  std::uint64_t outbox_overflows_total = 0;
};

class AgentListener {
 public:
  AgentListener(AgentListenerOptions options, AgentEndpoint& endpoint, WorkerPool& workers);
  ~AgentListener();
  AgentListener(const AgentListener&) = delete;
  AgentListener& operator=(const AgentListener&) = delete;

  // Binds, listens and starts its io threads; the bound port.
  unsigned short start();
  // Closes every channel (1001 going away) and stops; idempotent.
  void stop();
  AgentListenerStats stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpurent::http
