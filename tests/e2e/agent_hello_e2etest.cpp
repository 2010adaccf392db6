// The hello's version and probe key against a real gpurentd: the server answers each agent
// in the protocol version its hello offered (an agent one release behind reads only its
// own), and keeps the agent's SSH probe key from each hello on the node (shown in the admin
// view), cleared by a hello without one.
#include "agent_proto/messages.h"
#include "tests/support/agent_client.h"
#include "tests/support/rental_fleet_fixture.h"
#include "tests/support/test_keys.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpurent::testing::agent_hello_e2e {

using nlohmann::json;
namespace proto = agent_proto;

class AgentHelloE2E : public RentalFleetTest {
 protected:
  void SetUp() override {
    pki_dir_ = make_temp_dir("gpurent-agent-pki");
    server_ = std::make_unique<ServerProcess>(
        ServerOptions{.database_url = db_.url(),
                      .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0",
                                "--agent_pki_dir=" + pki_dir_, "--agent_silence_limit=1h"}});
    ASSERT_NE(server_->agent_port(), 0) << "the agent listener is on";
    std::ifstream in(pki_dir_ + "/ca.crt");
    std::ostringstream text;
    text << in.rdbuf();
    ca_pem_ = text.str();
    ASSERT_FALSE(ca_pem_.empty());
    seed_fleet({8});
  }
  void TearDown() override {
    ApiTest::TearDown();
    std::filesystem::remove_all(pki_dir_);
  }

  struct Agent {
    std::string node_id;
    std::string certificate_pem;
    std::string key_pem;
  };
  Agent enrolled(const std::string& hostname) {
    auto [node_id, token] = create_enrolling_node(hostname);
    auto key = make_agent_key();
    auto r = agent_enroll(server_->agent_port(), ca_pem_,
                          json{{"enrollment_token", token}, {"csr_pem", key.csr_pem}}.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    auto body = json::parse(r.body);
    return {body["node_id"], body["certificate_pem"], key.key_pem};
  }
  std::unique_ptr<AgentConnection> connect(const Agent& a) {
    return std::make_unique<AgentConnection>(server_->agent_port(), ca_pem_, a.certificate_pem,
                                             a.key_pem);
  }
  // Sends `body` at `version` and returns the server's answer as it came: raw JSON, so the
  // version it was written in shows whatever this build's decoder reads.
  json exchange(AgentConnection& agent, proto::Body body, int version) {
    std::string id = "a-" + std::to_string(++sent_);
    agent.send(proto::encode({.id = id, .protocol_version = version, .body = std::move(body)}));
    auto text = agent.read();
    EXPECT_TRUE(text.has_value()) << "nothing came from the server";
    json answer = json::parse(text.value_or("{}"));
    EXPECT_EQ(answer.value("type", ""), "ack") << answer.dump();
    EXPECT_EQ(answer.value("acked_id", ""), id) << answer.dump();
    return answer;
  }
  static proto::Hello hello() {
    return {.agent_version = "0.9.0",
            .hostname = "gpu-agent-1",
            .gpus = {.count = 8,
                     .model = "NVIDIA H100 80GB HBM3",
                     .driver_version = "550.54.15",
                     .cuda_version = "12.4"},
            .topology = topology::declared_matrix(topology::Interconnect::kNvswitch, 8, "NV18")};
  }
  static proto::Heartbeat heartbeat() {
    proto::Heartbeat beat;
    beat.sent_at =
        std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
    for (int i = 0; i < 8; ++i) {
      proto::GpuTelemetry gpu;
      gpu.index = i;
      gpu.pci_bus_id = "00000000:" + std::string(i < 4 ? "1" : "9") + std::to_string(i) + ":00.0";
      gpu.temperature_c = 41;
      gpu.utilization_pct = 0;
      gpu.ecc_volatile_dbe = 0;
      beat.gpus.push_back(gpu);
    }
    return beat;
  }

  std::string pki_dir_;
  std::string ca_pem_;
  int sent_ = 0;
};

TEST_F(AgentHelloE2E, AnAgentIsAnsweredInTheVersionItsHelloOffered) {
  Agent a = enrolled("gpu-hello-1");
  for (int version : {proto::kOldestAcceptedVersion, proto::kProtocolVersion}) {
    SCOPED_TRACE(version);
    auto agent = connect(a);
    json ack = exchange(*agent, hello(), version);
    EXPECT_EQ(ack["protocol_version"], version) << ack.dump();
    json beat_ack = exchange(*agent, heartbeat(), version);
    EXPECT_EQ(beat_ack["protocol_version"], version) << beat_ack.dump();
  }
  EXPECT_EQ(node_view(a.node_id)["state"], "available");
}

TEST_F(AgentHelloE2E, EachHelloSetsOrClearsTheNodesProbeKey) {
  Agent a = enrolled("gpu-hello-2");
  std::ifstream pub(ssh_key_pair("agent-probe-ed25519", {"-t", "ed25519", "-C", "gpurent-probe"}) +
                    ".pub");
  std::string line;
  std::getline(pub, line);
  auto with_key = hello();
  with_key.ssh_probe_key = line;
  {
    auto agent = connect(a);
    exchange(*agent, with_key, proto::kProtocolVersion);
  }
  EXPECT_EQ(node_view(a.node_id)["ssh_probe_key"], line.substr(0, line.rfind(' ')))
      << "kept without its comment";
  {
    // An agent of the previous version has no probe key to report.
    auto agent = connect(a);
    exchange(*agent, hello(), proto::kOldestAcceptedVersion);
  }
  EXPECT_TRUE(node_view(a.node_id)["ssh_probe_key"].is_null());
  {
    auto agent = connect(a);
    exchange(*agent, with_key, proto::kProtocolVersion);
  }
  EXPECT_EQ(node_view(a.node_id)["ssh_probe_key"], line.substr(0, line.rfind(' ')));
  {
    auto agent = connect(a);
    exchange(*agent, hello(), proto::kProtocolVersion);
  }
  EXPECT_TRUE(node_view(a.node_id)["ssh_probe_key"].is_null()) << "a hello without one clears it";
}

}  // namespace gpurent::testing::agent_hello_e2e
