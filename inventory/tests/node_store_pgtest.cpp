// NodeStore against a real PostgreSQL: creation with GPUs, declared link matrices, events,
// audit rows and a single-use enrolment token; every transition from every state; row
// locks under concurrent transitions; topology replacement; listing and updates; the SSH
// port field and the agent's probe key.
#include "inventory/node_store.h"

#include "core/crypto.h"
#include "core/db_errors.h"
#include "core/error.h"
#include "core/sql.h"
#include "inventory/tests/inventory_fixture.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <set>
#include <thread>

namespace gpurent::inventory {
namespace node_store_pgtest {

class NodeStoreTest : public InventoryTest {
 protected:
  std::string create(const std::string& hostname, const std::string& model = "H100-SXM5-80GB",
                     int gpus = 8, std::optional<std::string> interconnect = std::nullopt) {
    auto n = node(hostname, model, gpus, std::move(interconnect));
    return transact([&](Tx& tx) { return nodes_.create(tx, n, admin_); }).node.node.id;
  }

  // A node brought into `state` the way the product gets there.
  std::string node_in(NodeState state, const std::string& hostname) {
    std::string id = create(hostname, "L4-24GB", 2);
    auto step = [&](NodeAction a) { transition(id, a, "setup", admin_); };
    switch (state) {
      case NodeState::kEnrolling:
        break;
      case NodeState::kAvailable:
        step(NodeAction::kEnrolled);
        break;
      case NodeState::kMaintenance:
        step(NodeAction::kEnrolled);
        step(NodeAction::kMaintenance);
        break;
      case NodeState::kDraining:
        step(NodeAction::kEnrolled);
        step(NodeAction::kDrain);
        break;
      case NodeState::kFailed:
        step(NodeAction::kFail);
        break;
      case NodeState::kRetired:
        step(NodeAction::kRetire);
        break;
    }
    EXPECT_EQ(get(id)->node.state, to_string(state));
    return id;
  }

  std::optional<NodeDetail> get(const std::string& id) {
    return read([&](Tx& tx) { return nodes_.get(tx, id); });
  }

  std::optional<NodeDetail> transition(const std::string& id, NodeAction action,
                                       const std::string& reason,
                                       const std::optional<Actor>& actor) {
    return transact([&](Tx& tx) { return nodes_.transition(tx, id, action, reason, actor); });
  }

  std::optional<std::string> consume(const std::string& token) {
    return transact([&](Tx& tx) { return nodes_.consume_enrollment_token(tx, token); });
  }

  long long events(const std::string& id) {
    return count("SELECT count(*) FROM node_events WHERE node_id = '" + id + "'");
  }
  long long audits(const std::string& id) {
    return count("SELECT count(*) FROM audit_log WHERE target = '" + id + "'");
  }
};

TEST_F(NodeStoreTest, CreateWritesGpusMatrixEventAuditAndAHashedToken) {
  auto created = transact(
      [&](Tx& tx) { return nodes_.create(tx, node("HGX-01", "H100-SXM5-80GB", 8), admin_); });
  const auto& d = created.node;
  EXPECT_EQ(d.node.state, "enrolling");
  EXPECT_EQ(d.node.health, "unknown");
  EXPECT_EQ(d.node.interconnect, "nvswitch");
  EXPECT_EQ(d.node.topology_source, "declared");
  ASSERT_EQ(d.gpus.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(d.gpus[i].index, i);
  EXPECT_TRUE(d.topology.all_nvlink({0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(d.topology.links[0][7], "NV18");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].action, "created");
  EXPECT_EQ(d.events[0].to_state, "enrolling");
  EXPECT_EQ(count("SELECT count(*) FROM gpu_links WHERE node_id = '" + d.node.id + "'"), 28);
  EXPECT_EQ(audits(d.node.id), 1);

  EXPECT_EQ(created.enrollment_token.rfind("gpe_", 0), 0u);
  EXPECT_EQ(created.enrollment_token.size(), 4u + 64u);
  EXPECT_EQ(count("SELECT count(*) FROM node_enrollment_tokens WHERE token_hash = '" +
                  crypto::sha256_hex(created.enrollment_token) + "'"),
            1);
  EXPECT_EQ(count("SELECT count(*) FROM node_enrollment_tokens WHERE token_hash = '" +
                  created.enrollment_token + "'"),
            0);
}

TEST_F(NodeStoreTest, DeclaredMatricesFollowTheModelAndInterconnect) {
  auto matrix = [&](const std::string& id) { return get(id)->topology; };
  auto a100 = matrix(create("a100", "A100-SXM4-80GB", 8));
  EXPECT_EQ(a100.links[2][5], "NV12");
  auto pairs = matrix(create("a100p", "A100-PCIe-80GB", 4, "nvlink-pairs"));
  EXPECT_TRUE(pairs.all_nvlink({0, 1}));
  EXPECT_TRUE(pairs.all_nvlink({2, 3}));
  EXPECT_FALSE(pairs.all_nvlink({0, 2}));
  EXPECT_EQ(pairs.links[0][1], "NV4");
  auto rtx = matrix(create("rtx", "RTX4090-24GB", 8));
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) EXPECT_EQ(topology::is_nvlink(rtx.links[a][b]), false);
  }
  auto field_of = [&](NewNode n) {
    try {
      transact([&](Tx& tx) { return nodes_.create(tx, n, admin_); });
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
      return e.details().value("field", "");
    }
    return std::string("created");
  };
  EXPECT_EQ(field_of(node("x1", "L4-24GB", 4, "nvswitch")), "interconnect");
  EXPECT_EQ(field_of(node("x2", "L4-24GB", 4, "nvlink-pairs")), "interconnect");
  EXPECT_EQ(field_of(node("x3", "A100-PCIe-80GB", 3, "nvlink-pairs")), "gpu_count");
  EXPECT_EQ(field_of(node("x4", "L4-24GB", 4, "infiniband")), "interconnect");
  EXPECT_EQ(field_of(node("x5", "B200", 8)), "gpu_model");
  auto bad_site = node("x6", "L4-24GB", 1);
  bad_site.site_id = "sit_0000000000000000000000";
  EXPECT_EQ(field_of(bad_site), "site_id");
  EXPECT_EQ(field_of(node("x7", "L4-24GB", 65)), "gpu_count");
  EXPECT_EQ(count("SELECT count(*) FROM nodes"), 3);
}

TEST_F(NodeStoreTest, HostnamesAreUniqueIgnoringCase) {
  create("gpu-01");
  try {
    create("GPU-01");
    FAIL() << "created twice";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConflict);
  }
  std::string other = create("gpu-02");
  NodeChange change;
  change.hostname = "Gpu-01";
  try {
    transact([&](Tx& tx) { return nodes_.update(tx, other, change, admin_); });
    FAIL() << "renamed onto another node";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConflict);
  }
  EXPECT_EQ(get(other)->node.hostname, "gpu-02");
}

TEST_F(NodeStoreTest, EnrollmentTokensAreSingleUseAndExpire) {
  auto first =
      transact([&](Tx& tx) { return nodes_.create(tx, node("n1", "L4-24GB", 1), admin_); });
  auto second =
      transact([&](Tx& tx) { return nodes_.create(tx, node("n2", "L4-24GB", 1), admin_); });
  EXPECT_EQ(first.enrollment_expires_at - first.node.node.created_at, std::chrono::hours(24));
  EXPECT_EQ(consume(first.enrollment_token), first.node.node.id);
  EXPECT_FALSE(consume(first.enrollment_token));
  EXPECT_FALSE(consume("gpe_" + std::string(64, '0')));
  clock_.advance(std::chrono::hours(24) + std::chrono::seconds(1));
  EXPECT_FALSE(consume(second.enrollment_token));
}

// Two agents present one token at once: exactly one enrols.
TEST_F(NodeStoreTest, ATokenPresentedConcurrentlyEnrolsOnce) {
  for (int round = 0; round < 5; ++round) {
    auto n = node("race-" + std::to_string(round), "L4-24GB", 1);
    auto created = transact([&](Tx& tx) { return nodes_.create(tx, n, admin_); });
    std::atomic<int> won{0};
    std::vector<std::thread> threads;
    constexpr int kAgents = 6;
    std::latch go(kAgents);  // all present the token at once
    for (int i = 0; i < kAgents; ++i) {
      threads.emplace_back([&] {
        go.arrive_and_wait();
        if (consume(created.enrollment_token)) ++won;
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(won.load(), 1) << "round " << round;
  }
}

TEST_F(NodeStoreTest, EveryActionFromEveryStateFollowsTheMachine) {
  int n = 0;
  for (NodeState from : all_node_states()) {
    for (NodeAction action : all_node_actions()) {
      SCOPED_TRACE(std::string(to_string(from)) + " + " + std::string(to_string(action)));
      std::string id = node_in(from, "t" + std::to_string(n++));
      long long events_before = events(id), audits_before = audits(id);
      auto expected = next_state(from, action);
      try {
        auto after = transition(id, action, "because", admin_);
        ASSERT_TRUE(expected) << "allowed";
        ASSERT_TRUE(after);
        EXPECT_EQ(after->node.state, to_string(*expected));
        EXPECT_EQ(after->events.front().action, to_string(action));
        EXPECT_EQ(after->events.front().from_state, to_string(from));
        EXPECT_EQ(after->events.front().reason, "because");
        EXPECT_EQ(events(id), events_before + 1);
        EXPECT_EQ(audits(id), audits_before + 1);
      } catch (const Error& e) {
        EXPECT_FALSE(expected) << "refused";
        EXPECT_EQ(e.code(), ErrorCode::kInvalidState);
        EXPECT_EQ(e.details().value("state", ""), to_string(from));
        EXPECT_EQ(e.details().value("action", ""), to_string(action));
        EXPECT_EQ(get(id)->node.state, to_string(from));
        EXPECT_EQ(events(id), events_before);
        EXPECT_EQ(audits(id), audits_before);
      }
    }
  }
  EXPECT_FALSE(transition("nod_0000000000000000000000", NodeAction::kDrain, "x", admin_));
}

TEST_F(NodeStoreTest, SystemEventsWriteEventsButNoAuditRows) {
  std::string id = create("sys-01", "L4-24GB", 1);
  transition(id, NodeAction::kEnrolled, "agent enrolled", std::nullopt);
  auto d = get(id);
  EXPECT_EQ(d->node.state, "available");
  EXPECT_FALSE(d->events.front().actor_user_id);
  EXPECT_EQ(audits(id), 1);  // the creation only
}

// Eight admins drain one node at once: the row lock lets exactly one through.
TEST_F(NodeStoreTest, ConcurrentTransitionsOfOneNodeSerialise) {
  std::string id = node_in(NodeState::kAvailable, "race-01");
  std::atomic<int> ok{0}, refused{0};
  std::vector<std::thread> threads;
  constexpr int kAdmins = 8;
  std::latch go(kAdmins);  // all drain at once
  for (int i = 0; i < kAdmins; ++i) {
    threads.emplace_back([&] {
      go.arrive_and_wait();
      try {
        transition(id, NodeAction::kDrain, "race", admin_);
        ++ok;
      } catch (const Error& e) {
        if (e.code() == ErrorCode::kInvalidState) ++refused;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 1);
  EXPECT_EQ(refused.load(), 7);
  EXPECT_EQ(count("SELECT count(*) FROM node_events WHERE action = 'drain'"), 1);
}

TEST_F(NodeStoreTest, SetTopologyReplacesTheMatrixOrRefusesAnotherGpuCount) {
  std::string id = create("topo-01", "L40S-48GB", 4);
  auto m = topology::declared_matrix(topology::Interconnect::kNvswitch, 4, "NV6");
  auto d = transact([&](Tx& tx) { return nodes_.set_topology(tx, id, m, "admin", admin_); });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->topology, m);
  EXPECT_EQ(d->node.topology_source, "admin");
  auto eight = topology::declared_matrix(topology::Interconnect::kPcie, 8, "");
  try {
    transact([&](Tx& tx) { return nodes_.set_topology(tx, id, eight, "admin", admin_); });
    FAIL() << "accepted 8 GPUs on a 4-GPU node";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
    EXPECT_EQ(e.details().value("field", ""), "topology");
  }
  EXPECT_EQ(get(id)->topology, m);
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'node.topology_set'"), 1);
}

TEST_F(NodeStoreTest, ListFiltersAndPagesVisitEveryNodeOnce) {
  std::set<std::string> l4;
  for (int i = 0; i < 5; ++i) l4.insert(create("l4-" + std::to_string(i), "L4-24GB", 1));
  std::string h100 = create("h100-0");
  transition(h100, NodeAction::kRetire, "gone", admin_);
  std::set<std::string> seen;
  std::optional<std::string> cursor;
  NodeFilter filter{.gpu_model = "L4-24GB"};
  do {
    auto page = read([&](Tx& tx) { return nodes_.list(tx, filter, 2, cursor); });
    for (const auto& n : page.items) EXPECT_TRUE(seen.insert(n.id).second) << "repeated";
    cursor = page.next_cursor;
  } while (cursor);
  EXPECT_EQ(seen, l4);
  auto list = [&](const NodeFilter& f) {
    return read([&](Tx& tx) { return nodes_.list(tx, f, 50, std::nullopt); });
  };
  auto retired = list({.state = "retired"});
  ASSERT_EQ(retired.items.size(), 1u);
  EXPECT_EQ(retired.items[0].id, h100);
  EXPECT_EQ(list({.site_id = site_}).items.size(), 6u);
  EXPECT_TRUE(list({.site_id = "sit_0000000000000000000000"}).items.empty());
}

TEST_F(NodeStoreTest, UpdateChangesOnlyWhatItNamesAndCanClear) {
  auto n = node("upd-01", "L4-24GB", 1);
  n.cpu_cores = 16;
  n.ram_gb = 256;
  std::string id = transact([&](Tx& tx) { return nodes_.create(tx, n, admin_); }).node.node.id;
  NodeChange change;
  change.cpu_cores = {true, std::nullopt};
  change.labels = nlohmann::json{{"rack", "b7"}};
  auto d = transact([&](Tx& tx) { return nodes_.update(tx, id, change, admin_); });
  EXPECT_FALSE(d->node.cpu_cores);
  EXPECT_EQ(d->node.ram_gb, 256);
  EXPECT_EQ(d->node.labels, (nlohmann::json{{"rack", "b7"}}));
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'node.updated'"), 1);
  EXPECT_FALSE(transact(
      [&](Tx& tx) { return nodes_.update(tx, "nod_0000000000000000000000", change, admin_); }));
}

TEST_F(NodeStoreTest, TheSshPortIsAFieldOfItsOwnFrom1To65535) {
  std::string plain = create("port-01", "L4-24GB", 1);
  EXPECT_EQ(get(plain)->node.ssh_port, 22) << "the default";
  auto n = node("port-02", "L4-24GB", 1);
  n.ssh_port = 2222;
  std::string id = transact([&](Tx& tx) { return nodes_.create(tx, n, admin_); }).node.node.id;
  EXPECT_EQ(get(id)->node.ssh_port, 2222);

  auto field_of = [&](auto&& use_case) {
    try {
      transact(use_case);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidRequest);
      return e.details().value("field", "");
    }
    return std::string("accepted");
  };
  for (int port : {0, -1, 65536}) {
    auto bad = node("port-bad", "L4-24GB", 1);
    bad.ssh_port = port;
    EXPECT_EQ(field_of([&](Tx& tx) { nodes_.create(tx, bad, admin_); }), "ssh_port") << port;
    NodeChange change;
    change.ssh_port = port;
    EXPECT_EQ(field_of([&](Tx& tx) { nodes_.update(tx, id, change, admin_); }), "ssh_port") << port;
  }
  EXPECT_EQ(get(id)->node.ssh_port, 2222) << "a refused change changes nothing";

  NodeChange other;
  other.labels = nlohmann::json{{"rack", "b7"}};
  EXPECT_FALSE(other.empty());
  transact([&](Tx& tx) { nodes_.update(tx, id, other, admin_); });
  EXPECT_EQ(get(id)->node.ssh_port, 2222) << "an update that does not name it keeps it";
  NodeChange port;
  port.ssh_port = 65535;
  EXPECT_FALSE(port.empty());
  auto d = transact([&](Tx& tx) { return nodes_.update(tx, id, port, admin_); });
  EXPECT_EQ(d->node.ssh_port, 65535);
  EXPECT_EQ(d->node.labels, (nlohmann::json{{"rack", "b7"}}));
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'node.updated' AND target = '" +
                  id + "' AND details->'fields' = '[\"ssh_port\"]'::jsonb"),
            1);
  // The schema holds the range too.
  EXPECT_THROW(exec("UPDATE nodes SET ssh_port = 0 WHERE id = '" + id + "'"),
               pqxx::check_violation);
  EXPECT_EQ(get(plain)->node.ssh_port, 22);
}

TEST_F(NodeStoreTest, EachHelloSetsOrClearsTheProbeKey) {
  std::string id = create("probe-01", "L4-24GB", 1);
  EXPECT_FALSE(get(id)->node.ssh_probe_key) << "none until an agent reports one";
  const std::string key =
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
  transact([&](Tx& tx) { nodes_.record_ssh_probe_key(tx, id, key); });
  EXPECT_EQ(get(id)->node.ssh_probe_key, key);
  transact([&](Tx& tx) { nodes_.record_ssh_probe_key(tx, id, key); });
  EXPECT_EQ(get(id)->node.ssh_probe_key, key) << "the same key again";
  transact([&](Tx& tx) { nodes_.record_ssh_probe_key(tx, id, std::nullopt); });
  EXPECT_FALSE(get(id)->node.ssh_probe_key) << "a hello without one clears it";
  // Only an Ed25519 key line without a comment is stored.
  for (const std::string& bad : {std::string("ssh-rsa AAAAB3NzaC1yc2E="), key + " comment"}) {
    EXPECT_THROW(transact([&](Tx& tx) { nodes_.record_ssh_probe_key(tx, id, bad); }),
                 ConstraintViolation)
        << bad;
  }
}

TEST_F(NodeStoreTest, HealthIsSetForTheNodeAndItsGpus) {
  std::string id = create("health-01", "L4-24GB", 2);
  transact([&](Tx& tx) { nodes_.set_health(tx, id, Health::kOk); });
  auto d = get(id);
  EXPECT_EQ(d->node.health, "ok");
  for (const auto& g : d->gpus) EXPECT_EQ(g.health, "ok");
}

TEST_F(NodeStoreTest, HealthyHeartbeatsOfManyNodesAreRecordedInOneCall) {
  std::string a = create("beat-01", "L4-24GB", 2);
  std::string b = create("beat-02", "L4-24GB", 2);
  std::string quiet = create("beat-03", "L4-24GB", 2);
  transact([&](Tx& tx) {
    nodes_.set_health(tx, a, Health::kOk);
    nodes_.set_health(tx, b, Health::kWarning);
  });
  Timestamp at_a = timestamp_from_micros(1'780'000'000'123'456);
  Timestamp at_b = timestamp_from_micros(1'780'000'001'000'000);
  transact([&](Tx& tx) {
    nodes_.record_healthy_heartbeats(tx, {});  // nothing to write
    nodes_.record_healthy_heartbeats(tx, {{b, at_b}, {a, at_a}});
  });
  for (const auto& [id, at] : {std::pair{a, at_a}, std::pair{b, at_b}}) {
    auto d = get(id);
    EXPECT_EQ(d->node.last_heartbeat_at, at) << id;
    EXPECT_EQ(d->node.health, "ok") << id;
    for (const auto& g : d->gpus) EXPECT_EQ(g.health, "ok") << id;
  }
  auto untouched = get(quiet);
  EXPECT_FALSE(untouched->node.last_heartbeat_at);
  EXPECT_EQ(untouched->node.health, "unknown");
}

}  // namespace node_store_pgtest
}  // namespace gpurent::inventory
