// An admin's power actions through the API and a node's BMC (bmc/node_power.h), against the
// Redfish responder the tests start over HTTPS with its certificate pinned: the settings are
// kept with the password sealed and never shown, a node that rents is refused, a node in
// maintenance is reset through the BMC, wrong credentials and a wrong certificate are a 409
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
