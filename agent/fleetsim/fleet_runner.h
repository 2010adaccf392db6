// The simulated fleet's network side: one TLS connection and WebSocket per agent, each with
// its own client certificate, all on one or two io threads (asynchronous, no thread per
// agent). Connects are spread over a ramp; a dropped channel is reconnected with the real
// agent's backoff (agent/backoff.h). This header keeps Beast out of its users;
// fleet_runner.cpp is the simulator's only translation unit with Beast and Asio.
#pragma once

#include "agent/fleetsim/simulated_agent.h"
#include "agent/server_url.h"

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace gpurent::agent::fleetsim {

// An enrolled node: its certificate and key (PEM) and its state folder.
struct FleetMember {
  std::string node_id;
  std::string certificate_pem;
  std::string key_pem;
  std::filesystem::path state_dir;
};

struct FleetRunnerOptions {
  ServerUrl server;
  std::string ca_pem;
  int io_threads = 1;
  std::chrono::milliseconds heartbeat{10'000};
  std::chrono::milliseconds ramp{0};
  std::chrono::milliseconds backoff_initial{1'000};
  std::chrono::milliseconds backoff_max{60'000};
  std::chrono::seconds timeout{30};  // TCP, TLS, upgrade, and the hello's ack, each
};

class FleetRunner {
 public:
  // Throws std::runtime_error for a certificate, key or CA that is not usable.
  FleetRunner(FleetRunnerOptions options, std::vector<FleetMember> members, AgentShared& shared);
  ~FleetRunner();
  FleetRunner(const FleetRunner&) = delete;
  FleetRunner& operator=(const FleetRunner&) = delete;

  // Resolves the server and starts the io threads; agent i connects at about ramp * i / N.
  // Throws std::runtime_error when the server's name does not resolve.
  void start();
  // Closes every channel (1001 going away, a few seconds for the close handshakes) and
  // stops the io threads. Idempotent.
  void stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpurent::agent::fleetsim
