// An admin's power actions through the API and a node's BMC (bmc/node_power.h), against the
// Redfish responder the tests start over HTTPS with its certificate pinned: the settings are
// kept with the password sealed and never shown, a node that rents is refused, a node in
// maintenance is reset through the BMC, a node serving an active rental may be restarted (and
// the rental checked again), wrong credentials and a wrong certificate are a 409
// naming the kind, a hung BMC a 503, and customers are refused.
#include "tests/support/redfish_responder.h"
#include "tests/support/rental_fleet_fixture.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

namespace gpurent::testing::bmc_e2e {

using nlohmann::json;

constexpr const char* kKey = "bmc-secret-key-of-at-least-32-characters";

class BmcE2E : public RentalFleetTest {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(
        ServerOptions{.database_url = db_.url(),
                      .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0",
                                "--lifecycle_interval=60s", "--bmc_timeout=2s"},
                      .env = {{"GPURENT_BMC_SECRET_KEY", kKey}}});
    seed_fleet({8});
  }

  json settings(const std::string& password, const std::string& fingerprint) {
    return {{"url", bmc_.base_url()},
            {"username", "admin"},
            {"password", password},
            {"system_id", "node-7"},
            {"pinned_sha256", fingerprint}};
  }

  HttpResult power(const std::string& node, const std::string& action, const Login& who) {
    return post("/v1/admin/nodes/" + node + "/power", {{"action", action}}, session(who));
  }

  RedfishResponder bmc_{{.tls = true}};
};

TEST_F(BmcE2E, AnAdminResetsANodeInMaintenanceThroughItsBmc) {
  std::string node = add_node("gpu-1");
  auto set = put("/v1/admin/nodes/" + node + "/bmc",
                 settings("responder-secret", bmc_.certificate_fingerprint()), session(admin_));
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_EQ(set.json()["url"], bmc_.base_url());
  EXPECT_EQ(set.body.find("responder-secret"), std::string::npos) << "never shown";
  auto shown = get("/v1/admin/nodes/" + node + "/bmc", session(admin_));
  ASSERT_EQ(shown.status, 200) << shown.body;
  EXPECT_EQ(shown.json()["pinned_sha256"], bmc_.certificate_fingerprint());
  EXPECT_FALSE(shown.json().contains("password"));
  // Sealed in the database: the password's bytes are not there.
  pqxx::connection c(db_.url());
  pqxx::nontransaction q(c);
  EXPECT_EQ(q.exec1("SELECT count(*) FROM node_bmcs WHERE password_sealed LIKE '%responder%'")[0]
                .as<int>(),
            0);

  // Available, so it may rent: refused, and the BMC never asked.
  auto refused = power(node, "off", admin_);
  EXPECT_EQ(refused.status, 409) << refused.body;
  EXPECT_EQ(refused.json()["error"]["code"], "invalid_state");
  EXPECT_TRUE(bmc_.accepted_resets().empty());

  auto maint =
      post("/v1/admin/nodes/" + node + "/maintenance", {{"reason", "PSU"}}, session(admin_));
  ASSERT_EQ(maint.status, 200) << maint.body;
  auto off = power(node, "off", admin_);
  ASSERT_EQ(off.status, 200) << off.body;
  EXPECT_EQ(off.json()["reset_type"], "ForceOff");
  EXPECT_EQ(off.json()["power_state"], "Off");
  auto on = power(node, "on", admin_);
  ASSERT_EQ(on.status, 200) << on.body;
  EXPECT_EQ(on.json()["power_state"], "On");
  EXPECT_EQ(bmc_.accepted_resets(), (std::vector<std::string>{"ForceOff", "On"}));
  EXPECT_EQ(power(node, "explode", admin_).status, 400);

  // Customers see none of it.
  Login owner = account("owner@example.com", "Acme");
  EXPECT_EQ(power(node, "off", owner).status, 403);
  EXPECT_EQ(get("/v1/admin/nodes/" + node + "/bmc", session(owner)).status, 403);
}

// A hung node's tenant needs a reset (brev-cli#448): an admin may restart a node that serves
// an active rental through its BMC, whatever its state — never cut its power — and the rental
// is handed over in place: provisioning until the agent has checked the access again, then
// active, the minutes credited.
TEST_F(BmcE2E, ARestartOfANodeServingARentalChecksItsAccessAgainBeforeItIsActive) {
  std::string node = add_node("gpu-1");
  ASSERT_EQ(put("/v1/admin/nodes/" + node + "/bmc",
                settings("responder-secret", bmc_.certificate_fingerprint()), session(admin_))
                .status,
            200);
  Login owner = account("owner@example.com", "Acme");
  auto booked = book_now(owner, 8);
  ASSERT_EQ(booked.status, 201) << booked.body;
  std::string id = booked.json()["id"];
  advance(1);
  run_lifecycle();
  complete_queued(id);
  advance(61);
  run_lifecycle();
  ASSERT_EQ(get("/v1/rentals/" + id, session(owner)).json()["state"], "active");

  auto off = power(node, "off", admin_);
  EXPECT_EQ(off.status, 409) << off.body;
  EXPECT_EQ(off.json()["error"]["code"], "invalid_state");
  EXPECT_TRUE(bmc_.accepted_resets().empty());

  auto restarted = power(node, "force_restart", admin_);
  ASSERT_EQ(restarted.status, 200) << restarted.body;
  EXPECT_EQ(bmc_.accepted_resets(), (std::vector<std::string>{"ForceRestart"}));
  EXPECT_EQ(get("/v1/rentals/" + id, session(owner)).json()["state"], "provisioning");
  // Only the access check: the node kept its image.
  advance(180);
  EXPECT_EQ(complete_queued(id), (std::vector<std::string>{"install_access"}));
  advance(61);
  run_lifecycle();
  EXPECT_EQ(get("/v1/rentals/" + id, session(owner)).json()["state"], "active");
  json handovers = get("/v1/rentals/" + id + "/handovers", session(owner)).json()["items"];
  ASSERT_EQ(handovers.size(), 1u) << handovers;
  EXPECT_EQ(handovers[0]["cause"], "power");
  EXPECT_EQ(handovers[0]["from_node_id"], node);
  EXPECT_EQ(handovers[0]["to_node_id"], node);
  EXPECT_EQ(handovers[0]["outcome"], "active");
  EXPECT_GT(handovers[0]["credited_minor"].get<long long>(), 0) << handovers;
}

TEST_F(BmcE2E, WrongCredentialsAWrongCertificateAndAHungBmcAreNamed) {
  std::string node = add_node("gpu-1");
  ASSERT_EQ(
      post("/v1/admin/nodes/" + node + "/maintenance", {{"reason", "PSU"}}, session(admin_)).status,
      200);
  auto put_settings = [&](const std::string& password, const std::string& fingerprint) {
    auto r =
        put("/v1/admin/nodes/" + node + "/bmc", settings(password, fingerprint), session(admin_));
    ASSERT_EQ(r.status, 200) << r.body;
  };
  put_settings("wrong-password", bmc_.certificate_fingerprint());
  auto auth = power(node, "cycle", admin_);
  EXPECT_EQ(auth.status, 409) << auth.body;
  EXPECT_EQ(auth.json()["error"]["details"]["bmc_failure"], "auth");
  EXPECT_EQ(auth.body.find("wrong-password"), std::string::npos);

  put_settings("responder-secret", std::string(64, 'a'));
  auto untrusted = power(node, "cycle", admin_);
  EXPECT_EQ(untrusted.status, 409) << untrusted.body;
  EXPECT_EQ(untrusted.json()["error"]["details"]["bmc_failure"], "untrusted");

  put_settings("responder-secret", bmc_.certificate_fingerprint());
  bmc_.delay_answers(std::chrono::seconds(4));
  auto hung = power(node, "cycle", admin_);
  EXPECT_EQ(hung.status, 503) << hung.body;
  EXPECT_EQ(hung.json()["error"]["details"]["bmc_failure"], "timeout");
  bmc_.delay_answers(std::chrono::milliseconds(0));
  EXPECT_TRUE(bmc_.accepted_resets().empty());

  auto bad = put("/v1/admin/nodes/" + node + "/bmc",
                 {{"url", "ftp://bmc"}, {"username", "admin"}, {"password", "x"}}, session(admin_));
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(bad.json()["error"]["details"]["field"], "url");
}

}  // namespace gpurent::testing::bmc_e2e
