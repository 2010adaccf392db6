// Rate limits end to end: per address, per credential, probes exempt, failed sign-ins throttled.
#include "tests/support/http_client.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <chrono>
#include <cmath>

namespace gpurent::testing::rate_limit_e2e {

using Headers = std::map<std::string, std::string>;
const Headers kJson = {{"Content-Type", "application/json"}};

class RateLimitE2E : public ::testing::Test {
 protected:
  void start(std::vector<std::string> flags) {
    server_ = std::make_unique<ServerProcess>(
        ServerOptions{.database_url = db_.url(), .flags = std::move(flags)});
  }
  int port() { return server_->port(); }

  HttpResult get(const std::string& path, const Headers& headers = {}) {
    return http_request(port(), "GET", path, "", headers);
  }
  HttpResult post(const std::string& path, const nlohmann::json& body, Headers headers = kJson) {
    headers.emplace("Content-Type", "application/json");
    return http_request(port(), "POST", path, body.dump(), headers);
  }
  void signup(const std::string& email) {
    auto r = post("/v1/auth/signup",
                  {{"email", email}, {"password", "a good passphrase"}, {"org_name", "Acme"}});
    ASSERT_EQ(r.status, 201) << r.body;
  }
  void signup_from(const std::string& client, const std::string& email) {
    auto r = post("/v1/auth/signup",
                  {{"email", email}, {"password", "a good passphrase"}, {"org_name", "Acme"}},
                  {{"X-Forwarded-For", client}});
    ASSERT_EQ(r.status, 201) << r.body;
  }
  HttpResult login(const std::string& email, const std::string& password) {
    return post("/v1/auth/login", {{"email", email}, {"password", password}});
  }

  // Sends `request` until it is refused; returns how many got through first. Fails the
  // test when none is refused within `max`.
  int count_until_refused(const std::function<HttpResult()>& request, int max,
                          HttpResult* refused) {
    for (int i = 0; i < max; ++i) {
      HttpResult r = request();
      if (r.status == 429) {
        *refused = r;
        return i;
      }
    }
    ADD_FAILURE() << "no request was refused in " << max;
    return max;
  }

  static void expect_rate_limited(const HttpResult& r) {
    EXPECT_EQ(r.status, 429) << r.body;
    EXPECT_EQ(r.json()["error"]["code"], "rate_limited");
    int retry_after = std::atoi(r.header("retry-after").c_str());
    EXPECT_GE(retry_after, 1) << r.header("retry-after");
  }

  TestDatabase db_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(RateLimitE2E, AnAddressIsRefusedPastItsBurstButProbesNeverAre) {
  start({"--rate_limit_per_ip=1", "--rate_limit_burst_per_ip=5"});
  auto started = std::chrono::steady_clock::now();
  HttpResult refused;
  int i = 0;
  // Unmatched paths and unauthenticated calls cost the address too.
  int passed =
      count_until_refused([&] { return get(++i % 2 ? "/no/such/path" : "/v1/me"); }, 30, &refused);
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_GE(passed, 5);
  EXPECT_LE(passed, 5 + static_cast<int>(std::ceil(elapsed)));  // 1 a second refills
  expect_rate_limited(refused);
  EXPECT_FALSE(refused.header("x-request-id").empty());

  for (int n = 0; n < 30; ++n) {
    ASSERT_EQ(get("/healthz").status, 200) << n;
    ASSERT_NE(get("/metrics").status, 429) << n;
  }
  expect_rate_limited(get("/v1/me"));
  std::string metrics = get("/metrics").body;
  EXPECT_NE(metrics.find("gpurent_rate_limited_total{limiter=\"ip\"} 2\n"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("gpurent_rate_limited_total{limiter=\"credential\"} 0\n"),
            std::string::npos);
}

TEST_F(RateLimitE2E, ATrustedProxyNamesTheClientAndAnUntrustedOneCannot) {
  start({"--rate_limit_per_ip=1", "--rate_limit_burst_per_ip=3", "--trusted_proxies=127.0.0.1"});
  auto from = [&](const std::string& client) {
    return get("/v1/me", {{"X-Forwarded-For", "203.0.113.66, " + client}});
  };
  HttpResult refused;
  EXPECT_GE(count_until_refused([&] { return from("198.51.100.1"); }, 30, &refused), 3);
  expect_rate_limited(refused);
  EXPECT_EQ(from("198.51.100.2").status, 401)
      << "another client behind the proxy has its own bucket";

  // The address reaches the audit log: a failed sign-in from behind the proxy.
  signup_from("198.51.100.3", "victim@example.com");
  auto bad = post("/v1/auth/login", {{"email", "victim@example.com"}, {"password", "wrong one!"}},
                  {{"X-Forwarded-For", "198.51.100.4"}});
  EXPECT_EQ(bad.status, 401);
  pqxx::connection c(db_.url());
  pqxx::nontransaction tx(c);
  auto ip = tx.exec("SELECT ip FROM audit_log WHERE action = 'user.login_failed'");
  ASSERT_EQ(ip.size(), 1u);
  EXPECT_EQ(ip[0][0].as<std::string>(), "198.51.100.4");
}

TEST_F(RateLimitE2E, AForwardedForLineOfTheClientsOwnDoesNotNameIt) {
  // HAProxy's `option forwardfor` adds a line of its own after whatever the client sent:
  // the client named last on the last line is the one that counts, however many lines and
  // addresses the client invented before.
  start({"--rate_limit_per_ip=1", "--rate_limit_burst_per_ip=3", "--trusted_proxies=127.0.0.1"});
  auto request = [&](const std::string& invented, const std::string& client) {
    RawConnection c(port());
    EXPECT_TRUE(
        c.send("GET /v1/me HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
               "X-Forwarded-For: " +
               invented + "\r\nX-Forwarded-For: " + client + "\r\n\r\n"));
    return c.read_response();
  };
  int n = 0;
  HttpResult refused;
  // A new invented address each time: the same real client's bucket all the same.
  EXPECT_LE(count_until_refused(
                [&] { return request("198.51.100." + std::to_string(++n), "203.0.113.7"); }, 30,
                &refused),
            8);
  expect_rate_limited(refused);
  EXPECT_EQ(request("198.51.100.200", "203.0.113.8").status, 401)
      << "another real client has its own bucket";
}

TEST_F(RateLimitE2E, WithoutTrustedProxiesForwardedForIsIgnored) {
  start({"--rate_limit_per_ip=1", "--rate_limit_burst_per_ip=3"});
  int n = 0;
  HttpResult refused;
  // A client inventing a new address each time still spends its own bucket.
  EXPECT_LE(count_until_refused(
                [&] {
                  return get("/v1/me", {{"X-Forwarded-For", "198.51.100." + std::to_string(++n)}});
                },
                30, &refused),
            8);
  expect_rate_limited(refused);
}

TEST_F(RateLimitE2E, ATokenAndASessionEachHaveTheirOwnBucket) {
  start({"--rate_limit_per_credential=1", "--rate_limit_burst_per_credential=3",
         "--rate_limit_per_ip=0"});
  signup("owner@example.com");
  auto l = login("owner@example.com", "a good passphrase");
  ASSERT_EQ(l.status, 200) << l.body;
  std::string cookie = l.header("set-cookie");
  Headers session = {{"Cookie", cookie.substr(0, cookie.find(';'))},
                     {"X-CSRF-Token", l.json()["csrf_token"]}};
  auto t = post("/v1/api-tokens", {{"name", "ci"}, {"scopes", {"rentals:read"}}}, session);
  ASSERT_EQ(t.status, 201) << t.body;
  Headers token = {{"Authorization", "Bearer " + t.json()["token"].get<std::string>()}};

  HttpResult refused;
  int passed = count_until_refused([&] { return get("/v1/me", token); }, 30, &refused);
  EXPECT_GE(passed, 3);
  expect_rate_limited(refused);

  EXPECT_EQ(get("/v1/me", session).status, 200) << "the session is not the token";
  passed = count_until_refused([&] { return get("/v1/me", session); }, 30, &refused);
  EXPECT_GE(passed, 1);
  expect_rate_limited(refused);

  // Without a credential (or with another one) only the address counts, and it is off here.
  EXPECT_EQ(get("/v1/me").status, 401);
  EXPECT_EQ(get("/v1/me", {{"Authorization", "Bearer gpr_" + std::string(64, '0')}}).status, 401);
}

TEST_F(RateLimitE2E, FailedLoginsLockTheAccountEvenForTheRightPassword) {
  start({});
  signup("victim@example.com");
  signup("bystander@example.com");
  // 5 failures per account; the address allows 20, so the bystander is not affected.
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(login("victim@example.com", "wrong guess " + std::to_string(i)).status, 401) << i;
  }
  auto locked = login("victim@example.com", "a good passphrase");
  expect_rate_limited(locked);
  EXPECT_FALSE(locked.json().contains("csrf_token"));
  EXPECT_TRUE(locked.header("set-cookie").empty());
  expect_rate_limited(login("VICTIM@example.com", "a good passphrase"));  // case does not help

  EXPECT_EQ(login("bystander@example.com", "wrong").status, 401);
  EXPECT_EQ(login("bystander@example.com", "a good passphrase").status, 200);
}

}  // namespace gpurent::testing::rate_limit_e2e
