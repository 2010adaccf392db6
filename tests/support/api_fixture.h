// The starting point of end-to-end tests that act as several kinds of caller: one gpurentd
// on a fresh database, and helpers to sign up, log in, become a platform admin, join an
// org with a role and create API tokens, all through the API.
#pragma once

#include "tests/support/contract_check.h"
#include "tests/support/funding.h"
#include "tests/support/http_client.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gpurent::testing {

using Headers = std::map<std::string, std::string>;

// A signed-in session and the org it acts for.
struct Login {
  std::string cookie;  // "gpurent_session=…"
  std::string csrf;
  std::string user_id;
  std::string org_id;
};

class ApiTest : public ::testing::Test {
 protected:
  static constexpr const char* kPassword = "a good passphrase";

  void SetUp() override {
    // Many requests per test: the rate limits are tested elsewhere.
    server_ = std::make_unique<ServerProcess>(
        ServerOptions{.database_url = db_.url(),
                      .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0"}});
    load_contract();
  }
  int port() { return server_->port(); }

  // Every response is checked against the document the server serves (contract_check.h):
  // a field the document does not name, a wrong type or a missing required field fails the
  // test that received it.
  HttpResult send(const std::string& method, const std::string& path, const std::string& body,
                  Headers headers) {
    if (!body.empty()) headers.emplace("Content-Type", "application/json");
    if (!contract_) load_contract();
    HttpResult r = http_request(port(), method, path, body, headers);
    if (contract_) {
      for (const auto& problem :
           contract_->response(method, path, r.status, r.header("content-type"), r.body)) {
        ADD_FAILURE() << "the response disagrees with /v1/openapi.json: " << problem;
      }
    }
    return r;
  }
  // Reads the served document once per test process (every server of the process is the
  // same binary); a server that is not up yet is read later.
  void load_contract() {
    static std::shared_ptr<const ContractCheck> shared;
    if (!shared) {
      if (!server_ || !server_->running()) return;
      auto r = http_request(port(), "GET", "/v1/openapi.json");
      if (r.status != 200) return;
      shared = std::make_shared<const ContractCheck>(r.json());
    }
    contract_ = shared;
  }
  HttpResult get(const std::string& path, const Headers& headers) {
    return send("GET", path, "", headers);
  }
  HttpResult post(const std::string& path, const nlohmann::json& body, Headers headers = {}) {
    return send("POST", path, body.dump(), std::move(headers));
  }
  HttpResult patch(const std::string& path, const nlohmann::json& body, Headers headers) {
    return send("PATCH", path, body.dump(), std::move(headers));
  }
  HttpResult put(const std::string& path, const nlohmann::json& body, Headers headers) {
    return send("PUT", path, body.dump(), std::move(headers));
  }
  static Headers session(const Login& l) {
    return {{"Cookie", l.cookie}, {"X-CSRF-Token", l.csrf}};
  }
  static Headers bearer(const std::string& token) { return {{"Authorization", "Bearer " + token}}; }

  Login login(const std::string& email) {
    auto r = post("/v1/auth/login", {{"email", email}, {"password", kPassword}});
    EXPECT_EQ(r.status, 200) << r.body;
    std::string set_cookie = r.header("set-cookie");
    return {set_cookie.substr(0, set_cookie.find(';')), r.json().value("csrf_token", ""),
            r.json()["user"].value("id", ""), r.json().value("current_org_id", "")};
  }
  // Signs up (with an org of their own) and logs in.
  Login account(const std::string& email, const std::string& org) {
    auto s =
        post("/v1/auth/signup", {{"email", email}, {"password", kPassword}, {"org_name", org}});
    EXPECT_EQ(s.status, 201) << s.body;
    Login l = login(email);
    if (fund_new_orgs_minor_ > 0) fund(l.org_id, fund_new_orgs_minor_);
    return l;
  }
  // Puts `amount_minor` RUB on the org's balance as an operator's top-up would, in SQL.
  void fund(const std::string& org_id, long long amount_minor) {
    pqxx::connection c(db_.url());
    fund_org(c, org_id, amount_minor);
  }
  // A number from the server's /metrics; -1 when it is not there.
  long long metric(const std::string& name) { return read_metric(port(), name); }
  // As an operator would, in SQL. The server drops resolved credentials when the database
  // announces the change, milliseconds later; this waits for that before returning.
  void set_platform_admin(const std::string& user_id, bool on) {
    long long announced = metric("gpurent_credential_cache_invalidations_total");
    pqxx::connection c(db_.url());
    pqxx::work tx(c);
    tx.exec_params("UPDATE users SET is_platform_admin = $2 WHERE id = $1", user_id, on);
    tx.commit();
    EXPECT_TRUE(wait_for([&] {
      return metric("gpurent_credential_cache_invalidations_total") > announced;
    })) << "the change was never announced";
  }
  // A signed-up user made platform admin, then logged in afresh.
  Login platform_admin(const std::string& email = "root@example.com") {
    Login l = account(email, "Root Org");
    set_platform_admin(l.user_id, true);
    return login(email);
  }
  // A new user added to `owner`'s org with `role`, acting for that org.
  Login member_of(const Login& owner, const std::string& role, const std::string& email) {
    Login l = account(email, "Own org");
    auto r = post("/v1/members", {{"email", email}, {"role", role}}, session(owner));
    EXPECT_EQ(r.status, 201) << r.body;
    auto s = post("/v1/session/org", {{"org_id", owner.org_id}}, session(l));
    EXPECT_EQ(s.status, 200) << s.body;
    l.org_id = owner.org_id;
    return l;
  }
  // A new API token of `creator`'s org; returns {id, token}.
  std::pair<std::string, std::string> token(const Headers& creator,
                                            const std::vector<std::string>& scopes,
                                            Headers extra = {}) {
    Headers h = creator;
    for (auto& [k, v] : extra) h[k] = v;
    auto r = post("/v1/api-tokens", {{"name", "ci"}, {"scopes", scopes}}, h);
    EXPECT_EQ(r.status, 201) << r.body;
    return {r.json().value("id", ""), r.json().value("token", "")};
  }

  // Every item of a listing, page by page, checking page sizes and that nothing repeats.
  nlohmann::json walk(const std::string& path, const Headers& h, int limit) {
    nlohmann::json all = nlohmann::json::array();
    std::string sep = path.find('?') == std::string::npos ? "?" : "&";
    std::string cursor;
    for (int pages = 0; pages < 200; ++pages) {
      std::string target = path + sep + "limit=" + std::to_string(limit);
      if (!cursor.empty()) target += "&cursor=" + cursor;
      auto r = get(target, h);
      EXPECT_EQ(r.status, 200) << target << " " << r.body;
      if (r.status != 200) return all;
      auto page = r.json();
      EXPECT_LE(page["items"].size(), static_cast<std::size_t>(limit));
      for (auto& item : page["items"]) all.push_back(item);
      if (page["next_cursor"].is_null()) return all;
      EXPECT_EQ(page["items"].size(), static_cast<std::size_t>(limit));
      cursor = page["next_cursor"].get<std::string>();
    }
    ADD_FAILURE() << "paging did not end";
    return all;
  }

  TestDatabase db_;
  std::unique_ptr<ServerProcess> server_;
  std::shared_ptr<const ContractCheck> contract_;
  // Orgs that account() makes get this much money first (0: none), so tests about something
  // else book without paying in first; billing's own tests start from nothing.
  long long fund_new_orgs_minor_ = 0;
};

}  // namespace gpurent::testing
