// Retries waiting on a running Idempotency-Key hold no worker: with two workers, one held by
// the first request and twenty retries waiting for it, other callers' database requests are
// still answered, every retry then gets the first response, and a retry still waiting at
// shutdown is answered 503 without holding up the drain.
#include "tests/support/http_client.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"
#include "tests/support/table_lock.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <csignal>
#include <future>
#include <sstream>

namespace gpurent::testing::idempotency_wait_e2e {

using namespace std::chrono_literals;
using Headers = std::map<std::string, std::string>;

class IdempotencyWaitE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    // Two workers: one is held by the first request below, one is left for everyone else.
    server_ = std::make_unique<ServerProcess>(
        ServerOptions{.database_url = db_.url(), .flags = {"--worker_threads=2"}});
    owner_ = account("owner@example.com", "Acme");
    other_ = account("other@example.com", "Other");
  }
  int port() { return server_->port(); }

  HttpResult post(const std::string& path, const nlohmann::json& body, Headers h) {
    h["Content-Type"] = "application/json";
    return http_request(port(), "POST", path, body.dump(), h);
  }
  Headers account(const std::string& email, const std::string& org) {
    auto s = post("/v1/auth/signup",
                  {{"email", email}, {"password", "a good passphrase"}, {"org_name", org}}, {});
    EXPECT_EQ(s.status, 201) << s.body;
    auto l = post("/v1/auth/login", {{"email", email}, {"password", "a good passphrase"}}, {});
    EXPECT_EQ(l.status, 200) << l.body;
    std::string cookie = l.header("set-cookie");
    return {{"Cookie", cookie.substr(0, cookie.find(';'))},
            {"X-CSRF-Token", l.json().value("csrf_token", "")}};
  }
  HttpResult create_token(const std::string& key) {
    Headers h = owner_;
    h["Idempotency-Key"] = key;
    return post("/v1/api-tokens", {{"name", "ci"}, {"scopes", {"rentals:read"}}}, h);
  }
  int count(const std::string& sql) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx.exec(sql)[0][0].as<int>();
  }
  // Sessions waiting for a lock on api_tokens: the first request, stuck inside its handler.
  int token_lock_waiters() {
    return count(
        "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'api_tokens'::regclass");
  }
  // A value from /metrics, or -1 when it is absent.
  long long metric(const std::string& name) { return read_metric(port(), name); }
  // Starts the first request with `key`, which claims it and then blocks on the lock.
  std::future<HttpResult> start_holder(const std::string& key) {
    auto first = std::async(std::launch::async, [this, key] { return create_token(key); });
    EXPECT_TRUE(wait_for([&] { return token_lock_waiters() == 1; }))
        << "the request that claimed the key should be stuck on the lock";
    return first;
  }

  static constexpr const char* kLockTokenInserts =
      "LOCK TABLE api_tokens IN SHARE ROW EXCLUSIVE MODE";

  TestDatabase db_;
  std::unique_ptr<ServerProcess> server_;
  Headers owner_;
  Headers other_;
};

TEST_F(IdempotencyWaitE2E, RetriesWaitingForARunningKeyLeaveTheWorkersFree) {
  constexpr int kRetries = 20;
  TableLock token_inserts(db_.url(), kLockTokenInserts);
  auto first = start_holder("held");
  std::vector<std::future<HttpResult>> retries;
  for (int i = 0; i < kRetries; ++i) {
    retries.push_back(std::async(std::launch::async, [this] { return create_token("held"); }));
  }
  // Each retry has found the key running and now waits on a timer, not on a worker: with
  // one worker held and one free, a retry sleeping on a worker would leave room for one.
  ASSERT_TRUE(wait_for([&] { return metric("gpurent_http_requests_waiting") == kRetries; }))
      << "waiting: " << metric("gpurent_http_requests_waiting");

  // Another caller's requests, which need a worker, are answered meanwhile.
  for (int i = 0; i < 3; ++i) {
    auto me = http_request(port(), "GET", "/v1/me", "", other_, 10s);
    EXPECT_EQ(me.status, 200) << me.body;
    auto ready = http_request(port(), "GET", "/readyz", "", {}, 10s);
    EXPECT_EQ(ready.status, 200) << ready.body;
  }
  // ... while every retry was still waiting for the first request, which still runs.
  EXPECT_EQ(metric("gpurent_http_requests_waiting"), kRetries);
  for (auto& r : retries) EXPECT_EQ(r.wait_for(0s), std::future_status::timeout);
  EXPECT_EQ(token_lock_waiters(), 1);

  token_inserts.release();
  auto done = first.get();
  ASSERT_EQ(done.status, 201) << done.body;
  for (auto& f : retries) {
    auto r = f.get();
    EXPECT_EQ(r.status, 201) << r.body;
    EXPECT_EQ(r.body, done.body);
    EXPECT_EQ(r.header("idempotent-replayed"), "true");
  }
  EXPECT_EQ(count("SELECT count(*) FROM api_tokens"), 1);
  EXPECT_EQ(metric("gpurent_http_requests_waiting"), 0);
}

TEST_F(IdempotencyWaitE2E, ARetryStillWaitingAtShutdownIsAnswered503) {
  TableLock token_inserts(db_.url(), kLockTokenInserts);
  auto first = start_holder("held");
  auto retry = std::async(std::launch::async, [this] { return create_token("held"); });
  ASSERT_TRUE(wait_for([&] { return metric("gpurent_http_requests_waiting") == 1; }));

  server_->send_signal(SIGTERM);
  // Answered now, not when its five seconds of patience are over (that answer is 409).
  auto r = retry.get();
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "unavailable");
  EXPECT_EQ(r.header("retry-after"), "1");

  // The first request is in flight, so the drain waits for it: released, it completes, and
  // the server exits cleanly.
  token_inserts.release();
  EXPECT_EQ(first.get().status, 201);
  EXPECT_EQ(server_->wait_exit(30s), 0) << server_->logs();
}

}  // namespace gpurent::testing::idempotency_wait_e2e
