// End-to-end tests with real `gpurent-agent` processes: a server for agents (its CA in a
// folder of the test's), the fleet's admin, site, image and prices, and nodes each enrolled
// and run by an agent of its own with the simulated backend (an HGX 8×H100) and a fault
// schedule.
#pragma once

#include "core/subprocess.h"
#include "tests/support/child_process.h"
#include "tests/support/paths.h"
#include "tests/support/rental_fleet_fixture.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace gpurent::testing {

class AgentFleetTest : public RentalFleetTest {
 protected:
  void SetUp() override {
    pki_dir_ = make_temp_dir("gpurent-agents-pki");
    work_ = make_temp_dir("gpurent-agents-run");
    server_ = agent_server(pki_dir_, false, burn_ins_);
    ASSERT_NE(server_->agent_port(), 0) << "the agent listener is on";
    seed_fleet({1, 2, 4, 8});
    url_ = "https://127.0.0.1:" + std::to_string(server_->agent_port());
  }

  void TearDown() override {
    agents_.clear();
    ApiTest::TearDown();
    std::filesystem::remove_all(pki_dir_);
    std::filesystem::remove_all(work_);
  }

  // A node made through the admin API, enrolled and run by its own agent (`faults` for its
  // simulated GPUs, empty for none), once in service: its id. The agent is agents_.back().
  std::string node_with_agent(const std::string& name, const std::string& faults = "") {
    auto [node_id, token] = create_enrolling_node(name);
    std::string dir = work_ + "/" + name;
    std::filesystem::create_directories(dir);
    auto enrolled = run_subprocess({agent_path(), "enroll", "--url", url_, "--token", token,
                                    "--ca-file", pki_dir_ + "/ca.crt", "--state-dir",
                                    dir + "/state", "--log-format", "text"});
    EXPECT_EQ(enrolled.exit_code, 0) << enrolled.output;
    std::vector<std::string> extra;
    if (!faults.empty()) extra = {"--faults", faults};
    agents_.push_back(std::make_unique<ChildProcess>(agent_path(),
                                                     simulated_agent_run(url_, dir, "200ms", extra),
                                                     std::filesystem::path(dir) / "agent.log"));
    bool up = wait_for([&] {
      nlohmann::json n = node_view(node_id);
      return n["state"] == "available" && n["health"] == "ok";
    });
    EXPECT_TRUE(up) << node_view(node_id).dump() << "\n" << agents_.back()->log();
    return node_id;
  }

  // `gpus` H100s booked from now by `owner` and driven to active: the rental's id.
  std::string active_rental(const Login& owner, int gpus) {
    auto booked = book_now(owner, gpus);
    EXPECT_EQ(booked.status, 201) << booked.body;
    std::string id = booked.json().value("id", "");
    EXPECT_TRUE(drive_until(owner, id, "active"))
        << get("/v1/rentals/" + id + "/events", session(owner)).body;
    return id;
  }

  bool burn_ins_ = false;  // set in a subclass's constructor: handovers wait for burn-ins
  std::string pki_dir_;
  std::string work_;
  std::string url_;
  std::vector<std::unique_ptr<ChildProcess>> agents_;
};

}  // namespace gpurent::testing
