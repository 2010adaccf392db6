// The hello's version and probe key against a real gpurentd: the server answers each agent
// in the protocol version its hello offered (an agent one release behind reads only its
// own), and keeps the agent's SSH probe key from each hello on the node (shown in the admin
// view), cleared by a hello without one; an agent one release behind is never sent a task
// kind it cannot read.
#include "agent_proto/messages.h"
#include "core/time.h"
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

// A notice task came with version 4: an agent of the previous release (version 3) is never
// sent one — it would break its channel — and the task fails at once, saying the agent must be
// upgraded; the tenant still has the notice through the API.
TEST_F(AgentHelloE2E, AVersion3AgentIsSentNoNoticeTaskAndTheTaskFailsSayingWhy) {
  Agent a = enrolled("gpu-hello-3");
  auto agent = connect(a);
  exchange(*agent, hello(), 3);
  exchange(*agent, heartbeat(), 3);
  Login owner = account("owner@example.com", "Acme");
  auto booked = post("/v1/rentals",
                     {{"gpu_model", kModel},
                      {"gpu_count", 8},
                      {"start", "now"},
                      {"days", 5},
                      {"image_id", image_id_}},
                     session(owner));
  ASSERT_EQ(booked.status, 201) << booked.body;
  std::string id = booked.json()["id"];
  // Handed over as the agent would: its tasks reported done through the test route.
  auto finish_all = [&] {
    for (int round = 0; round < 5; ++round) {
      for (const auto& t : tasks_of(id)) {
        if (t["state"] != "queued" && t["state"] != "delivered") continue;
        post("/v1/test/tasks/" + t["id"].get<std::string>() + "/complete",
             {{"ok", true}, {"message", "done"}});
      }
      advance(61);
      run_lifecycle();
    }
  };
  advance(1);
  run_lifecycle();
  finish_all();
  json rental = get("/v1/rentals/" + id, session(owner)).json();
  ASSERT_EQ(rental["state"], "active") << rental;

  Timestamp start = *parse_rfc3339(rental["period"]["start"].get<std::string>());
  auto planned = post("/v1/admin/maintenance",
                      {{"node_ids", {a.node_id}},
                       {"start", format_rfc3339(start + std::chrono::hours(24 * 4))},
                       {"end", format_rfc3339(start + std::chrono::hours(24 * 4 + 1))},
                       {"reason", "firmware"}},
                      session(admin_));
  ASSERT_EQ(planned.status, 201) << planned.body;
  json notice_task;
  ASSERT_TRUE(wait_for([&] {
    for (const auto& t : tasks_of(id)) {
      if (t["kind"] == "notice" && t["state"] == "failed") notice_task = t;
    }
    return !notice_task.is_null();
  })) << tasks_of(id);
  EXPECT_NE(notice_task.dump().find("speaks protocol version 3"), std::string::npos) << notice_task;
  // Nothing the agent got names a notice task.
  while (auto text = agent->read(std::chrono::milliseconds(300))) {
    json m = json::parse(*text);
    EXPECT_NE(m.value("kind", ""), "notice") << *text;
    EXPECT_EQ(m.value("protocol_version", 0), 3) << *text;
  }
  EXPECT_EQ(get("/v1/rentals/" + id + "/notices", session(owner)).json()["items"].size(), 1u);
}

}  // namespace gpurent::testing::agent_hello_e2e
