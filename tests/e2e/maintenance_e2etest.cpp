// Maintenance windows through the API (POST/GET/DELETE /v1/admin/maintenance): a window five
// days ahead moves the rental booked on its node to the other node for the same period, the
// tenant sees the move in its events, no booking gets the node's GPUs in the window, and a
// cancelled window frees them; customers are refused, bad input is a 400 naming the field.
#include "core/time.h"
#include "tests/support/rental_fleet_fixture.h"

#include <gtest/gtest.h>

#include <set>

namespace gpurent::testing::maintenance_e2e {

using nlohmann::json;

class MaintenanceE2E : public RentalFleetTest {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(
        ServerOptions{.database_url = db_.url(),
                      .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0",
                                "--lifecycle_interval=60s"}});
    seed_fleet({8});
  }

  HttpResult del(const std::string& path, const Headers& headers) {
    return send("DELETE", path, "", headers);
  }

  // Eight GPUs for a day, five days from now: the answer.
  HttpResult book_day_five(const Login& owner) {
    return post("/v1/rentals",
                {{"gpu_model", kModel},
                 {"gpu_count", 8},
                 {"start", in_hours(24 * 5).substr(0, 10)},
                 {"days", 1},
                 {"image_id", image_id_}},
                session(owner));
  }

  // An RFC 3339 time `hours` from the server's clock (the test clock starts at now).
  std::string in_hours(int hours) {
    return gpurent::format_rfc3339(std::chrono::time_point_cast<std::chrono::seconds>(
        std::chrono::system_clock::now() + std::chrono::hours(hours)));
  }
};

TEST_F(MaintenanceE2E, AWindowMovesTheRentalInItsWayAndHoldsTheNode) {
  std::string n1 = add_node("gpu-1");
  Login owner = account("owner@example.com", "Acme");
  auto booked = book_day_five(owner);
  ASSERT_EQ(booked.status, 201) << booked.body;
  std::string rental = booked.json()["id"];
  auto subscribed =
      post("/v1/webhooks", {{"url", "https://hooks.example.com/in"}, {"events", {"rental.notice"}}},
           session(owner));
  ASSERT_EQ(subscribed.status, 201) << subscribed.body;
  std::string hook = subscribed.json()["id"];
  ASSERT_EQ(booked.json()["node_id"], n1);
  json window = {{"node_ids", {n1}},
                 {"start", in_hours(24 * 4)},
                 {"end", in_hours(24 * 8)},
                 {"reason", "replace a PSU"}};

  // With nowhere else to go, and less than the 72 hours' notice its tenant is owed, the plan
  // is refused and names the rental (with the notice, it would stay and be told:
  // tests/e2e/tenant_notice_e2etest.cpp).
  json soon = window;
  soon["start"] = in_hours(48);
  auto refused = post("/v1/admin/maintenance", soon, session(admin_));
  ASSERT_EQ(refused.status, 409) << refused.body;
  EXPECT_EQ(refused.json()["error"]["details"]["rentals"][0]["id"], rental);
  EXPECT_EQ(refused.json()["error"]["details"]["notice_hours"], 72);
  EXPECT_EQ(get("/v1/rentals/" + rental, session(owner)).json()["node_id"], n1);

  std::string n2 = add_node("gpu-2");
  auto planned = post("/v1/admin/maintenance", window, session(admin_));
  ASSERT_EQ(planned.status, 201) << planned.body;
  ASSERT_EQ(planned.json()["items"].size(), 1u);
  std::string id = planned.json()["items"][0]["id"];
  EXPECT_EQ(planned.json()["moved"],
            json::array({{{"rental_id", rental}, {"from_node_id", n1}, {"to_node_id", n2}}}));
  json moved = get("/v1/rentals/" + rental, session(owner)).json();
  EXPECT_EQ(moved["node_id"], n2);
  EXPECT_EQ(moved["state"], "scheduled");
  json events = get("/v1/rentals/" + rental + "/events", session(owner)).json();
  EXPECT_NE(events["items"].back()["reason"].get<std::string>().find("maintenance"),
            std::string::npos)
      << events.dump();

  // The tenant is told: a notice of the move, for its own rental only.
  auto notices = get("/v1/notices", session(owner));
  ASSERT_EQ(notices.status, 200) << notices.body;
  ASSERT_EQ(notices.json()["items"].size(), 1u) << notices.body;
  EXPECT_EQ(notices.json()["items"][0]["kind"], "moved");
  EXPECT_EQ(notices.json()["items"][0]["rental_id"], rental);
  EXPECT_EQ(notices.json()["items"][0]["maintenance_id"], id);
  EXPECT_EQ(get("/v1/rentals/" + rental + "/notices", session(owner)).json()["items"],
            notices.json()["items"]);
  Login stranger = account("stranger@example.com", "Other");
  EXPECT_EQ(get("/v1/rentals/" + rental + "/notices", session(stranger)).status, 404);
  EXPECT_TRUE(get("/v1/notices", session(stranger)).json()["items"].empty());
  // And the org's webhook got rental.notice.
  auto deliveries = get("/v1/webhooks/" + hook + "/deliveries", session(owner));
  ASSERT_EQ(deliveries.status, 200) << deliveries.body;
  bool sent = false;
  json sent_items = deliveries.json()["items"];
  for (const auto& d : sent_items) sent = sent || d["event_type"] == "rental.notice";
  EXPECT_TRUE(sent) << deliveries.body;

  // The node's GPUs are taken in the window: a booking then gets none (only n2's, now taken).
  auto during = book_day_five(owner);
  EXPECT_EQ(during.status, 409) << during.body;

  auto listed = get("/v1/admin/maintenance?node_id=" + n1, session(admin_));
  ASSERT_EQ(listed.status, 200) << listed.body;
  ASSERT_EQ(listed.json()["items"].size(), 1u);
  EXPECT_EQ(listed.json()["items"][0]["reason"], "replace a PSU");
  EXPECT_EQ(listed.json()["items"][0]["created_by"], admin_.user_id);

  // Customers may not see or plan windows.
  EXPECT_EQ(get("/v1/admin/maintenance", session(owner)).status, 403);
  EXPECT_EQ(post("/v1/admin/maintenance", window, session(owner)).status, 403);

  // Cancelled: the GPUs are free again; twice is a 409.
  auto cancelled = del("/v1/admin/maintenance/" + id, session(admin_));
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_TRUE(cancelled.json()["cancelled_at"].is_string());
  EXPECT_EQ(del("/v1/admin/maintenance/" + id, session(admin_)).status, 409);
  EXPECT_EQ(del("/v1/admin/maintenance/mnt_nothing", session(admin_)).status, 404);
  auto after = book_day_five(owner);
  EXPECT_EQ(after.status, 201) << after.body;
  EXPECT_EQ(after.json()["node_id"], n1);
}

TEST_F(MaintenanceE2E, BadPlansAreNamed) {
  std::string n1 = add_node("gpu-1");
  for (auto [body, field] : std::vector<std::pair<json, std::string>>{
           {{{"node_ids", json::array()},
             {"start", in_hours(1)},
             {"end", in_hours(2)},
             {"reason", "x"}},
            "node_ids"},
           {{{"node_ids", {n1}}, {"start", in_hours(2)}, {"end", in_hours(1)}, {"reason", "x"}},
            "end"},
           {{{"node_ids", {n1}}, {"start", "soon"}, {"end", in_hours(1)}, {"reason", "x"}},
            "start"},
           {{{"node_ids", {n1}}, {"start", in_hours(1)}, {"end", in_hours(2)}}, "reason"},
           {{{"node_ids", {n1}},
             {"site_id", site_id_},
             {"start", in_hours(1)},
             {"end", in_hours(2)},
             {"reason", "x"}},
            "site_id"},
       }) {
    auto r = post("/v1/admin/maintenance", body, session(admin_));
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.json()["error"]["details"]["field"], field) << r.body;
  }
  auto unknown = post("/v1/admin/maintenance",
                      {{"node_ids", {"nod_missing"}},
                       {"start", in_hours(1)},
                       {"end", in_hours(2)},
                       {"reason", "x"}},
                      session(admin_));
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  auto no_site = post(
      "/v1/admin/maintenance",
      {{"site_id", "sit_missing"}, {"start", in_hours(1)}, {"end", in_hours(2)}, {"reason", "x"}},
      session(admin_));
  EXPECT_EQ(no_site.status, 404) << no_site.body;

  // A whole site: one window per node of it.
  std::string n2 = add_node("gpu-2");
  auto site = post("/v1/admin/maintenance",
                   {{"site_id", site_id_},
                    {"start", in_hours(1)},
                    {"end", in_hours(2)},
                    {"reason", "site power"}},
                   session(admin_));
  ASSERT_EQ(site.status, 201) << site.body;
  std::set<std::string> nodes;
  json windows = site.json()["items"];
  for (const auto& w : windows) nodes.insert(w["node_id"].get<std::string>());
  EXPECT_EQ(nodes, (std::set<std::string>{n1, n2}));
}

}  // namespace gpurent::testing::maintenance_e2e
