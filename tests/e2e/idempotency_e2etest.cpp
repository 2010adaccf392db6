// Idempotency-Key end to end: replays, reuse with another body, concurrent retries that
// create one object, waiting and 409, keys per caller, sealed storage, expiry, and the
// routes that ignore the header.
#include "tests/support/http_client.h"
#include "tests/support/pg_harness.h"
#include "tests/support/server_process.h"
#include "tests/support/table_lock.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <future>
#include <latch>

namespace gpurent::testing::idempotency_e2e {

using Headers = std::map<std::string, std::string>;

class IdempotencyE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(ServerOptions{.database_url = db_.url()});
    owner_ = account("owner@example.com", "Acme");
  }
  int port() { return server_->port(); }

  HttpResult post(const std::string& path, const nlohmann::json& body, Headers h) {
    h["Content-Type"] = "application/json";
    return http_request(port(), "POST", path, body.dump(), h);
  }
  Headers login(const std::string& email) {
    auto l = post("/v1/auth/login", {{"email", email}, {"password", "a good passphrase"}}, {});
    EXPECT_EQ(l.status, 200) << l.body;
    std::string cookie = l.header("set-cookie");
    return {{"Cookie", cookie.substr(0, cookie.find(';'))},
            {"X-CSRF-Token", l.json().value("csrf_token", "")}};
  }
  Headers account(const std::string& email, const std::string& org) {
    auto s = post("/v1/auth/signup",
                  {{"email", email}, {"password", "a good passphrase"}, {"org_name", org}}, {});
    EXPECT_EQ(s.status, 201) << s.body;
    return login(email);
  }
  static Headers with_key(Headers h, const std::string& key) {
    h["Idempotency-Key"] = key;
    return h;
  }
  HttpResult create_token(const Headers& auth, const std::string& key,
                          const std::string& name = "ci") {
    return post("/v1/api-tokens", {{"name", name}, {"scopes", {"rentals:read"}}},
                with_key(auth, key));
  }
  int count(const std::string& sql) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx.exec(sql)[0][0].as<int>();
  }
  int tokens() { return count("SELECT count(*) FROM api_tokens"); }
  // Sessions waiting for a lock on `table`: requests held up by a TableLock.
  int lock_waiters(const std::string& table) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx
        .exec_params("SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = $1::regclass",
                     table)[0][0]
        .as<int>();
  }

  static constexpr const char* kLockTokenInserts =
      "LOCK TABLE api_tokens IN SHARE ROW EXCLUSIVE MODE";
  // Releases `token_inserts` once the first run is stuck behind it (holding its key) and
  // the other `retries` have come in meanwhile, found the key running and wait for it (off
  // the workers, on the replicas at `ports`).
  void release_once_retries_overlap(TableLock& token_inserts, std::vector<int> ports, int retries) {
    EXPECT_TRUE(wait_for([&] { return lock_waiters("api_tokens") == 1; }))
        << "the run that took the key should be stuck on the lock";
    auto waiting = [&] {
      long long n = 0;
      for (int p : ports) n += read_metric(p, "gpurent_http_requests_waiting");
      return n;
    };
    EXPECT_TRUE(wait_for([&] { return waiting() == retries; }))
        << "retries waiting for the first run: " << waiting();
    token_inserts.release();
  }

  TestDatabase db_;
  std::unique_ptr<ServerProcess> server_;
  Headers owner_;
};

TEST_F(IdempotencyE2E, SameKeyAndBodyReplaysTheFirstResponse) {
  auto first = create_token(owner_, "key-1");
  ASSERT_EQ(first.status, 201) << first.body;
  EXPECT_EQ(first.header("idempotent-replayed"), "");
  auto again = create_token(owner_, "key-1");
  EXPECT_EQ(again.status, 201);
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(again.header("idempotent-replayed"), "true");
  EXPECT_NE(again.header("x-request-id"), first.header("x-request-id"));
  EXPECT_EQ(tokens(), 1);
  // The replayed secret is the real one.
  std::string token = again.json()["token"];
  EXPECT_EQ(
      http_request(port(), "GET", "/v1/me", "", {{"Authorization", "Bearer " + token}}).status,
      200);
  // Without a key, the same body creates another.
  EXPECT_EQ(post("/v1/api-tokens", {{"name", "ci"}, {"scopes", {"rentals:read"}}}, owner_).status,
            201);
  EXPECT_EQ(tokens(), 2);
}

TEST_F(IdempotencyE2E, SameKeyWithAnotherBodyIs422AndChangesNothing) {
  ASSERT_EQ(create_token(owner_, "key-1", "first").status, 201);
  auto other = create_token(owner_, "key-1", "second");
  EXPECT_EQ(other.status, 422);
  EXPECT_EQ(other.json()["error"]["code"], "idempotency_key_reused");
  // The same body on another path is another request too.
  auto elsewhere = post("/v1/members", {{"name", "first"}, {"scopes", {"rentals:read"}}},
                        with_key(owner_, "key-1"));
  EXPECT_EQ(elsewhere.status, 422);
  EXPECT_EQ(tokens(), 1);
}

TEST_F(IdempotencyE2E, ConcurrentRetriesCreateExactlyOneObject) {
  constexpr int kClients = 12;
  TableLock token_inserts(db_.url(), kLockTokenInserts);
  std::latch go(kClients);
  std::vector<std::future<HttpResult>> results;
  for (int i = 0; i < kClients; ++i) {
    results.push_back(std::async(std::launch::async, [&] {
      go.arrive_and_wait();
      return create_token(owner_, "race");
    }));
  }
  release_once_retries_overlap(token_inserts, {port()}, kClients - 1);
  std::vector<HttpResult> got;
  for (auto& f : results) got.push_back(f.get());
  int replayed = 0;
  for (const auto& r : got) {
    ASSERT_EQ(r.status, 201) << r.body;
    EXPECT_EQ(r.body, got[0].body);
    replayed += r.header("idempotent-replayed") == "true";
  }
  EXPECT_EQ(replayed, kClients - 1);
  EXPECT_EQ(tokens(), 1);
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE action = 'token.create'"), 1);
}

TEST_F(IdempotencyE2E, RetriesSpreadOverReplicasCreateExactlyOneObject) {
  ServerProcess second(ServerOptions{.database_url = db_.url()});
  constexpr int kClients = 8;
  TableLock token_inserts(db_.url(), kLockTokenInserts);
  std::latch go(kClients);
  std::vector<std::future<HttpResult>> results;
  for (int i = 0; i < kClients; ++i) {
    int target = i % 2 ? second.port() : port();
    results.push_back(std::async(std::launch::async, [&, target] {
      go.arrive_and_wait();
      Headers h = with_key(owner_, "replicas");
      h["Content-Type"] = "application/json";
      return http_request(target, "POST", "/v1/api-tokens",
                          R"({"name": "ci", "scopes": ["rentals:read"]})", h);
    }));
  }
  release_once_retries_overlap(token_inserts, {port(), second.port()}, kClients - 1);
  std::vector<HttpResult> got;
  for (auto& f : results) got.push_back(f.get());
  for (const auto& r : got) {
    ASSERT_EQ(r.status, 201) << r.body;
    EXPECT_EQ(r.body, got[0].body);
  }
  EXPECT_EQ(tokens(), 1);
}

TEST_F(IdempotencyE2E, ARetryThatOutwaitsTheFirstGets409ThenTheReplay) {
  TableLock token_inserts(db_.url(), kLockTokenInserts);
  auto first = std::async(std::launch::async, [&] { return create_token(owner_, "slow"); });
  // The first run holds the key and is stuck on the lock for as long as the retry waits.
  EXPECT_TRUE(wait_for([&] { return lock_waiters("api_tokens") == 1; }));
  auto retry = create_token(owner_, "slow");
  EXPECT_EQ(retry.status, 409) << retry.body;
  EXPECT_EQ(retry.json()["error"]["code"], "conflict");
  EXPECT_EQ(retry.header("retry-after"), "1");
  token_inserts.release();
  auto done = first.get();
  ASSERT_EQ(done.status, 201) << done.body;
  auto later = create_token(owner_, "slow");
  EXPECT_EQ(later.body, done.body);
  EXPECT_EQ(tokens(), 1);
}

TEST_F(IdempotencyE2E, KeysBelongToTheCaller) {
  ASSERT_EQ(create_token(owner_, "shared-key").status, 201);
  // Another org's user with the same key and body runs their own request.
  Headers stranger = account("stranger@example.com", "Other");
  auto theirs = create_token(stranger, "shared-key");
  EXPECT_EQ(theirs.status, 201);
  EXPECT_NE(theirs.header("idempotent-replayed"), "true");
  // So does another user of the same org.
  account("colleague@example.com", "Colleague's own");
  ASSERT_EQ(
      post("/v1/members", {{"email", "colleague@example.com"}, {"role", "member"}}, owner_).status,
      201);
  Headers colleague = login("colleague@example.com");
  auto me = http_request(port(), "GET", "/v1/me", "", owner_);
  auto sw = post("/v1/session/org", {{"org_id", me.json()["current_org_id"]}}, colleague);
  ASSERT_EQ(sw.status, 200) << sw.body;
  auto colleague_token = create_token(colleague, "shared-key");
  EXPECT_EQ(colleague_token.status, 201);
  EXPECT_NE(colleague_token.header("idempotent-replayed"), "true");
  EXPECT_EQ(tokens(), 3);
}

TEST_F(IdempotencyE2E, StoredResponsesAreSealedAndKeysHashed) {
  auto r = create_token(owner_, "my-client-key-123");
  ASSERT_EQ(r.status, 201);
  std::string token = r.json()["token"];
  pqxx::connection c(db_.url());
  pqxx::nontransaction tx(c);
  auto row = tx.exec(
      "SELECT scope, key_hash, request_hash, encode(response, 'escape') FROM idempotency_keys");
  ASSERT_EQ(row.size(), 1u);
  for (int i = 0; i < 4; ++i) {
    std::string v = row[0][i].as<std::string>();
    EXPECT_EQ(v.find("my-client-key-123"), std::string::npos) << i;
    EXPECT_EQ(v.find(token.substr(4)), std::string::npos) << i;
    EXPECT_EQ(v.find("rentals:read"), std::string::npos) << i;
  }
  EXPECT_EQ(create_token(owner_, "my-client-key-123").body, r.body);
}

TEST_F(IdempotencyE2E, ForbiddenIsNotKeptSoARetryAfterAGrantRuns) {
  Headers viewer = account("viewer@example.com", "Viewer's own");
  ASSERT_EQ(
      post("/v1/members", {{"email", "viewer@example.com"}, {"role", "viewer"}}, owner_).status,
      201);
  viewer = login("viewer@example.com");
  auto me = http_request(port(), "GET", "/v1/me", "", owner_);
  std::string org = me.json()["current_org_id"];
  ASSERT_EQ(post("/v1/session/org", {{"org_id", org}}, viewer).status, 200);
  EXPECT_EQ(create_token(viewer, "grant-then-retry").status, 403);
  auto viewer_id = http_request(port(), "GET", "/v1/me", "", viewer).json()["user"]["id"];
  Headers patch = owner_;
  patch["Content-Type"] = "application/json";
  ASSERT_EQ(http_request(port(), "PATCH", "/v1/members/" + viewer_id.get<std::string>(),
                         R"({"role": "member"})", patch)
                .status,
            200);
  auto retry = create_token(viewer, "grant-then-retry");
  EXPECT_EQ(retry.status, 201) << retry.body;
  EXPECT_NE(retry.header("idempotent-replayed"), "true");
}

TEST_F(IdempotencyE2E, ValidationErrorsAreReplayedLikeAnyAnswer) {
  auto body = nlohmann::json{{"name", "ci"}, {"scopes", {"not-a-scope"}}};
  auto first = post("/v1/api-tokens", body, with_key(owner_, "bad-body"));
  EXPECT_EQ(first.status, 400);
  auto again = post("/v1/api-tokens", body, with_key(owner_, "bad-body"));
  EXPECT_EQ(again.status, 400);
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(again.header("idempotent-replayed"), "true");
}

TEST_F(IdempotencyE2E, MalformedKeysAre400NamingTheHeader) {
  for (const std::string& key : {std::string(256, 'k'), std::string("has space"),
                                 std::string("tab\there"), std::string("caf\xc3\xa9")}) {
    auto r = create_token(owner_, key);
    EXPECT_EQ(r.status, 400) << key;
    EXPECT_EQ(r.json()["error"]["details"]["field"], "Idempotency-Key") << key;
  }
  EXPECT_EQ(create_token(owner_, std::string(255, 'k')).status, 201);
  EXPECT_EQ(tokens(), 1);
}

TEST_F(IdempotencyE2E, UnauthenticatedRequestsTouchNoKey) {
  auto r = post("/v1/api-tokens", {{"name", "ci"}, {"scopes", {"rentals:read"}}},
                {{"Idempotency-Key", "anon"}});
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(count("SELECT count(*) FROM idempotency_keys"), 0);
}

TEST_F(IdempotencyE2E, KeysAreForgottenAfter24Hours) {
  // A bearer token outlives the session's idle expiry across the clock jump.
  auto made = post("/v1/api-tokens",
                   {{"name", "automation"}, {"scopes", {"tokens:write", "rentals:read"}}}, owner_);
  ASSERT_EQ(made.status, 201);
  Headers bearer = {{"Authorization", "Bearer " + made.json()["token"].get<std::string>()}};
  auto first = create_token(bearer, "daily");
  ASSERT_EQ(first.status, 201) << first.body;
  auto advance =
      http_request(port(), "POST", "/v1/admin/test-clock", R"({"advance_seconds": 82800})",
                   {{"Content-Type", "application/json"}});
  ASSERT_EQ(advance.status, 200);
  EXPECT_EQ(create_token(bearer, "daily").body, first.body) << "23 h later it is still kept";
  http_request(port(), "POST", "/v1/admin/test-clock", R"({"advance_seconds": 7200})",
               {{"Content-Type", "application/json"}});
  auto fresh = create_token(bearer, "daily");
  EXPECT_EQ(fresh.status, 201);
  EXPECT_NE(fresh.json()["id"], first.json()["id"]);
  EXPECT_EQ(tokens(), 3);
}

TEST_F(IdempotencyE2E, LoginIgnoresTheHeaderAndNeverReplaysACookie) {
  Headers h = {{"Idempotency-Key", "login-key"}};
  auto body = nlohmann::json{{"email", "owner@example.com"}, {"password", "a good passphrase"}};
  auto a = post("/v1/auth/login", body, h);
  auto b = post("/v1/auth/login", body, h);
  ASSERT_EQ(a.status, 200);
  ASSERT_EQ(b.status, 200);
  EXPECT_NE(a.header("set-cookie"), b.header("set-cookie"));
  EXPECT_EQ(b.header("idempotent-replayed"), "");
  EXPECT_EQ(count("SELECT count(*) FROM idempotency_keys"), 0);
}

}  // namespace gpurent::testing::idempotency_e2e
