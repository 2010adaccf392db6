// The tests' agent speaks through the real agent's own TLS and WebSocket client
// (agent/channel.h), so the tests exercise the code agents run, and the build compiles Beast's
// client once.
#include "tests/support/agent_client.h"

#include "agent/channel.h"
#include "core/subprocess.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gpurent::testing {
namespace {

constexpr auto kTimeout = std::chrono::seconds(30);

agent::ServerUrl local(int port) {
  return {.host = "127.0.0.1", .port = static_cast<unsigned short>(port)};
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

AgentHttpResult agent_enroll(int port, const std::string& ca_pem, const std::string& body) {
  auto response = agent::https_post_json(local(port), ca_pem, "/agent/v1/enroll", body, kTimeout);
  return {response.status, response.body};
}

AgentKey make_agent_key() {
  char dir[] = "/tmp/gpurent-agent-key-XXXXXX";
  if (!mkdtemp(dir)) throw std::runtime_error("mkdtemp failed");
  std::string base = std::string(dir) + "/agent";
  auto r = run_subprocess({"openssl", "req", "-new", "-nodes", "-newkey", "ec", "-pkeyopt",
                           "ec_paramgen_curve:P-256", "-keyout", base + ".key", "-out",
                           base + ".csr", "-subj", "/CN=gpurent-agent"});
  if (r.exit_code != 0) throw std::runtime_error("openssl req failed: " + r.output);
  AgentKey key{read_file(base + ".key"), read_file(base + ".csr")};
  std::filesystem::remove_all(dir);
  return key;
}

struct AgentConnection::Impl {
  std::unique_ptr<agent::Channel> channel;
};

AgentConnection::AgentConnection(int port, const std::string& ca_pem,
                                 const std::string& certificate_pem, const std::string& key_pem)
    : impl_(std::make_unique<Impl>()) {
  // agent::ChannelError is a std::runtime_error whose message carries the upgrade's status.
  impl_->channel = agent::open_channel(
      local(port), {.ca_pem = ca_pem, .certificate_pem = certificate_pem, .key_pem = key_pem},
      kTimeout);
}

AgentConnection::~AgentConnection() = default;

void AgentConnection::send(const std::string& text) {
  impl_->channel->send(text);
}

std::optional<std::string> AgentConnection::read(std::chrono::milliseconds timeout) {
  return impl_->channel->receive(timeout);
}

bool AgentConnection::closed() const {
  return impl_->channel->closed();
}

}  // namespace gpurent::testing
