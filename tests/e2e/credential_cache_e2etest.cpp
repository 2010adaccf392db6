// Credentials resolved from memory, end to end on two replicas of one database: a cached
// token or session costs no database statement; whatever changes what it may do through
// the API on one replica takes effect on the other replica's very next request, and a
// change made by hand in psql on every replica as soon as the database announces it.
// A replica whose listener lost its connection drops what it holds; unknown secrets are
// never kept; uses are written behind and flushed at shutdown.
#include "core/crypto.h"
#include "tests/support/api_fixture.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <chrono>

namespace gpurent::testing::credential_cache_e2e {

using nlohmann::json;

class CredentialCacheE2E : public ApiTest {
 protected:
  void SetUp() override {
    ApiTest::SetUp();  // replica A: server_
    // Replica B's database round trips are counted: its rental lifecycle worker, which
    // looks for due rentals every few seconds, and its webhook deliveries, looked for every
    // second, are told to wait a day.
    b_ = std::make_unique<ServerProcess>(
        ServerOptions{.database_url = db_.url(),
                      .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0",
                                "--lifecycle_interval=24h", "--webhook_poll_interval=24h"}});
  }

  HttpResult on(ServerProcess& s, const std::string& method, const std::string& path,
                const Headers& h, const std::string& body = "") {
    Headers headers = h;
    if (!body.empty()) headers.emplace("Content-Type", "application/json");
    return http_request(s.port(), method, path, body, headers);
  }
  long long metric(ServerProcess& s, const std::string& name) {
    return read_metric(s.port(), name);
  }
  void sql(const std::string& statement) {
    pqxx::connection c(db_.url());
    pqxx::work tx(c);
    tx.exec(statement);
    tx.commit();
  }
  // A change made by hand, as an operator in psql would: nobody waits for its announcement,
  // so the test waits until both replicas have received it (milliseconds) before looking.
  void sql_announced(const std::string& statement) {
    const char* counter = "gpurent_credential_cache_invalidations_total";
    long long a = metric(*server_, counter), b = metric(*b_, counter);
    sql(statement);
    ASSERT_TRUE(wait_for([&] { return metric(*server_, counter) > a && metric(*b_, counter) > b; },
                         kWaitLimit, std::chrono::milliseconds(5)));
  }
  // A change made through replica A's API. A answers only once its own listener has the
  // change's announcement, which PostgreSQL sent every listener at commit; B's listener
  // process may be scheduled a moment later on a loaded machine, so before looking at B the
  // test waits (milliseconds) until B has it too. What B then answers is its next request.
  HttpResult change_on_a(const std::string& method, const std::string& path, const Headers& h,
                         const std::string& body = "") {
    const char* counter = "gpurent_credential_cache_invalidations_total";
    long long b = metric(*b_, counter);
    auto r = on(*server_, method, path, h, body);
    if (r.status < 300) {
      EXPECT_TRUE(wait_for([&] { return metric(*b_, counter) > b; }, kWaitLimit,
                           std::chrono::milliseconds(2)))
          << "replica B never received the announcement of " << method << " " << path;
    }
    return r;
  }
  long long sql_int(const std::string& query) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx.exec(query)[0][0].as<long long>();
  }
  // The org a user signed up with (their own, where they are owner).
  std::string own_org(const Login& l) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx
        .exec_params("SELECT org_id FROM memberships WHERE user_id = $1 AND role = 'owner'",
                     l.user_id)[0][0]
        .as<std::string>();
  }
  // Asks `s` until it answers `path` with 200 from its cache: the credential is held there.
  // An announcement of the setup's own changes (a membership, a token made on A) may reach
  // `s` between two requests and empty its cache once more, so it asks again until two
  // requests in a row cost one miss at most.
  void warm(ServerProcess& s, const Headers& h, const std::string& path = "/v1/me") {
    bool held = wait_for(
        [&] {
          EXPECT_EQ(on(s, "GET", path, h).status, 200);
          long long misses = metric(s, "gpurent_credential_cache_misses_total");
          EXPECT_EQ(on(s, "GET", path, h).status, 200);
          return metric(s, "gpurent_credential_cache_misses_total") == misses;
        },
        kWaitLimit, std::chrono::milliseconds(20));
    ASSERT_TRUE(held) << "the second request was never answered from memory";
  }

  std::unique_ptr<ServerProcess> b_;
};

TEST_F(CredentialCacheE2E, ACachedCredentialCostsNoStatementAndUnknownOnesAreNotKept) {
  Login owner = account("owner@example.com", "Org");
  auto [id, token] = this->token(session(owner), {"rentals:read"});
  warm(*b_, bearer(token));
  warm(*b_, session(owner));
  // And the catalog's snapshot: the first read after start builds it on a worker, after an
  // inline attempt that already looked the credential up once (an abandoned attempt counts
  // its hit too).
  warm(*b_, session(owner), "/v1/gpu-models");
  long long hits = metric(*b_, "gpurent_credential_cache_hits_total");
  long long misses = metric(*b_, "gpurent_credential_cache_misses_total");
  long long round_trips = metric(*b_, "gpurent_db_round_trips_total");
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(on(*b_, "GET", "/v1/me", bearer(token)).status, 200);
    ASSERT_EQ(on(*b_, "GET", "/v1/gpu-models", session(owner)).status, 200);
  }
  EXPECT_EQ(metric(*b_, "gpurent_credential_cache_misses_total"), misses);
  EXPECT_EQ(metric(*b_, "gpurent_credential_cache_hits_total"), hits + 100);
  // 100 requests, and at most the write-behind of the two warm-up uses (two transactions:
  // BEGIN, PREPARE, UPDATE, COMMIT) reached the database meanwhile.
  EXPECT_LE(metric(*b_, "gpurent_db_round_trips_total") - round_trips, 8);

  // Unknown secrets each cost one lookup and are never kept.
  long long held = metric(*b_, "gpurent_credential_cache_entries");
  for (int i = 0; i < 200; ++i) {
    std::string random = "gpr_" + crypto::sha256_hex("random " + std::to_string(i));
    ASSERT_EQ(on(*b_, "GET", "/v1/me", bearer(random)).status, 401);
  }
  EXPECT_EQ(metric(*b_, "gpurent_credential_cache_entries"), held);
  EXPECT_EQ(metric(*b_, "gpurent_credential_cache_misses_total"), misses + 200);
}

TEST_F(CredentialCacheE2E, RevokingOnOneReplicaIs401OnTheOtherAtOnce) {
  Login owner = account("owner@example.com", "Org");
  auto [id, token] = this->token(session(owner), {"rentals:read"});
  warm(*b_, bearer(token));
  auto revoked = change_on_a("DELETE", "/v1/api-tokens/" + id, session(owner));
  ASSERT_EQ(revoked.status, 204) << revoked.body;
  EXPECT_EQ(on(*b_, "GET", "/v1/me", bearer(token)).status, 401);
}

TEST_F(CredentialCacheE2E, LoggingOutOnOneReplicaEndsTheSessionOnTheOther) {
  Login owner = account("owner@example.com", "Org");
  warm(*b_, session(owner));
  auto out = change_on_a("POST", "/v1/auth/logout", session(owner));
  ASSERT_EQ(out.status, 204) << out.body;
  EXPECT_EQ(on(*b_, "GET", "/v1/me", session(owner)).status, 401);
}

TEST_F(CredentialCacheE2E, ARoleChangeOrRemovalTakesEffectOnTheOtherReplica) {
  Login owner = account("owner@example.com", "Org");
  Login member = member_of(owner, "member", "member@example.com");
  auto [id, token] = this->token(session(member), {"ssh-keys:write", "rentals:read"});
  warm(*b_, session(member));
  warm(*b_, bearer(token));
  auto me = on(*b_, "GET", "/v1/me", session(member));
  EXPECT_EQ(me.json()["role"], "member");

  // Demoted to viewer on A: B's next answer has the viewer's role and scopes.
  auto demoted = change_on_a("PATCH", "/v1/members/" + member.user_id, session(owner),
                             json{{"role", "viewer"}}.dump());
  ASSERT_EQ(demoted.status, 200) << demoted.body;
  me = on(*b_, "GET", "/v1/me", session(member));
  EXPECT_EQ(me.json()["role"], "viewer") << me.body;
  EXPECT_EQ(me.json()["scopes"], json({"rentals:read"}));
  // The token keeps only what the creator's new role allows.
  me = on(*b_, "GET", "/v1/me", bearer(token));
  EXPECT_EQ(me.json()["scopes"], json({"rentals:read"})) << me.body;

  // Removed on A: B's next request acts for no org, and the token dies with the membership.
  warm(*b_, session(member));
  auto removed = change_on_a("DELETE", "/v1/members/" + member.user_id, session(owner));
  ASSERT_EQ(removed.status, 204) << removed.body;
  EXPECT_EQ(on(*b_, "GET", "/v1/ssh-keys", session(member)).status, 403);
  EXPECT_EQ(on(*b_, "GET", "/v1/me", bearer(token)).status, 401);
}

TEST_F(CredentialCacheE2E, SwitchingOrgsOnOneReplicaShowsOnTheOther) {
  Login owner = account("owner@example.com", "Org");
  Login member = member_of(owner, "member", "member@example.com");
  std::string own_org = this->own_org(member);
  warm(*b_, session(member));
  EXPECT_EQ(on(*b_, "GET", "/v1/me", session(member)).json()["current_org_id"], owner.org_id);
  auto sw =
      change_on_a("POST", "/v1/session/org", session(member), json{{"org_id", own_org}}.dump());
  ASSERT_EQ(sw.status, 200) << sw.body;
  EXPECT_EQ(on(*b_, "GET", "/v1/me", session(member)).json()["current_org_id"], own_org);
}

TEST_F(CredentialCacheE2E, AdminDemotionByHandTakesEffectOnEveryReplica) {
  Login admin = platform_admin();
  auto [id, token] = this->token(session(admin), {"admin"});
  for (ServerProcess* s : {server_.get(), b_.get()}) {
    warm(*s, session(admin), "/v1/admin/orgs");
    warm(*s, bearer(token), "/v1/admin/orgs");
  }
  sql_announced("UPDATE users SET is_platform_admin = false WHERE id = '" + admin.user_id + "'");
  for (ServerProcess* s : {server_.get(), b_.get()}) {
    EXPECT_EQ(on(*s, "GET", "/v1/admin/orgs", session(admin)).status, 403);
    EXPECT_EQ(on(*s, "GET", "/v1/admin/orgs", bearer(token)).status, 403);
  }
}

TEST_F(CredentialCacheE2E, GuardrailAndScopeChangesByHandAreAnnounced) {
  Login owner = account("owner@example.com", "Org");
  auto [id, token] = this->token(session(owner), {"rentals:read", "ssh-keys:write"});
  warm(*b_, bearer(token));
  // Each waits until both replicas were told (sql_announced fails the test otherwise).
  sql_announced("UPDATE api_tokens SET max_days = 3 WHERE id = '" + id + "'");
  sql_announced("UPDATE orgs SET max_concurrent_gpus = 8 WHERE id = '" + owner.org_id + "'");
  sql_announced("UPDATE api_tokens SET scopes = '{rentals:read}' WHERE id = '" + id + "'");
  EXPECT_EQ(on(*b_, "GET", "/v1/me", bearer(token)).json()["scopes"], json({"rentals:read"}));
  // Writing uses behind announces nothing.
  long long quiet = metric(*b_, "gpurent_credential_cache_invalidations_total");
  sql("UPDATE api_tokens SET last_used_at = now() WHERE id = '" + id + "'");
  sql("UPDATE sessions SET last_seen_at = now()");
  // A marker sent after them arrives after anything they would have announced.
  sql_announced("UPDATE api_tokens SET max_days = 4 WHERE id = '" + id + "'");
  EXPECT_EQ(metric(*b_, "gpurent_credential_cache_invalidations_total"), quiet + 1);
}

TEST_F(CredentialCacheE2E, ATokenExpiresFromMemoryAtItsTime) {
  Login owner = account("owner@example.com", "Org");
  auto r = on(*server_, "POST", "/v1/api-tokens", session(owner),
              json{{"name", "short"}, {"scopes", {"rentals:read"}}, {"expires_in_days", 1}}.dump());
  ASSERT_EQ(r.status, 201) << r.body;
  std::string token = r.json()["token"];
  warm(*b_, bearer(token));
  auto moved = on(*b_, "POST", "/v1/admin/test-clock", {}, R"({"advance_seconds": 90000})");
  ASSERT_EQ(moved.status, 200) << moved.body;
  EXPECT_EQ(on(*b_, "GET", "/v1/me", bearer(token)).status, 401);
}

TEST_F(CredentialCacheE2E, AReplicaWhoseListenerReconnectsDropsWhatItHolds) {
  Login owner = account("owner@example.com", "Org");
  auto [id, token] = this->token(session(owner), {"rentals:read"});
  warm(*b_, bearer(token));
  long long reconnects = metric(*b_, "gpurent_notify_reconnects_total");
  // Every listener loses its connection, then the token is revoked with triggers off: no
  // replica is told. A reconnected listener must not trust what it held before.
  sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
      " WHERE application_name = 'gpurent_listener' AND datname = current_database()");
  sql("SET session_replication_role = replica; UPDATE api_tokens SET revoked_at = now()"
      " WHERE id = '" +
      id + "'");
  ASSERT_TRUE(wait_for([&] { return metric(*b_, "gpurent_notify_reconnects_total") > reconnects; },
                       kWaitLimit, std::chrono::milliseconds(20)));
  EXPECT_EQ(on(*b_, "GET", "/v1/me", bearer(token)).status, 401);
}

TEST_F(CredentialCacheE2E, UsesAreWrittenBehindAndFlushedAtShutdown) {
  Login owner = account("owner@example.com", "Org");
  auto [id, token] = this->token(session(owner), {"rentals:read"});
  ASSERT_EQ(on(*b_, "GET", "/v1/me", bearer(token)).status, 200);
  // The first use is written within the write-behind period, off the request path.
  EXPECT_TRUE(wait_for(
      [&] {
        return sql_int("SELECT count(*) FROM api_tokens WHERE id = '" + id +
                       "' AND last_used_at IS NOT NULL") == 1;
      },
      kWaitLimit, std::chrono::milliseconds(20)));
  long long first = sql_int(
      "SELECT (extract(epoch FROM last_used_at) * 1000000)::bigint FROM api_tokens"
      " WHERE id = '" +
      id + "'");
  // Later uses within the minute are not written one by one, but the last of them is
  // written when the replica stops.
  auto moved = on(*b_, "POST", "/v1/admin/test-clock", {}, R"({"advance_seconds": 30})");
  ASSERT_EQ(moved.status, 200);
  ASSERT_EQ(on(*b_, "GET", "/v1/me", bearer(token)).status, 200);
  EXPECT_EQ(sql_int("SELECT (extract(epoch FROM last_used_at) * 1000000)::bigint FROM api_tokens"
                    " WHERE id = '" +
                    id + "'"),
            first);
  EXPECT_EQ(b_->stop(), "");
  EXPECT_GE(sql_int("SELECT (extract(epoch FROM last_used_at) * 1000000)::bigint FROM api_tokens"
                    " WHERE id = '" +
                    id + "'"),
            first + 30'000'000);
}

}  // namespace gpurent::testing::credential_cache_e2e
