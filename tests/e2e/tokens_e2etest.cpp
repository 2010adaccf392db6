// API tokens end to end: shown once, hashed, scoped, revoked and expired at once.
#include "tests/support/access_log.h"
#include "tests/support/http_client.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <algorithm>
#include <sstream>
#include <vector>

namespace gpurent::testing::tokens_e2e {

using Headers = std::map<std::string, std::string>;

class TokensE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(ServerOptions{.database_url = db_.url()});
    session_ = login_new("owner@example.com", "Acme");
  }
  int port() { return server_->port(); }

  Headers login_new(const std::string& email, const std::string& org) {
    auto s = http_request(
        port(), "POST", "/v1/auth/signup",
        nlohmann::json{{"email", email}, {"password", "a good passphrase"}, {"org_name", org}}
            .dump(),
        {{"Content-Type", "application/json"}});
    EXPECT_EQ(s.status, 201) << s.body;
    auto l =
        http_request(port(), "POST", "/v1/auth/login",
                     nlohmann::json{{"email", email}, {"password", "a good passphrase"}}.dump(),
                     {{"Content-Type", "application/json"}});
    std::string cookie = l.header("set-cookie");
    return {{"Cookie", cookie.substr(0, cookie.find(';'))},
            {"X-CSRF-Token", l.json()["csrf_token"]},
            {"Content-Type", "application/json"}};
  }
  HttpResult create(const Headers& auth, const nlohmann::json& body) {
    Headers h = auth;
    h["Content-Type"] = "application/json";
    return http_request(port(), "POST", "/v1/api-tokens", body.dump(), h);
  }
  std::string new_token(const std::vector<std::string>& scopes, const nlohmann::json& extra = {}) {
    nlohmann::json body = {{"name", "ci"}, {"scopes", scopes}};
    for (auto& [k, v] : extra.items()) body[k] = v;
    auto r = create(session_, body);
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json().value("token", "");
  }
  static Headers bearer(const std::string& token) { return {{"Authorization", "Bearer " + token}}; }
  long long count(const std::string& sql) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx.exec(sql)[0][0].as<long long>();
  }

  TestDatabase db_;
  std::unique_ptr<ServerProcess> server_;
  Headers session_;
};

TEST_F(TokensE2E, TokenIsShownOnceAndListedWithoutItsSecret) {
  auto r = create(session_, {{"name", "ci pipeline"},
                             {"scopes", {"rentals:read", "rentals:write"}},
                             {"expires_in_days", 30}});
  ASSERT_EQ(r.status, 201) << r.body;
  std::string token = r.json()["token"];
  EXPECT_EQ(token.rfind("gpr_", 0), 0u);
  EXPECT_EQ(token.size(), 4u + 64u) << "gpr_ + 256 bits as hex";
  EXPECT_EQ(r.json()["prefix"], token.substr(0, 12));
  EXPECT_EQ(r.json()["id"].get<std::string>().rfind("tok_", 0), 0u);
  EXPECT_FALSE(r.json()["expires_at"].is_null());
  auto list = http_request(port(), "GET", "/v1/api-tokens", "", session_);
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(list.json()["items"].size(), 1u);
  EXPECT_EQ(list.body.find(token), std::string::npos) << "the secret is never shown again";
  EXPECT_FALSE(list.json()["items"][0].contains("token"));
}

TEST_F(TokensE2E, BearerTokenActsForItsOrgWithItsScopesOnly) {
  std::string token = new_token({"rentals:read"});
  auto me = http_request(port(), "GET", "/v1/me", "", bearer(token));
  ASSERT_EQ(me.status, 200) << me.body;
  EXPECT_EQ(me.json()["scopes"], nlohmann::json::array({"rentals:read"}));
  EXPECT_EQ(me.json()["role"], "owner");
  // Without tokens:write it cannot manage tokens, though its owner could.
  auto r = create(bearer(token), {{"name", "x"}, {"scopes", {"rentals:read"}}});
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.json()["error"]["code"], "forbidden");
}

TEST_F(TokensE2E, BearerRequestsNeedNoCsrfButCannotEscalate) {
  std::string token = new_token({"tokens:write", "rentals:read"});
  auto ok = create(bearer(token), {{"name", "child"}, {"scopes", {"rentals:read"}}});
  EXPECT_EQ(ok.status, 201) << ok.body;
  long long tokens_before = count("SELECT count(*) FROM api_tokens");
  EXPECT_EQ(tokens_before, 2);
  auto stronger =
      create(bearer(token), {{"name", "stronger"}, {"scopes", {"rentals:read", "billing:read"}}});
  EXPECT_EQ(stronger.status, 403) << "a token cannot mint a token stronger than itself";
  EXPECT_EQ(stronger.json()["error"]["code"], "forbidden") << stronger.body;
  EXPECT_EQ(stronger.json()["error"]["details"]["scope"], "billing:read") << stronger.body;
  EXPECT_EQ(count("SELECT count(*) FROM api_tokens"), tokens_before) << "no token row was written";
  EXPECT_EQ(count("SELECT count(*) FROM api_tokens WHERE name = 'stronger'"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'token.create'"), 2)
      << "only the two tokens made are audited";
}

TEST_F(TokensE2E, RevocationTakesEffectOnTheNextRequest) {
  auto r = create(session_, {{"name", "short-lived"}, {"scopes", {"rentals:read"}}});
  std::string token = r.json()["token"], id = r.json()["id"];
  EXPECT_EQ(http_request(port(), "GET", "/v1/me", "", bearer(token)).status, 200);
  Headers h = session_;
  EXPECT_EQ(http_request(port(), "DELETE", "/v1/api-tokens/" + id, "", h).status, 204);
  auto after = http_request(port(), "GET", "/v1/me", "", bearer(token));
  EXPECT_EQ(after.status, 401);
  EXPECT_EQ(after.json()["error"]["code"], "unauthenticated");
  EXPECT_EQ(http_request(port(), "DELETE", "/v1/api-tokens/" + id, "", h).status, 404);
}

TEST_F(TokensE2E, ExpiredTokenIs401AtOnce) {
  std::string token = new_token({"rentals:read"}, {{"expires_in_days", 1}});
  EXPECT_EQ(http_request(port(), "GET", "/v1/me", "", bearer(token)).status, 200);
  auto clock = http_request(port(), "POST", "/v1/admin/test-clock", R"({"advance_seconds": 90000})",
                            {{"Content-Type", "application/json"}});
  ASSERT_EQ(clock.status, 200);
  EXPECT_EQ(http_request(port(), "GET", "/v1/me", "", bearer(token)).status, 401);
}

// Uses are written behind, off the request path (api/credential_cache.h): the first one
// within the write-behind period, about a second.
TEST_F(TokensE2E, LastUseIsRecorded) {
  auto r = create(session_, {{"name", "used"}, {"scopes", {"rentals:read"}}});
  EXPECT_TRUE(r.json()["last_used_at"].is_null());
  ASSERT_EQ(http_request(port(), "GET", "/v1/me", "", bearer(r.json()["token"])).status, 200);
  EXPECT_TRUE(wait_for([&] {
    auto list = http_request(port(), "GET", "/v1/api-tokens", "", session_);
    return !list.json()["items"][0]["last_used_at"].is_null();
  }));
}

TEST_F(TokensE2E, AnotherTenantCannotSeeOrRevokeTheToken) {
  auto r = create(session_, {{"name", "mine"}, {"scopes", {"rentals:read"}}});
  std::string token = r.json()["token"], id = r.json()["id"];
  Headers other = login_new("other@example.com", "Other");
  EXPECT_EQ(http_request(port(), "DELETE", "/v1/api-tokens/" + id, "", other).status, 404);
  auto list = http_request(port(), "GET", "/v1/api-tokens", "", other);
  EXPECT_EQ(list.json()["items"].size(), 0u);
  EXPECT_EQ(http_request(port(), "GET", "/v1/me", "", bearer(token)).status, 200)
      << "the token survives the other tenant's attempt";
}

TEST_F(TokensE2E, MalformedOrUnknownCredentialsAre401) {
  for (const std::string& value : std::vector<std::string>{
           "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Bearer gpr_short",
           "Bearer gpr_" + std::string(64, '0'), "bearer gpr_" + std::string(64, '0')}) {
    auto r = http_request(port(), "GET", "/v1/me", "", {{"Authorization", value}});
    EXPECT_EQ(r.status, 401) << value;
  }
}

TEST_F(TokensE2E, HostileCreateInputIs400NamingTheField) {
  struct Case {
    nlohmann::json body;
    std::string field;
  };
  std::vector<Case> cases = {
      {{{"scopes", {"rentals:read"}}}, "name"},
      {{{"name", ""}, {"scopes", {"rentals:read"}}}, "name"},
      {{{"name", std::string(300, 'n')}, {"scopes", {"rentals:read"}}}, "name"},
      {{{"name", "x"}}, "scopes"},
      {{{"name", "x"}, {"scopes", "rentals:read"}}, "scopes"},
      {{{"name", "x"}, {"scopes", nlohmann::json::array()}}, "scopes"},
      {{{"name", "x"}, {"scopes", {"root"}}}, "scopes"},
      {{{"name", "x"}, {"scopes", {"rentals:read'; DROP TABLE api_tokens; --"}}}, "scopes"},
      {{{"name", "x"}, {"scopes", {"rentals:read"}}, {"expires_in_days", 0}}, "expires_in_days"},
      {{{"name", "x"}, {"scopes", {"rentals:read"}}, {"expires_in_days", "7"}}, "expires_in_days"},
      {{{"name", "x"}, {"scopes", {"rentals:read"}}, {"expires_in_days", 1.5}}, "expires_in_days"},
      {{{"name", "x"}, {"scopes", {"rentals:read"}}, {"max_days", -1}}, "max_days"},
      {{{"name", "x"}, {"scopes", {"rentals:read"}}, {"spend_limit", 100}}, "spend_limit"},
      {{{"name", "x"},
        {"scopes", {"rentals:read"}},
        {"spend_limit", {{"amount_minor", 1.5}, {"currency", "RUB"}}}},
       "spend_limit.amount_minor"},
      {{{"name", "x"}, {"scopes", {"rentals:read"}}, {"admin", true}}, "admin"},
  };
  for (const auto& c : cases) {
    auto r = create(session_, c.body);
    EXPECT_EQ(r.status, 400) << c.body.dump() << " → " << r.body;
    EXPECT_EQ(r.json()["error"]["details"]["field"], c.field) << c.body.dump();
  }
  auto guarded =
      create(session_, {{"name", "guarded ✓"},
                        {"scopes", {"rentals:write"}},
                        {"max_concurrent_gpus", 8},
                        {"max_days", 3},
                        {"spend_limit", {{"amount_minor", 5000000}, {"currency", "RUB"}}}});
  ASSERT_EQ(guarded.status, 201) << guarded.body;
  EXPECT_EQ(guarded.json()["max_concurrent_gpus"], 8);
  EXPECT_EQ(guarded.json()["spend_limit_minor"], 5000000);
}

TEST_F(TokensE2E, TokensNeverReachTheLogs) {
  auto created = create(session_, {{"name", "ci"}, {"scopes", {"rentals:read"}}});
  ASSERT_EQ(created.status, 201) << created.body;
  std::string token = created.json()["token"];
  std::string unknown = "gpr_" + std::string(64, 'e');
  auto used = http_request(port(), "GET", "/v1/me", "", bearer(token));
  EXPECT_EQ(used.status, 200);
  auto refused = http_request(port(), "GET", "/v1/me", "", bearer(unknown));
  EXPECT_EQ(refused.status, 401);
  // Scanned only once the log holds the access line of every request that carried a token,
  // so an empty or cut-short log cannot pass.
  std::vector<Sent> sent = {
      {"POST", "/v1/api-tokens", created}, {"GET", "/v1/me", used}, {"GET", "/v1/me", refused}};
  ASSERT_TRUE(wait_for([&] { return access_lines_logged(server_->logs(), sent); }))
      << server_->logs();
  std::string logs = server_->logs();
  EXPECT_EQ(logs.find(token.substr(4)), std::string::npos);
  EXPECT_EQ(logs.find(unknown.substr(4)), std::string::npos);
}

}  // namespace gpurent::testing::tokens_e2e
