// The starting point of end-to-end rental tests: a platform admin, a site, an image and a
// price list set up through the admin API, and 8-GPU H100 nodes that take rentals.
#pragma once

#include "tests/support/api_fixture.h"

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace gpurent::testing {

class RentalFleetTest : public ApiTest {
 protected:
  static constexpr const char* kModel = "H100-SXM5-80GB";

  // Customers have money enough for any booking of these tests.
  RentalFleetTest() { fund_new_orgs_minor_ = kAmpleFunds; }

  // A server for real agent processes, its agents' CA in `pki_dir`: the lifecycle runs when a
  // test asks (the test clock jumps a minute at a time), and heartbeats, which come in real
  // time, never count as silence within a test. `wake`: a booking that starts now and an
  // agent's task report also start a run, as in production (the interval stays a minute).
  // `burn_ins`: a rental's handover waits for its node's burn-in, as in production.
  std::unique_ptr<ServerProcess> agent_server(const std::string& pki_dir, bool wake = false,
                                              bool burn_ins = false) {
    return std::make_unique<ServerProcess>(
        ServerOptions{.database_url = db_.url(),
                      .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0",
                                "--lifecycle_interval=60s", "--agent_pki_dir=" + pki_dir,
                                "--agent_silence_limit=24h"},
                      .lifecycle_wake = wake,
                      .burn_ins = burn_ins});
  }

  // After the server is up: the admin, the site (Moscow time), a CUDA 12.4 image and a
  // price of 100,000 minor units per GPU a day for each of `counts` GPUs.
  void seed_fleet(std::initializer_list<int> counts) {
    admin_ = platform_admin();
    auto site = post("/v1/admin/sites",
                     {{"name", "Test DC"}, {"region", "test"}, {"timezone", "Europe/Moscow"}},
                     session(admin_));
    ASSERT_EQ(site.status, 201) << site.body;
    site_id_ = site.json()["id"];
    auto image = post("/v1/admin/images",
                      {{"name", "ubuntu-cuda-12.4"},
                       {"os", "Ubuntu 22.04"},
                       {"driver_version", "550.54.15"},
                       {"cuda_version", "12.4"}},
                      session(admin_));
    ASSERT_EQ(image.status, 201) << image.body;
    image_id_ = image.json()["id"];
    nlohmann::json prices = nlohmann::json::array();
    for (int count : counts) {
      prices.push_back(
          {{"gpu_model", kModel},
           {"gpu_count", count},
           {"price_per_day", {{"amount_minor", 100000 * count}, {"currency", "RUB"}}}});
    }
    auto priced = put("/v1/admin/prices", prices, session(admin_));
    ASSERT_EQ(priced.status, 200) << priced.body;
  }

  // Replaces the price list: {gpu_model, gpu_count, amount_minor} rows, in RUB.
  void set_prices(std::initializer_list<std::tuple<std::string, int, long long>> rows) {
    nlohmann::json prices = nlohmann::json::array();
    for (const auto& [model, count, amount] : rows) {
      prices.push_back({{"gpu_model", model},
                        {"gpu_count", count},
                        {"price_per_day", {{"amount_minor", amount}, {"currency", "RUB"}}}});
    }
    auto priced = put("/v1/admin/prices", prices, session(admin_));
    ASSERT_EQ(priced.status, 200) << priced.body;
  }

  // A node (by default an 8-GPU H100) that takes rentals. Until the agent capability lands,
  // its enrolment and first healthy heartbeat are written as the agent's would be.
  std::string add_node(const std::string& hostname, const std::string& model = kModel,
                       int gpus = 8) {
    auto r = post(
        "/v1/admin/nodes",
        {{"site_id", site_id_}, {"hostname", hostname}, {"gpu_model", model}, {"gpu_count", gpus}},
        session(admin_));
    EXPECT_EQ(r.status, 201) << r.body;
    std::string id = r.json()["node"]["id"];
    sql("UPDATE nodes SET state = 'available', health = 'ok' WHERE id = '" + id + "'");
    return id;
  }

  // A node an admin has just created, still enrolling: its id and single-use enrolment token.
  std::pair<std::string, std::string> create_enrolling_node(const std::string& hostname) {
    auto r = post(
        "/v1/admin/nodes",
        {{"site_id", site_id_}, {"hostname", hostname}, {"gpu_model", kModel}, {"gpu_count", 8}},
        session(admin_));
    EXPECT_EQ(r.status, 201) << r.body;
    return {r.json()["node"]["id"], r.json()["enrollment_token"]};
  }

  // The admin node view.
  nlohmann::json node_view(const std::string& id) {
    return get("/v1/admin/nodes/" + id, session(admin_)).json();
  }

  // `owner` books `gpus` H100s from now for a day: the answer.
  HttpResult book_now(const Login& owner, int gpus) {
    return post("/v1/rentals",
                {{"gpu_model", kModel},
                 {"gpu_count", gpus},
                 {"start", "now"},
                 {"days", 1},
                 {"image_id", image_id_}},
                session(owner));
  }

  // `public_key` registered for `owner`'s org, and two GPUs booked from now with it: the
  // rental's id ("" when refused).
  std::string book_with_key(const Login& owner, const std::string& public_key) {
    auto key =
        post("/v1/ssh-keys",
             {{"name", "laptop " + std::to_string(++keys_registered_)}, {"public_key", public_key}},
             session(owner));
    EXPECT_EQ(key.status, 201) << key.body;
    auto booked = post("/v1/rentals",
                       {{"gpu_model", kModel},
                        {"gpu_count", 2},
                        {"start", "now"},
                        {"days", 1},
                        {"image_id", image_id_},
                        {"ssh_key_ids", {key.json().value("id", "")}}},
                       session(owner));
    EXPECT_EQ(booked.status, 201) << booked.body;
    return booked.json().value("id", "");
  }

  // For rentals served by real agents, whose tasks take real time: moves the test clock a
  // worker's poll interval at a time, running the worker, until the rental is in `state`.
  bool drive_until(const Login& owner, const std::string& rental, const std::string& state) {
    advance(1);  // the start ("now") is reached
    run_lifecycle();
    return wait_for(
        [&] {
          advance(61);
          run_lifecycle();
          return get("/v1/rentals/" + rental, session(owner)).json()["state"] == state;
        },
        std::chrono::seconds(60), std::chrono::milliseconds(300));
  }

  // The rental's agent tasks, as the test-only route lists them.
  nlohmann::json tasks_of(const std::string& id) {
    auto r = get("/v1/test/rentals/" + id + "/tasks", {});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()["items"];
  }

  // Reports every queued task of the rental as succeeded, as an agent would, until none is
  // queued (install_access is made once provision has succeeded); their kinds, in order.
  std::vector<std::string> complete_queued(const std::string& id) {
    std::vector<std::string> kinds;
    for (int round = 0; round < 5; ++round) {
      bool any = false;
      for (const auto& t : tasks_of(id)) {
        if (t["state"] != "queued") continue;
        auto r = post("/v1/test/tasks/" + t["id"].get<std::string>() + "/complete",
                      {{"ok", true}, {"message", "done"}});
        EXPECT_EQ(r.status, 200) << r.body;
        EXPECT_EQ(r.json()["state"], "succeeded");
        kinds.push_back(t["kind"]);
        any = true;
      }
      if (!any) break;
    }
    return kinds;
  }

  // `gpurent-agent run` for a simulated HGX 8xH100 node against `url`, its state in
  // `dir`/state and its access files in `dir`/access, heartbeats every second; `extra` flags
  // after.
  static std::vector<std::string> simulated_agent_run(const std::string& url,
                                                      const std::string& dir,
                                                      const std::string& provision_delay,
                                                      const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"run",
                                  "--url",
                                  url,
                                  "--state-dir",
                                  dir + "/state",
                                  "--backend",
                                  "simulated",
                                  "--gpus",
                                  "8",
                                  "--model",
                                  "NVIDIA H100 80GB HBM3",
                                  "--topology",
                                  "nvswitch",
                                  "--heartbeat",
                                  "1s",
                                  "--provision-delay",
                                  provision_delay,
                                  "--access-root",
                                  dir + "/access",
                                  "--log-format",
                                  "text"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // The test clock moved on (test mode), and a lifecycle run at its now: how many rentals
  // the run moved.
  void advance(int seconds) {
    auto r = post("/v1/admin/test-clock", {{"advance_seconds", seconds}});
    ASSERT_EQ(r.status, 200) << r.body;
  }
  int run_lifecycle() {
    auto r = post("/v1/test/lifecycle/run", nlohmann::json::object());
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json().value("moved", -1);
  }

  void sql(const std::string& statement) {
    pqxx::connection c(db_.url());
    pqxx::work tx(c);
    tx.exec(statement);
    tx.commit();
  }

  Login admin_;
  int keys_registered_ = 0;
  std::string site_id_;
  std::string image_id_;
};

}  // namespace gpurent::testing
