// The fleet's control plane against a real PostgreSQL, with a test clock and the scheduler's
// real lifecycle: a hello takes the node's inventory (or is refused and writes nothing), a
// critical heartbeat fails the node and interrupts what runs on it once, a warning drains
// only an available node, routine heartbeats put back to ok what was not, a task report
// counts only for the node's own task and only once, silence fails a node only once the
// replica could have heard its agent, and telemetry is sampled at most every interval but
// always when a heartbeat is unhealthy.
#include "fleet/control_plane.h"

#include "core/error.h"
#include "inventory/node_health_log.h"
#include "inventory/node_host_keys.h"
#include "scheduler/tests/lifecycle_fixture.h"
#include "tests/support/test_keys.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace gpurent::fleet {
namespace control_plane_pgtest {

namespace proto = agent_proto;
using scheduler::H;
using scheduler::RentalState;
using scheduler::TaskKind;
using scheduler::TaskState;
using ::testing::HasSubstr;

template <typename Fn>
std::optional<ErrorCode> error_code_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.code();
  }
  return std::nullopt;
}

std::string public_key_line(const std::string& name) {
  std::ifstream in(testing::ssh_key_pair(name, {"-t", "ed25519"}) + ".pub");
  std::stringstream text;
  text << in.rdbuf();
  std::string line = text.str();
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

class ControlPlaneTest : public scheduler::LifecycleTest {
 protected:
  static constexpr std::chrono::seconds kSilence{60};

  std::string enrolling_node(const std::string& hostname) {
    inventory::NewNode n;
    n.site_id = site_;
    n.hostname = hostname;
    n.gpu_model = "H100-SXM5-80GB";
    n.gpu_count = 8;
    return transact([&](Tx& tx) { return nodes_.create(tx, n, admin_).node.node.id; });
  }

  static proto::Hello hello_of(int gpus) {
    proto::Hello h;
    h.agent_version = "1.4.0";
    h.hostname = "gpu-1";
    h.gpus = {.count = gpus,
              .model = "NVIDIA H100 80GB HBM3",
              .driver_version = "550.54.15",
              .cuda_version = "12.4"};
    h.topology = topology::declared_matrix(topology::Interconnect::kNvswitch, gpus, "NV18");
    return h;
  }

  static proto::Heartbeat beat(std::vector<proto::XidEvent> events = {}) {
    proto::Heartbeat b;
    b.sent_at = Timestamp(std::chrono::seconds(1'893'456'000));
    for (int i = 0; i < 8; ++i) {
      proto::GpuTelemetry g;
      g.index = i;
      g.pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0";
      g.temperature_c = 40;
      g.ecc_volatile_dbe = 0;
      b.gpus.push_back(g);
    }
    b.events = std::move(events);
    return b;
  }

  static proto::XidEvent xid(int gpu, int code) {
    return {.pci = "0000:1" + std::to_string(gpu) + ":00", .xid = code, .message = "from dmesg"};
  }

  inventory::NodeDetail node_detail(const std::string& id) {
    return *read([&](Tx& tx) { return nodes_.get(tx, id); });
  }

  std::vector<inventory::HealthEvent> health_events(const std::string& id) {
    return read([&](Tx& tx) { return health_log_.events(tx, id, 100, std::nullopt); });
  }

  // A rental of GPUs 0 and 1 on `n` that is active now.
  std::string active_rental(const std::string& n) {
    std::string id = book(a_, n, {0, 1}, from_now(H(0), H(24)));
    run(clock_.now());
    complete_all(id, true);
    run(clock_.now() + kAfter);
    EXPECT_EQ(rental(id).state, RentalState::kActive);
    return id;
  }

  inventory::NodeHostKeys host_keys_{clock_};
  inventory::NodeHealthLog health_log_;
  ControlPlane fleet_{pool_,
                      clock_,
                      {.nodes = nodes_,
                       .host_keys = host_keys_,
                       .health_log = health_log_,
                       .tasks = tasks_,
                       .lifecycle = lifecycle_},
                      {.telemetry_interval = std::chrono::seconds(60),
                       .telemetry_retention = std::chrono::hours(24),
                       .silence_limit = kSilence}};
};

TEST_F(ControlPlaneTest, AHelloTakesTheNodesInventoryAndMakesAnEnrollingNodeAvailable) {
  std::string n = enrolling_node("gpu-enrolling");
  auto h = hello_of(8);
  h.ssh_host_keys = {public_key_line("fleet-host"), "ssh-ed25519 not-base64 broken"};
  h.ssh_probe_key = public_key_line("fleet-probe") + " agent-probe";
  EXPECT_EQ(fleet_.hello(n, h, Actor{.ip = "192.0.2.7"}), std::nullopt);

  auto shown = node_detail(n);
  EXPECT_EQ(shown.node.state, "available");
  EXPECT_EQ(shown.node.agent_version, "1.4.0");
  EXPECT_EQ(shown.node.driver_version, "550.54.15");
  ASSERT_TRUE(shown.node.ssh_probe_key);
  EXPECT_THAT(*shown.node.ssh_probe_key, ::testing::StartsWith("ssh-ed25519 AAAA"));
  EXPECT_THAT(*shown.node.ssh_probe_key, ::testing::Not(HasSubstr("agent-probe")))
      << "kept without its comment";
  auto keys = read([&](Tx& tx) { return host_keys_.list(tx, n); });
  ASSERT_EQ(keys.size(), 1u) << "the key that does not parse is left out";
  EXPECT_EQ(keys[0].algorithm, "ssh-ed25519");

  // A second hello (a reconnection) finds the node available and leaves it so; one without a
  // probe key clears the one before.
  h.ssh_probe_key.reset();
  EXPECT_EQ(fleet_.hello(n, h, Actor{}), std::nullopt);
  EXPECT_EQ(node_detail(n).node.state, "available");
  EXPECT_FALSE(node_detail(n).node.ssh_probe_key);
}

TEST_F(ControlPlaneTest, AHelloWithAnotherGpuCountIsRefusedAndWritesNothing) {
  std::string n = enrolling_node("gpu-short");
  auto refused = fleet_.hello(n, hello_of(4), Actor{});
  ASSERT_TRUE(refused);
  EXPECT_EQ(*refused, "the node has 8 GPUs on record and the agent found 4");
  auto shown = node_detail(n);
  EXPECT_EQ(shown.node.state, "enrolling");
  EXPECT_FALSE(shown.node.agent_version);
  EXPECT_EQ(error_code_of([&] { fleet_.hello("nod_missing", hello_of(8), Actor{}); }),
            ErrorCode::kNotFound);
}

TEST_F(ControlPlaneTest, ACriticalHeartbeatFailsTheNodeAndInterruptsWhatRunsOnItOnce) {
  std::string n = node("gpu-xid");
  std::string running = active_rental(n);

  auto judged = fleet_.judge(n, beat({xid(2, 79)}));
  EXPECT_FALSE(judged.routine());
  EXPECT_EQ(judged.verdict.node.health, inventory::Health::kCritical);
  ASSERT_TRUE(judged.sample) << "every unhealthy heartbeat is kept";
  fleet_.record(judged);

  auto shown = node_detail(n);
  EXPECT_EQ(shown.node.state, "failed");
  EXPECT_EQ(shown.node.health, "critical");
  EXPECT_THAT(shown.events.front().reason, HasSubstr("XID 79"));
  EXPECT_EQ(rental(running).state, RentalState::kInterrupted);
  auto events = health_events(n);
  auto fault =
      std::find_if(events.begin(), events.end(), [](const auto& e) { return e.kind == "xid"; });
  ASSERT_NE(fault, events.end());
  EXPECT_EQ(fault->xid, 79);
  EXPECT_EQ(fault->gpu_index, 2) << "matched by bus address";

  // The same fault reported again: recorded, and the node fails no second time.
  auto state_events = shown.events.size();
  fleet_.record(fleet_.judge(n, beat({xid(2, 79)})));
  EXPECT_EQ(node_detail(n).events.size(), state_events);
  EXPECT_FALSE(transact([&](Tx& tx) { return fleet_.fail_node(tx, n, "again", clock_.now()); }));
}

TEST_F(ControlPlaneTest, AWarningDrainsAnAvailableNodeAndLeavesWhatRunsOnIt) {
  std::string n = node("gpu-warm");
  std::string running = active_rental(n);
  fleet_.record(fleet_.judge(n, beat({xid(3, 94)})));  // a contained memory error: warning
  auto shown = node_detail(n);
  EXPECT_EQ(shown.node.state, "draining");
  EXPECT_EQ(shown.node.health, "warning");
  EXPECT_EQ(rental(running).state, RentalState::kActive) << "what runs goes on";

  // A node in maintenance stays there under a warning.
  std::string kept = node("gpu-kept");
  transact([&](Tx& tx) {
    nodes_.transition(tx, kept, inventory::NodeAction::kMaintenance, "repair", admin_);
  });
  fleet_.record(fleet_.judge(kept, beat({xid(3, 94)})));
  EXPECT_EQ(node_detail(kept).node.state, "maintenance");
}

TEST_F(ControlPlaneTest, RoutineHeartbeatsPutBackToOkWhatWasNot) {
  std::string sick = node("gpu-sick");
  std::string well = node("gpu-well");
  fleet_.record(fleet_.judge(sick, beat({xid(1, 94)})));
  ASSERT_EQ(node_detail(sick).node.health, "warning");
  auto before = health_events(sick).size();

  auto a = fleet_.judge(sick, beat());
  auto b = fleet_.judge(well, beat());
  ASSERT_TRUE(a.routine());
  fleet_.record_routine(
      {{a.node_id, a.received_at, a.sample}, {b.node_id, b.received_at, b.sample}});
  EXPECT_EQ(node_detail(sick).node.health, "ok");
  auto events = health_events(sick);
  ASSERT_GT(events.size(), before);
  EXPECT_EQ(events.front().reason, "back to ok from warning");
  EXPECT_TRUE(node_detail(well).node.last_heartbeat_at);
  EXPECT_TRUE(health_events(well).empty()) << "ok all along: nothing to tell";
}

TEST_F(ControlPlaneTest, ATaskReportCountsOnlyForTheNodesOwnTaskAndOnlyOnce) {
  std::string n = node("gpu-own");
  std::string other = node("gpu-other");
  std::string id = book(a_, n, {0}, from_now(H(0), H(24)));
  run(clock_.now());
  auto provision = tasks(id).at(0);
  ASSERT_EQ(provision.kind, TaskKind::kProvision);
  proto::TaskResult done{.task_id = provision.id, .ok = true, .message = "imaged"};

  EXPECT_FALSE(fleet_.task_reported(other, done)) << "another node's task is unknown";
  EXPECT_EQ(tasks(id).at(0).state, provision.state);
  EXPECT_FALSE(fleet_.task_reported(n, {.task_id = "tsk_missing", .ok = true, .message = ""}));

  EXPECT_TRUE(fleet_.task_reported(n, done));
  auto after = tasks(id);
  EXPECT_EQ(after.at(0).state, TaskState::kSucceeded);
  ASSERT_EQ(after.size(), 2u) << "the lifecycle was told: install_access follows";
  EXPECT_EQ(after.at(1).kind, TaskKind::kInstallAccess);
  EXPECT_FALSE(fleet_.task_reported(n, done)) << "a repeated report changes nothing";
  EXPECT_EQ(tasks(id).size(), 2u);
}

TEST_F(ControlPlaneTest, SilenceIsJudgedOnlyOnceTheReplicaCouldHaveHeardTheAgents) {
  std::string quiet = node("quiet");
  std::string running = active_rental(quiet);
  // Its agent last spoke ten minutes ago, before this replica started (an outage of the
  // control plane): it has a full silence limit to reconnect.
  exec("UPDATE nodes SET last_heartbeat_at = now() - interval '10 minutes' WHERE id = '" + quiet +
       "'");
  fleet_.judge_silence_from(clock_.now() + kSilence);
  clock_.advance(std::chrono::seconds(30));
  EXPECT_EQ(fleet_.fail_silent_nodes(clock_.now()), 0);
  EXPECT_EQ(node_detail(quiet).node.state, "available");
  clock_.advance(std::chrono::seconds(31));
  EXPECT_EQ(fleet_.fail_silent_nodes(clock_.now()), 1);
  auto failed = node_detail(quiet);
  EXPECT_EQ(failed.node.state, "failed");
  EXPECT_EQ(failed.node.health, "critical");
  EXPECT_THAT(failed.events.front().reason, HasSubstr("agent silent since"));
  EXPECT_EQ(rental(running).state, RentalState::kInterrupted);
  EXPECT_EQ(health_events(quiet).front().severity, "critical");
  EXPECT_EQ(fleet_.fail_silent_nodes(clock_.now()), 0) << "a failed node is not in service";
}

TEST_F(ControlPlaneTest, TelemetryIsSampledEveryIntervalAndWheneverAHeartbeatIsUnhealthy) {
  std::string n = node("gpu-sampled");
  EXPECT_TRUE(fleet_.judge(n, beat()).sample) << "the first heartbeat of a connection";
  EXPECT_FALSE(fleet_.judge(n, beat()).sample);
  EXPECT_TRUE(fleet_.judge(n, beat({xid(0, 94)})).sample);
  clock_.advance(std::chrono::seconds(61));
  EXPECT_TRUE(fleet_.judge(n, beat()).sample);
  EXPECT_FALSE(fleet_.judge(n, beat()).sample);
  fleet_.forget(n);  // the agent reconnected
  EXPECT_TRUE(fleet_.judge(n, beat()).sample);
}

}  // namespace control_plane_pgtest
}  // namespace gpurent::fleet
