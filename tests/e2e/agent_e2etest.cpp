// Node agents end to end against a real gpurentd: an admin creates a node, its agent enrols
// over the agent listener's TLS with a CSR made by `openssl`, connects with the certificate,
// says hello with its link matrix (the node comes into service), reports health, and carries
// out a rental's provisioning tasks until the rental is active. Refusals: used and unknown
// tokens, a retired node's certificate, malformed messages.
#include "agent_proto/messages.h"
#include "core/subprocess.h"
#include "tests/support/agent_client.h"
#include "tests/support/rental_fleet_fixture.h"
#include "tests/support/test_keys.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace gpurent::testing::agent_e2e {

using nlohmann::json;
namespace proto = agent_proto;

class AgentE2E : public RentalFleetTest {
 protected:
  void SetUp() override {
    pki_dir_ = make_temp_dir("gpurent-agent-pki");
    server_ = std::make_unique<ServerProcess>(replica_options());
    ASSERT_NE(server_->agent_port(), 0) << "the agent listener is on";
    seed_fleet({1, 2, 4, 8});
    std::ifstream in(pki_dir_ + "/ca.crt");
    std::ostringstream text;
    text << in.rdbuf();
    ca_pem_ = text.str();
    ASSERT_FALSE(ca_pem_.empty());
  }

  void TearDown() override {
    ApiTest::TearDown();
    std::filesystem::remove_all(pki_dir_);
  }

  // Every replica shares the agents' CA, as deployed. The lifecycle worker's own thread
  // waits a minute between runs: the test runs it.
  // The test clock jumps minutes at a time here, so the agent's silence limit is set longer
  // than any jump, except where silence is the point.
  ServerOptions replica_options(const std::string& silence_limit = "1h") {
    return {.database_url = db_.url(),
            .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0",
                      "--lifecycle_interval=60s", "--agent_pki_dir=" + pki_dir_,
                      "--agent_silence_limit=" + silence_limit}};
  }

  // An admin's new node: its id and single-use enrolment token.

  struct Enrolment {
    std::string node_id;
    std::string certificate_pem;
    std::string key_pem;
  };
  Enrolment enroll(const std::string& token) {
    auto key = make_agent_key();
    auto r = agent_enroll(server_->agent_port(), ca_pem_,
                          json{{"enrollment_token", token}, {"csr_pem", key.csr_pem}}.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    auto body = json::parse(r.body);
    EXPECT_EQ(body["ca_pem"], ca_pem_);
    return {body["node_id"], body["certificate_pem"], key.key_pem};
  }

  std::string send(AgentConnection& agent, proto::Body body) {
    std::string id = "a-" + std::to_string(++sent_);
    agent.send(proto::encode({.id = id, .body = std::move(body)}));
    return id;
  }
  proto::Message next(AgentConnection& agent) {
    if (!early_tasks_.empty()) {
      auto m = std::move(early_tasks_.front());
      early_tasks_.erase(early_tasks_.begin());
      return m;
    }
    auto text = agent.read();
    EXPECT_TRUE(text.has_value()) << "nothing came from the server";
    return proto::decode(text.value_or("{}"));
  }
  // The ack of `id`. A task the server pushes meanwhile may come first (the push follows the
  // commit that made it, on another thread than the ack): it is kept for next().
  void expect_ack(AgentConnection& agent, const std::string& id) {
    auto text = agent.read();
    ASSERT_TRUE(text.has_value()) << "nothing came from the server";
    auto m = proto::decode(*text);
    while (std::holds_alternative<proto::Task>(m.body)) {
      early_tasks_.push_back(m);
      text = agent.read();
      ASSERT_TRUE(text.has_value()) << "no ack came from the server";
      m = proto::decode(*text);
    }
    const auto* ack = std::get_if<proto::Ack>(&m.body);
    ASSERT_NE(ack, nullptr) << proto::encode(m);
    EXPECT_EQ(ack->acked_id, id);
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
  std::vector<proto::Message> early_tasks_;  // pushed before the ack a test waited for
};

TEST_F(AgentE2E, AnEnrolledAgentBringsItsNodeIntoServiceAndProvisionsARental) {
  auto [node_id, token] = create_enrolling_node("gpu-agent-1");
  EXPECT_EQ(node_view(node_id)["state"], "enrolling");
  auto enrolled = enroll(token);
  EXPECT_EQ(enrolled.node_id, node_id);
  // The token was single-use.
  auto again =
      agent_enroll(server_->agent_port(), ca_pem_,
                   json{{"enrollment_token", token}, {"csr_pem", make_agent_key().csr_pem}}.dump());
  EXPECT_EQ(again.status, 401) << again.body;

  AgentConnection agent(server_->agent_port(), ca_pem_, enrolled.certificate_pem, enrolled.key_pem);
  expect_ack(agent, send(agent, hello()));
  json shown = node_view(node_id);
  EXPECT_EQ(shown["state"], "available");
  EXPECT_EQ(shown["topology_source"], "agent");
  EXPECT_EQ(shown["agent_version"], "0.9.0");
  expect_ack(agent, send(agent, heartbeat()));
  shown = node_view(node_id);
  EXPECT_EQ(shown["health"], "ok");
  EXPECT_TRUE(shown["last_heartbeat_at"].is_string());

  // A customer books two GPUs on it; the worker starts the rental and the agent gets its
  // provisioning tasks at once, over its channel.
  Login owner = account("owner@example.com", "Acme");
  auto booked = book_now(owner, 2);
  ASSERT_EQ(booked.status, 201) << booked.body;
  std::string rental = booked.json()["id"];
  EXPECT_EQ(booked.json()["node_id"], node_id);
  advance(1);
  run_lifecycle();
  // The provision first; install_access comes once the agent has reported it done (made in
  // that report's transaction, so at once).
  std::vector<std::string> kinds;
  for (int i = 0; i < 2; ++i) {
    auto m = next(agent);
    const auto* task = std::get_if<proto::Task>(&m.body);
    ASSERT_NE(task, nullptr) << proto::encode(m);
    EXPECT_EQ(task->rental_id, rental);
    EXPECT_EQ(agent.read(std::chrono::milliseconds(300)), std::nullopt) << "each task sent once";
    kinds.push_back(std::string(proto::to_string(task->kind)));
    expect_ack(agent, send(agent, proto::TaskResult{
                                      .task_id = task->task_id, .ok = true, .message = "done"}));
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"provision", "install_access"}));
  advance(61);
  run_lifecycle();
  auto r = get("/v1/rentals/" + rental, session(owner));
  ASSERT_EQ(r.json()["state"], "active") << r.body;

  // GPU 1 falls off the bus: the next heartbeat carries the kernel's XID 79 line, and the
  // node fails with the rental on it interrupted at once (the limit is two heartbeats).
  auto beat = heartbeat();
  beat.events.push_back({.pci = "0000:11:00",
                         .xid = 79,
                         .pid = std::nullopt,
                         .process = std::nullopt,
                         .message = "GPU has fallen off the bus.",
                         .at = std::nullopt});
  expect_ack(agent, send(agent, beat));
  shown = node_view(node_id);
  EXPECT_EQ(shown["state"], "failed");
  EXPECT_EQ(shown["health"], "critical");
  EXPECT_EQ(shown["gpus"][1]["health"], "critical");
  EXPECT_EQ(shown["gpus"][0]["health"], "ok");
  // The health history, newest first: the GPU's and the node's changes after the event.
  ASSERT_EQ(shown["health_events"].size(), 3u) << shown["health_events"];
  EXPECT_EQ(shown["health_events"][2]["kind"], "xid");
  EXPECT_EQ(shown["health_events"][2]["xid"], 79);
  EXPECT_EQ(shown["health_events"][2]["gpu_index"], 1);
  EXPECT_EQ(shown["health_events"][2]["severity"], "critical");
  EXPECT_EQ(shown["health_events"][1]["gpu_index"], nullptr);
  EXPECT_EQ(shown["health_events"][1]["severity"], "critical");
  EXPECT_EQ(shown["health_events"][0]["gpu_index"], 1);
  EXPECT_EQ(shown["health_events"][0]["kind"], "health");
  r = get("/v1/rentals/" + rental, session(owner));
  EXPECT_EQ(r.json()["state"], "interrupted") << r.body;
  auto events = get("/v1/rentals/" + rental + "/events", session(owner)).json()["items"];
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back()["to_state"], "interrupted");
  EXPECT_NE(events.back()["reason"].get<std::string>().find("79"), std::string::npos)
      << events.back();
  // The agent is asked to take the tenant's access away, should it still answer.
  auto m = next(agent);
  const auto* revoke = std::get_if<proto::Task>(&m.body);
  ASSERT_NE(revoke, nullptr) << proto::encode(m);
  EXPECT_EQ(revoke->kind, proto::TaskKind::kRevokeAccess);
}

TEST_F(AgentE2E, RefusedTokensCertificatesAndMessages) {
  auto [node_id, token] = create_enrolling_node("gpu-agent-2");
  auto unknown = agent_enroll(server_->agent_port(), ca_pem_,
                              json{{"enrollment_token", "gpe_" + std::string(64, '0')},
                                   {"csr_pem", make_agent_key().csr_pem}}
                                  .dump());
  EXPECT_EQ(unknown.status, 401) << unknown.body;
  auto bad_csr = agent_enroll(server_->agent_port(), ca_pem_,
                              json{{"enrollment_token", token}, {"csr_pem", "hello"}}.dump());
  EXPECT_EQ(bad_csr.status, 400) << bad_csr.body;
  EXPECT_EQ(json::parse(bad_csr.body)["error"]["details"]["field"], "csr_pem");
  auto enrolled = enroll(token);  // the refused CSR left the token unused

  {
    AgentConnection agent(server_->agent_port(), ca_pem_, enrolled.certificate_pem,
                          enrolled.key_pem);
    agent.send("{\"type\": \"heartbeat\"");  // cut short
    auto m = next(agent);
    const auto* error = std::get_if<proto::Error>(&m.body);
    ASSERT_NE(error, nullptr) << proto::encode(m);
    EXPECT_EQ(error->code, proto::kErrorMalformed);
    // The channel stays open for the next, well-formed message.
    expect_ack(agent, send(agent, hello()));
  }

  auto retired =
      post("/v1/admin/nodes/" + node_id + "/retire", {{"reason", "end of life"}}, session(admin_));
  ASSERT_EQ(retired.status, 200) << retired.body;
  try {
    AgentConnection refused(server_->agent_port(), ca_pem_, enrolled.certificate_pem,
                            enrolled.key_pem);
    ADD_FAILURE() << "a retired node's agent connected";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("403"), std::string::npos) << e.what();
  }
}

// Replicas share nothing but the database: a task the lifecycle worker makes on replica A
// reaches the agent connected to replica B at once, through B's LISTEN on the task table.
TEST_F(AgentE2E, ATaskMadeOnOneReplicaReachesAnAgentOnAnother) {
  ServerProcess replica_b(replica_options());
  auto [node_id, token] = create_enrolling_node("gpu-agent-3");
  auto enrolled = enroll(token);  // on A
  AgentConnection agent(replica_b.agent_port(), ca_pem_, enrolled.certificate_pem,
                        enrolled.key_pem);
  expect_ack(agent, send(agent, hello()));
  expect_ack(agent, send(agent, heartbeat()));
  ASSERT_EQ(node_view(node_id)["state"], "available");

  Login owner = account("owner@example.com", "Acme");
  auto booked = book_now(owner, 8);
  ASSERT_EQ(booked.status, 201) << booked.body;
  advance(1);
  run_lifecycle();  // on A: the provision is made there
  auto m = next(agent);
  const auto* task = std::get_if<proto::Task>(&m.body);
  ASSERT_NE(task, nullptr) << proto::encode(m);
  EXPECT_EQ(proto::to_string(task->kind), "provision");
  EXPECT_EQ(task->rental_id, booked.json()["id"]);
  // Its report on B makes install_access there, which reaches the agent too.
  expect_ack(agent, send(agent, proto::TaskResult{
                                    .task_id = task->task_id, .ok = true, .message = "done"}));
  auto access = next(agent);
  const auto* second = std::get_if<proto::Task>(&access.body);
  ASSERT_NE(second, nullptr) << proto::encode(access);
  EXPECT_EQ(proto::to_string(second->kind), "install_access");
}

// Healthy heartbeats waiting to be written are bounded (agent_heartbeat_max_pending): with
// room for one, a second that comes while the first waits for its batch is refused with the
// protocol error `overloaded`, naming the limit, and counted in /metrics; the first is acked
// once written, and the agent's next heartbeat is taken again.
TEST_F(AgentE2E, AHeartbeatBeyondThePendingLimitIsRefusedAsOverloaded) {
  auto options = replica_options();
  options.flags.push_back("--agent_heartbeat_max_pending=1");
  ServerProcess replica_b(options);
  auto [node_id, token] = create_enrolling_node("gpu-agent-3");
  auto enrolled = enroll(token);
  AgentConnection agent(replica_b.agent_port(), ca_pem_, enrolled.certificate_pem,
                        enrolled.key_pem);
  expect_ack(agent, send(agent, hello()));
  expect_ack(agent, send(agent, heartbeat()));

  // Back to back: the second is read while the first waits out its batch's window (100 ms).
  std::string first = send(agent, heartbeat());
  std::string second = send(agent, heartbeat());
  std::optional<proto::Ack> ack;
  std::optional<proto::Error> refusal;
  while (!ack || !refusal) {
    auto m = next(agent);
    if (const auto* a = std::get_if<proto::Ack>(&m.body)) {
      ASSERT_FALSE(ack) << proto::encode(m);
      ack = *a;
    } else if (const auto* e = std::get_if<proto::Error>(&m.body)) {
      ASSERT_FALSE(refusal) << proto::encode(m);
      refusal = *e;
    } else {
      ASSERT_TRUE(std::holds_alternative<proto::Task>(m.body)) << proto::encode(m);
    }
  }
  EXPECT_EQ(ack->acked_id, first);
  EXPECT_EQ(refusal->code, "overloaded");
  EXPECT_EQ(refusal->offending_id, second);
  EXPECT_NE(refusal->message.find("agent_heartbeat_max_pending"), std::string::npos)
      << refusal->message;
  EXPECT_NE(refusal->message.find(" 1 "), std::string::npos) << refusal->message;

  // The channel stays open, and the next heartbeat is recorded as usual.
  expect_ack(agent, send(agent, heartbeat()));
  auto metrics = http_request(replica_b.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("\ngpurent_agent_heartbeats_refused_total 1\n"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("\ngpurent_agent_heartbeats_pending_max 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("\ngpurent_agent_outbox_overflows_total 0\n"), std::string::npos);
  EXPECT_NE(metrics.find("\ngpurent_webhook_resolver_busy_total 0\n"), std::string::npos);
  EXPECT_NE(metrics.find("\ngpurent_webhook_resolving_max 16\n"), std::string::npos);
}

// An agent that falls silent past the limit leaves its node unreachable: failed, with the
// reason in the node's events, by the lifecycle worker of any replica.
TEST_F(AgentE2E, ANodeWhoseAgentFallsSilentFails) {
  ServerProcess replica_b(replica_options("30s"));
  auto [node_id, token] = create_enrolling_node("gpu-agent-4");
  auto enrolled = enroll(token);
  {
    AgentConnection agent(replica_b.agent_port(), ca_pem_, enrolled.certificate_pem,
                          enrolled.key_pem);
    expect_ack(agent, send(agent, hello()));
    expect_ack(agent, send(agent, heartbeat()));
  }
  ASSERT_EQ(node_view(node_id)["state"], "available");
  // Replica B's clock moves on and B's worker runs; A's limit is an hour and A never judges.
  ASSERT_EQ(
      http_request(replica_b.port(), "POST", "/v1/admin/test-clock",
                   json{{"advance_seconds", 20}}.dump(), {{"Content-Type", "application/json"}})
          .status,
      200);
  ASSERT_EQ(http_request(replica_b.port(), "POST", "/v1/test/lifecycle/run", "{}",
                         {{"Content-Type", "application/json"}})
                .status,
            200);
  EXPECT_EQ(node_view(node_id)["state"], "available") << "20 s of silence is within the limit";
  ASSERT_EQ(
      http_request(replica_b.port(), "POST", "/v1/admin/test-clock",
                   json{{"advance_seconds", 20}}.dump(), {{"Content-Type", "application/json"}})
          .status,
      200);
  ASSERT_EQ(http_request(replica_b.port(), "POST", "/v1/test/lifecycle/run", "{}",
                         {{"Content-Type", "application/json"}})
                .status,
            200);
  json shown = node_view(node_id);
  EXPECT_EQ(shown["state"], "failed");
  EXPECT_EQ(shown["health"], "critical");
  ASSERT_FALSE(shown["events"].empty());
  EXPECT_NE(shown["events"][0]["reason"].get<std::string>().find("silent"), std::string::npos)
      << shown["events"][0];
  ASSERT_FALSE(shown["health_events"].empty());
  EXPECT_EQ(shown["health_events"][0]["severity"], "critical");
  EXPECT_NE(shown["health_events"][0]["reason"].get<std::string>().find("unreachable"),
            std::string::npos)
      << shown["health_events"][0];
}

// The task table is the truth and the notification only a wake-up: a task whose
// notification never came (here: the trigger off, as if the listener had been reconnecting)
// is found by the replica's poll and sent all the same.
TEST_F(AgentE2E, ATaskWhoseNotificationWasMissedIsSentByThePoll) {
  auto options = replica_options();
  options.flags.push_back("--agent_task_poll=1s");
  ServerProcess polling(options);
  auto [node_id, token] = create_enrolling_node("gpu-agent-5");
  auto enrolled = enroll(token);
  AgentConnection agent(polling.agent_port(), ca_pem_, enrolled.certificate_pem, enrolled.key_pem);
  expect_ack(agent, send(agent, hello()));
  expect_ack(agent, send(agent, heartbeat()));
  sql("ALTER TABLE agent_tasks DISABLE TRIGGER agent_tasks_created");
  Login owner = account("owner@example.com", "Acme");
  auto booked = book_now(owner, 8);
  ASSERT_EQ(booked.status, 201) << booked.body;
  advance(1);
  run_lifecycle();
  std::vector<std::string> kinds;
  for (int i = 0; i < 2; ++i) {
    auto m = next(agent);
    const auto* task = std::get_if<proto::Task>(&m.body);
    ASSERT_NE(task, nullptr) << proto::encode(m);
    kinds.push_back(std::string(proto::to_string(task->kind)));
    // install_access is made at the provision's report, its notification missed too.
    expect_ack(agent, send(agent, proto::TaskResult{
                                      .task_id = task->task_id, .ok = true, .message = "done"}));
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"provision", "install_access"}));
  EXPECT_EQ(agent.read(std::chrono::milliseconds(2500)), std::nullopt)
      << "the next polls find nothing more to send";
}

// A reinstalled agent enrols again with a fresh token from an admin; its old certificate
// stops working at once.
TEST_F(AgentE2E, AReinstalledAgentEnrolsAgainAndTheOldCertificateIsRefused) {
  auto [node_id, token] = create_enrolling_node("gpu-agent-6");
  auto first = enroll(token);
  auto fresh =
      post("/v1/admin/nodes/" + node_id + "/enrollment-token", json::object(), session(admin_));
  ASSERT_EQ(fresh.status, 201) << fresh.body;
  EXPECT_EQ(fresh.json()["node_id"], node_id);
  auto second = enroll(fresh.json()["enrollment_token"]);
  EXPECT_EQ(second.node_id, node_id);
  AgentConnection agent(server_->agent_port(), ca_pem_, second.certificate_pem, second.key_pem);
  expect_ack(agent, send(agent, hello()));
  try {
    AgentConnection old(server_->agent_port(), ca_pem_, first.certificate_pem, first.key_pem);
    ADD_FAILURE() << "the superseded certificate connected";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("403"), std::string::npos) << e.what();
  }
  // Only platform admins, and only for nodes that exist and are not retired.
  Login owner = account("owner@example.com", "Acme");
  EXPECT_EQ(post("/v1/admin/nodes/" + node_id + "/enrollment-token", json::object(), session(owner))
                .status,
            403);
  EXPECT_EQ(post("/v1/admin/nodes/nod_doesnotexist000000000/enrollment-token", json::object(),
                 session(admin_))
                .status,
            404);
}

TEST_F(AgentE2E, TheNodesSshHostKeysComeWithItsHelloAndShowInTheNodeView) {
  auto [node_id, token] = create_enrolling_node("gpu-agent-7");
  auto enrolled = enroll(token);
  // sshd's own key files, as ssh-keygen makes them; the fingerprint is ssh-keygen's.
  std::string key_file = ssh_key_pair("agent-host-ed25519", {"-t", "ed25519", "-C", "root@gpu"});
  std::ifstream pub(key_file + ".pub");
  std::string line;
  std::getline(pub, line);
  auto listed = run_subprocess({"ssh-keygen", "-l", "-E", "sha256", "-f", key_file + ".pub"});
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  std::istringstream words(listed.output);
  std::string bits, fingerprint;
  words >> bits >> fingerprint;

  AgentConnection agent(server_->agent_port(), ca_pem_, enrolled.certificate_pem, enrolled.key_pem);
  auto with_keys = hello();
  // The second has a sound shape but is no key: left out, and the hello still taken.
  with_keys.ssh_host_keys = {line, "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC7 broken"};
  expect_ack(agent, send(agent, with_keys));
  json keys = node_view(node_id)["ssh_host_keys"];
  ASSERT_EQ(keys.size(), 1u) << keys;
  EXPECT_EQ(keys[0]["algorithm"], "ssh-ed25519");
  EXPECT_EQ(keys[0]["fingerprint"], fingerprint);
  EXPECT_EQ(keys[0]["public_key"], line.substr(0, line.rfind(' ')));  // without its comment
  EXPECT_EQ(node_view(node_id)["state"], "available");

  // A later hello reports what the node has then: none.
  AgentConnection again(server_->agent_port(), ca_pem_, enrolled.certificate_pem, enrolled.key_pem);
  expect_ack(again, send(again, hello()));
  EXPECT_TRUE(node_view(node_id)["ssh_host_keys"].empty());
}

// What the agent reports is kept for the admin views: the latest telemetry in the node view
// (once per agent_telemetry_interval, and every unhealthy heartbeat), its history for
// charts, and the health history: each change of health with why, and each XID event.
TEST_F(AgentE2E, TheNodeViewShowsTelemetryAndTheHealthHistory) {
  auto [node_id, token] = create_enrolling_node("gpu-agent-8");
  auto enrolled = enroll(token);
  AgentConnection agent(server_->agent_port(), ca_pem_, enrolled.certificate_pem, enrolled.key_pem);
  expect_ack(agent, send(agent, hello()));
  auto beat_at = [&](double temperature) {
    auto beat = heartbeat();
    for (auto& gpu : beat.gpus) gpu.temperature_c = temperature;
    return beat;
  };
  expect_ack(agent, send(agent, beat_at(41)));
  json shown = node_view(node_id);
  ASSERT_TRUE(shown["telemetry"].is_object()) << shown["telemetry"];
  ASSERT_EQ(shown["telemetry"]["gpus"].size(), 8u);
  EXPECT_EQ(shown["telemetry"]["gpus"][0]["temperature_c"], 41);
  EXPECT_EQ(shown["telemetry"]["gpus"][7]["pci_bus_id"], "00000000:97:00.0");
  EXPECT_TRUE(shown["health_events"].empty()) << "a first ok is no change worth a line";

  // Within the interval a healthy heartbeat keeps no telemetry; after it, one does.
  expect_ack(agent, send(agent, beat_at(42)));
  EXPECT_EQ(node_view(node_id)["telemetry"]["gpus"][0]["temperature_c"], 41);
  advance(61);
  expect_ack(agent, send(agent, beat_at(43)));
  auto history = get("/v1/admin/nodes/" + node_id + "/telemetry", session(admin_));
  ASSERT_EQ(history.status, 200) << history.body;
  ASSERT_EQ(history.json()["items"].size(), 2u) << history.body;
  EXPECT_EQ(history.json()["items"][0]["gpus"][0]["temperature_c"], 41);
  EXPECT_EQ(history.json()["items"][1]["gpus"][0]["temperature_c"], 43);
  EXPECT_EQ(history.json()["items"][1]["gpus"][5], (json{{"index", 5},
                                                         {"temperature_c", 43},
                                                         {"power_w", nullptr},
                                                         {"utilization_pct", 0},
                                                         {"memory_used_mib", nullptr},
                                                         {"sm_clock_mhz", nullptr}}));

  // GPU 3 slows down for heat: a warning, kept at once, and the node drains.
  auto hot = beat_at(44);
  hot.gpus[3].throttle_reasons = {"hw_thermal_slowdown"};
  expect_ack(agent, send(agent, hot));
  shown = node_view(node_id);
  EXPECT_EQ(shown["health"], "warning");
  EXPECT_EQ(shown["state"], "draining");
  EXPECT_EQ(shown["gpus"][3]["health"], "warning");
  EXPECT_EQ(shown["gpus"][2]["health"], "ok") << "each GPU its own health";
  EXPECT_EQ(shown["telemetry"]["gpus"][3]["throttle_reasons"],
            json::array({"hw_thermal_slowdown"}));
  ASSERT_EQ(shown["health_events"].size(), 2u) << shown["health_events"];
  EXPECT_EQ(shown["health_events"][0]["gpu_index"], 3);
  EXPECT_EQ(shown["health_events"][0]["severity"], "warning");
  EXPECT_EQ(shown["health_events"][1]["gpu_index"], nullptr);
  EXPECT_NE(shown["health_events"][1]["reason"].get<std::string>().find("hw_thermal_slowdown"),
            std::string::npos)
      << shown["health_events"][1];

  // It cools down: back to ok, through the batched path, with a line each.
  expect_ack(agent, send(agent, beat_at(45)));
  shown = node_view(node_id);
  EXPECT_EQ(shown["health"], "ok");
  EXPECT_EQ(shown["gpus"][3]["health"], "ok");
  // An application's fault on GPU 0: recorded, and nothing else changes.
  auto app_fault = beat_at(45);
  app_fault.events.push_back(
      {.pci = "0000:10:00", .xid = 13, .message = "Graphics SM Warp Exception on (GPC 0, TPC 1)"});
  expect_ack(agent, send(agent, app_fault));
  EXPECT_EQ(node_view(node_id)["health"], "ok");

  // The health history, a page at a time, newest first.
  std::vector<json> seen;
  std::string path = "/v1/admin/nodes/" + node_id + "/health-events?limit=2";
  for (int page = 0; page < 5; ++page) {
    auto r = get(path, session(admin_));
    ASSERT_EQ(r.status, 200) << r.body;
    json body = r.json();
    for (const auto& e : body["items"]) seen.push_back(e);
    if (body["next_cursor"].is_null()) break;
    path = "/v1/admin/nodes/" + node_id +
           "/health-events?limit=2&cursor=" + body["next_cursor"].get<std::string>();
  }
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen[0]["kind"], "xid");
  EXPECT_EQ(seen[0]["xid"], 13);
  EXPECT_EQ(seen[0]["severity"], "info");
  EXPECT_EQ(seen[0]["gpu_index"], 0);
  EXPECT_EQ(seen[1]["reason"], "back to ok from warning");
  EXPECT_EQ(seen[2]["reason"], "back to ok from warning");
  EXPECT_EQ(seen[3]["severity"], "warning");
  EXPECT_EQ(seen[4]["severity"], "warning");

  // Refusals in the contract's format.
  std::string other = node_id.substr(0, node_id.size() - 1) + (node_id.back() == 'a' ? "b" : "a");
  EXPECT_EQ(get("/v1/admin/nodes/" + other + "/health-events", session(admin_)).status, 404);
  EXPECT_EQ(get("/v1/admin/nodes/" + other + "/telemetry", session(admin_)).status, 404);
  for (std::string bad :
       {"/health-events?cursor=abc", "/health-events?cursor=-5",
        "/telemetry?from=2026-12-02T00:00:00Z&to=2026-12-01T00:00:00Z",
        "/telemetry?from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z", "/telemetry?hours=3"}) {
    auto r = get("/v1/admin/nodes/" + node_id + bad, session(admin_));
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body;
    EXPECT_EQ(r.json()["error"]["code"], "invalid_request") << bad;
  }
  Login customer = account("someone@example.com", "Someone");
  EXPECT_NE(get("/v1/admin/nodes/" + node_id + "/telemetry", session(customer)).status, 200);

  // The node list carries the hottest GPU and when, for the fleet overview; a node that never
  // reported has neither.
  auto [silent_id, unused] = create_enrolling_node("gpu-agent-silent");
  auto hotter = beat_at(41);
  hotter.gpus[6].temperature_c = 77.5;
  advance(61);
  expect_ack(agent, send(agent, hotter));
  auto listed = get("/v1/admin/nodes?limit=500", session(admin_));
  ASSERT_EQ(listed.status, 200) << listed.body;
  std::map<std::string, json> by_id;
  const json list = listed.json();
  for (const auto& n : list["items"]) by_id[n["id"]] = n;
  EXPECT_EQ(by_id[node_id]["hottest_gpu_temperature_c"], 77.5);
  EXPECT_EQ(by_id[node_id]["telemetry_at"], node_view(node_id)["telemetry"]["at"]);
  EXPECT_TRUE(by_id[silent_id]["hottest_gpu_temperature_c"].is_null()) << by_id[silent_id];
  EXPECT_TRUE(by_id[silent_id]["telemetry_at"].is_null());
}

}  // namespace gpurent::testing::agent_e2e
