// The real `gpurent-fleetsim` against a real gpurentd: 20 simulated agents in one process
// enrol with their nodes' single-use tokens, bring every node into service with heartbeats
// recorded, and one of them provisions a rental booked on its node. A second run reconnects
// with the certificates kept in the state folder, enrolling nothing.
#include "tests/support/child_process.h"
#include "tests/support/paths.h"
#include "tests/support/rental_fleet_fixture.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <filesystem>
#include <fstream>

namespace gpurent::testing::fleetsim_e2e {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr int kAgents = 20;

class FleetsimE2E : public RentalFleetTest {
 protected:
  void SetUp() override {
    pki_dir_ = make_temp_dir("gpurent-fleetsim-pki");
    work_ = make_temp_dir("gpurent-fleetsim-run");
    server_ = agent_server(pki_dir_, lifecycle_wake_);
    ASSERT_NE(server_->agent_port(), 0) << "the agent listener is on";
    seed_fleet({1, 2, 4, 8});
  }

  void TearDown() override {
    ApiTest::TearDown();
    fs::remove_all(pki_dir_);
    fs::remove_all(work_);
  }

  std::unique_ptr<ChildProcess> start_fleet(std::vector<std::string> more, const std::string& log,
                                            int agents = kAgents) {
    std::vector<std::string> args = {"--server",
                                     "https://127.0.0.1:" + std::to_string(server_->agent_port()),
                                     "--ca",
                                     pki_dir_ + "/ca.crt",
                                     "--state-dir",
                                     work_ + "/state",
                                     "--agents",
                                     std::to_string(agents),
                                     "--heartbeat",
                                     "1s",
                                     "--ramp",
                                     "1s",
                                     "--status-interval",
                                     "500ms",
                                     "--provision-delay",
                                     "300ms"};
    args.insert(args.end(), more.begin(), more.end());
    return std::make_unique<ChildProcess>(fleetsim_path(), args, fs::path(work_) / log);
  }

  // Of `nodes`, how many are available and healthy with a heartbeat recorded.
  int in_service(const std::vector<std::string>& nodes) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    std::string list;
    for (const auto& n : nodes) list += (list.empty() ? "" : ",") + tx.quote(n);
    return tx
        .exec1("SELECT count(*) FROM nodes WHERE id IN (" + list +
               ") AND state = 'available' AND health = 'ok'"
               " AND last_heartbeat_at IS NOT NULL")[0]
        .as<int>();
  }

  // The last status line the simulator printed, or an empty object.
  static json last_status(const std::string& log) {
    json last = json::object();
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("\"connected\"") == std::string::npos) continue;
      auto j = json::parse(line, nullptr, false);
      if (j.is_object()) last = j;
    }
    return last;
  }

  // Enrols `count` new nodes through the simulator; their ids, once all are in service.
  std::vector<std::string> enrolled_fleet(int count, std::unique_ptr<ChildProcess>& fleet) {
    std::vector<std::string> nodes;
    {
      std::ofstream file(work_ + "/enroll.txt");
      file << "# node_id token\n";
      for (int i = 0; i < count; ++i) {
        auto [node_id, token] = create_enrolling_node("fleet-" + std::to_string(i));
        nodes.push_back(node_id);
        file << node_id << ' ' << token << '\n';
      }
    }
    fleet = start_fleet({"--enroll-from", work_ + "/enroll.txt"}, "fleet-1.log", count);
    EXPECT_TRUE(wait_for([&] { return in_service(nodes) == count; }, std::chrono::seconds(60)))
        << in_service(nodes) << " in service\n"
        << fleet->log();
    return nodes;
  }

  std::string pki_dir_;
  std::string work_;
  bool lifecycle_wake_ = false;  // the lifecycle runs when the test asks
};

// As deployed: the lifecycle worker runs on its interval (a minute here) and whenever a
// rental that starts now is booked or an agent reports a task.
class FleetsimWakeE2E : public FleetsimE2E {
 protected:
  FleetsimWakeE2E() { lifecycle_wake_ = true; }
};

TEST_F(FleetsimE2E, TwentyAgentsEnrolComeIntoServiceAndOneProvisionsARental) {
  std::unique_ptr<ChildProcess> fleet;
  auto nodes = enrolled_fleet(kAgents, fleet);
  ASSERT_EQ(in_service(nodes), kAgents) << fleet->log();
  // Heartbeats keep coming and are acknowledged once recorded.
  ASSERT_TRUE(wait_for([&] {
    json s = last_status(fleet->log());
    return s.value("connected", 0) == kAgents && s.value("heartbeats_acked", 0) >= 2 * kAgents;
  })) << fleet->log();
  json shown = node_view(nodes[0]);
  EXPECT_EQ(shown["topology_source"], "agent");
  EXPECT_EQ(shown["agent_version"], GPURENT_VERSION);

  // A rental lands on one of the simulated nodes; its agent provisions it.
  Login owner = account("owner@example.com", "Acme");
  auto booked = book_now(owner, 2);
  ASSERT_EQ(booked.status, 201) << booked.body;
  std::string rental = booked.json()["id"];
  advance(1);
  run_lifecycle();
  bool active = wait_for(
      [&] {
        advance(61);
        run_lifecycle();
        return get("/v1/rentals/" + rental, session(owner)).json()["state"] == "active";
      },
      std::chrono::seconds(60), std::chrono::milliseconds(300));
  ASSERT_TRUE(active) << get("/v1/rentals/" + rental, session(owner)).body << "\n" << fleet->log();
  EXPECT_EQ(fleet->stop(SIGTERM), 0) << fleet->log();
  json summary = last_status(fleet->log());
  EXPECT_TRUE(summary.value("summary", false)) << fleet->log();
  EXPECT_GE(summary.value("tasks_finished", 0), 2) << summary;  // provision, install_access
  EXPECT_EQ(summary.value("refused", -1), 0) << summary;
  EXPECT_EQ(summary["heartbeat_ack"]["count"], summary["heartbeats_acked"]) << summary;

  // Again, from the state folder alone: the same nodes, no enrolment (their tokens are used).
  auto again = start_fleet({}, "fleet-2.log");
  ASSERT_TRUE(wait_for([&] { return last_status(again->log()).value("connected", 0) == kAgents; }))
      << again->log();
  EXPECT_NE(again->log().find("\"enrolled\": 0"), std::string::npos) << again->log();
  EXPECT_EQ(again->stop(SIGINT), 0) << again->log();
  EXPECT_EQ(in_service(nodes), kAgents);
}

// A CI job books a GPU for now and waits for `active`: the rental moves as soon as its node's
// agent has provisioned it and installed its access, not at the worker's next interval. With
// no wake the rental would sit `scheduled` until the next run, a minute after the server's
// start, and then wait a minute per step.
TEST_F(FleetsimWakeE2E, ARentalThatStartsNowGoesActiveWithoutWaitingForTheLifecycleInterval) {
  std::unique_ptr<ChildProcess> fleet;
  auto nodes = enrolled_fleet(2, fleet);
  ASSERT_EQ(in_service(nodes), 2);
  Login owner = account("owner@example.com", "Acme");
  auto booked = book_now(owner, 1);
  ASSERT_EQ(booked.status, 201) << booked.body;
  std::string rental = booked.json()["id"];
  // Well within the minute: provision (300 ms in the simulator), then install_access.
  bool active = wait_for(
      [&] { return get("/v1/rentals/" + rental, session(owner)).json()["state"] == "active"; },
      std::chrono::seconds(30), std::chrono::milliseconds(200));
  ASSERT_TRUE(active) << get("/v1/rentals/" + rental, session(owner)).body << "\n" << fleet->log();
  EXPECT_EQ(fleet->stop(SIGTERM), 0) << fleet->log();
}

}  // namespace gpurent::testing::fleetsim_e2e
