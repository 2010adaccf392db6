// The rental lifecycle end to end: a rental booked through the API is provisioned, becomes
// active, is released and ends, driven by the test clock, the test-only lifecycle run and
// agent task reports made through the test routes, with every move in its events.
#include "tests/support/rental_fleet_fixture.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <string>
#include <vector>

namespace gpurent::testing::lifecycle_rentals_e2e {

using nlohmann::json;

class LifecycleRentalsE2E : public RentalFleetTest {
 protected:
  void SetUp() override {
    // The worker's own thread runs once at start and then not for a minute of real time,
    // longer than this test takes, so every move below is the test's own run at the test
    // clock's now. The worker looks at a rental waiting on its tasks again one interval
    // after the last look, so the test clock moves past that before each check.
    server_ = std::make_unique<ServerProcess>(
        ServerOptions{.database_url = db_.url(),
                      .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0",
                                "--lifecycle_interval=60s"}});
    seed_fleet({2});
    node_id_ = add_node("gpu-1");
  }

  std::string state_of(const Login& owner, const std::string& id) {
    auto r = get("/v1/rentals/" + id, session(owner));
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json().value("state", "");
  }

  std::string node_id_;
};

TEST_F(LifecycleRentalsE2E, ABookedRentalWalksFromScheduledToEnded) {
  Login owner = account("owner@example.com", "Acme");
  auto booked = book_now(owner, 2);
  ASSERT_EQ(booked.status, 201) << booked.body;
  std::string id = booked.json()["id"];
  ASSERT_EQ(booked.json()["state"], "scheduled");

  advance(1);
  EXPECT_EQ(run_lifecycle(), 1);
  EXPECT_EQ(state_of(owner, id), "provisioning");
  // The provision first; install_access only once it has succeeded (its probe certificate is
  // made then, fresh).
  auto provisioning = tasks_of(id);
  ASSERT_EQ(provisioning.size(), 1u) << provisioning;
  EXPECT_EQ(provisioning[0]["kind"], "provision");
  EXPECT_EQ(provisioning[0]["node_id"], node_id_);
  EXPECT_EQ(provisioning[0]["payload"]["image_id"], image_id_);
  EXPECT_EQ(complete_queued(id), (std::vector<std::string>{"provision", "install_access"}));
  // A report repeated is refused: the agent runs each task once.
  auto again = post("/v1/test/tasks/" + provisioning[0]["id"].get<std::string>() + "/complete",
                    {{"ok", false}});
  EXPECT_EQ(again.status, 409) << again.body;

  advance(61);  // past the worker's next check
  EXPECT_EQ(run_lifecycle(), 1);
  EXPECT_EQ(state_of(owner, id), "active");

  advance(24 * 3600);                  // the rental's day is over
  owner = login("owner@example.com");  // a day idle ended the session
  EXPECT_EQ(run_lifecycle(), 1);
  EXPECT_EQ(state_of(owner, id), "releasing");
  EXPECT_EQ(complete_queued(id), (std::vector<std::string>{"revoke_access", "wipe"}));

  advance(61);
  EXPECT_EQ(run_lifecycle(), 1);
  EXPECT_EQ(state_of(owner, id), "ended");

  auto events = get("/v1/rentals/" + id + "/events", session(owner));
  ASSERT_EQ(events.status, 200) << events.body;
  std::vector<std::string> states;
  json items = events.json()["items"];
  for (const auto& e : items) states.push_back(e["to_state"]);
  EXPECT_EQ(states, (std::vector<std::string>{"scheduled", "provisioning", "active", "releasing",
                                              "ended"}));
}

// A node with a rental running on it cannot be retired: its customer would lose the GPUs
// mid-rental. Drained instead, it goes to maintenance when the rental has ended, and can
// then be retired.
TEST_F(LifecycleRentalsE2E, ANodeWithARunningRentalIsDrainedNotRetired) {
  Login owner = account("owner@example.com", "Acme");
  auto booked = book_now(owner, 2);
  ASSERT_EQ(booked.status, 201) << booked.body;
  std::string id = booked.json()["id"];
  advance(1);
  EXPECT_EQ(run_lifecycle(), 1);
  ASSERT_EQ(state_of(owner, id), "provisioning");

  std::string node = "/v1/admin/nodes/" + node_id_;
  auto refused = post(node + "/retire", {{"reason", "end of life"}}, session(admin_));
  ASSERT_EQ(refused.status, 409) << refused.body;
  EXPECT_EQ(refused.json()["error"]["code"], "invalid_state");
  EXPECT_EQ(refused.json()["error"]["details"]["running_rentals"], json::array({id}));
  EXPECT_EQ(get(node, session(admin_)).json()["state"], "available") << "nothing changed";

  auto drained = post(node + "/drain", {{"reason", "end of life"}}, session(admin_));
  ASSERT_EQ(drained.status, 200) << drained.body;
  complete_queued(id);
  advance(61);
  EXPECT_EQ(run_lifecycle(), 1);
  ASSERT_EQ(state_of(owner, id), "active");
  refused = post(node + "/retire", {{"reason", "end of life"}}, session(admin_));
  EXPECT_EQ(refused.status, 409) << "still running: " << refused.body;

  auto ended = post("/v1/rentals/" + id + "/terminate", json::object(), session(owner));
  ASSERT_EQ(ended.status, 200) << ended.body;
  // The worker asks for the wipe on its next look, and ends the rental once it is done.
  run_lifecycle();
  EXPECT_EQ(complete_queued(id), (std::vector<std::string>{"revoke_access", "wipe"}));
  advance(61);
  EXPECT_EQ(run_lifecycle(), 1);
  ASSERT_EQ(state_of(owner, id), "ended");
  EXPECT_EQ(get(node, session(admin_)).json()["state"], "maintenance");
  auto retired = post(node + "/retire", {{"reason", "end of life"}}, session(admin_));
  ASSERT_EQ(retired.status, 200) << retired.body;
  EXPECT_EQ(retired.json()["state"], "retired");
}

}  // namespace gpurent::testing::lifecycle_rentals_e2e
