// IdempotencyStore against a real PostgreSQL: one claim wins under concurrency, replays,
// mismatches, abandoned claims, expiry and purging.
#include "identity/idempotency_store.h"

#include "identity/identity_store.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <atomic>
#include <latch>
#include <thread>
#include <vector>

namespace gpurent::identity {
namespace idempotency_store_pgtest {

using testing::TestDatabase;
using Kind = IdempotencyClaim::Kind;
using namespace std::chrono_literals;

// Each call is a transaction of its own, as the HTTP layer (api/idempotency.cpp) makes it.
class IdempotencyStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto [u, o] = signup("one@example.com", "One");
    key_ = {
        .scope = o.id + "/" + u.id, .key_hash = "hash-of-key-1", .org_id = o.id, .user_id = u.id};
  }

  std::pair<User, Org> signup(const std::string& email, const std::string& org_name) {
    return pool_.transact("identity_signup", [&](Tx& tx) {
      return identity_.create_user_with_org(tx, email, "hash", org_name, {});
    });
  }
  IdempotencyClaim claim(const IdempotencyKeyRef& key, const std::string& request_hash) {
    return pool_.transact("idempotency_claim",
                          [&](Tx& tx) { return store_.claim(tx, key, request_hash); });
  }
  bool complete(const IdempotencyKeyRef& key, const std::string& request_hash, int status,
                const std::string& sealed_response) {
    return pool_.transact("idempotency_complete", [&](Tx& tx) {
      return store_.complete(tx, key, request_hash, status, sealed_response);
    });
  }
  void release(const IdempotencyKeyRef& key, const std::string& request_hash) {
    pool_.transact("idempotency_release", [&](Tx& tx) { store_.release(tx, key, request_hash); });
  }
  int purge_expired() {
    return pool_.transact("idempotency_purge", [&](Tx& tx) { return store_.purge_expired(tx); });
  }

  int rows() {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx.exec("SELECT count(*) FROM idempotency_keys")[0][0].as<int>();
  }

  TestDatabase db_;
  PgPool pool_{{.url = db_.url(), .size = 16}};
  TestClock clock_;
  IdentityStore identity_{clock_};
  IdempotencyStore store_{clock_, {.ttl = 24h, .lease = 60s}};
  IdempotencyKeyRef key_;
};

TEST_F(IdempotencyStoreTest, FirstClaimStartsThenSameRequestSeesRunningThenDone) {
  EXPECT_EQ(claim(key_, "req-a").kind, Kind::kStarted);
  EXPECT_EQ(claim(key_, "req-a").kind, Kind::kRunning);
  EXPECT_TRUE(complete(key_, "req-a", 201, std::string("sealed\0bytes", 12)));
  auto replay = claim(key_, "req-a");
  EXPECT_EQ(replay.kind, Kind::kDone);
  EXPECT_EQ(replay.status, 201);
  EXPECT_EQ(replay.response, std::string("sealed\0bytes", 12));
  EXPECT_EQ(rows(), 1);
}

TEST_F(IdempotencyStoreTest, AnotherRequestWithTheKeyIsAMismatchWhileRunningAndWhenDone) {
  EXPECT_EQ(claim(key_, "req-a").kind, Kind::kStarted);
  EXPECT_EQ(claim(key_, "req-b").kind, Kind::kMismatch);
  complete(key_, "req-a", 200, "x");
  EXPECT_EQ(claim(key_, "req-b").kind, Kind::kMismatch);
  // Completing with the wrong request hash changes nothing.
  EXPECT_FALSE(complete(key_, "req-b", 500, "y"));
  EXPECT_EQ(claim(key_, "req-a").status, 200);
}

TEST_F(IdempotencyStoreTest, KeysAreSeparatePerScope) {
  auto [u2, o2] = signup("two@example.com", "Two");
  IdempotencyKeyRef other{
      .scope = o2.id + "/" + u2.id, .key_hash = key_.key_hash, .org_id = o2.id, .user_id = u2.id};
  EXPECT_EQ(claim(key_, "req-a").kind, Kind::kStarted);
  EXPECT_EQ(claim(other, "req-b").kind, Kind::kStarted);
  EXPECT_EQ(rows(), 2);
}

TEST_F(IdempotencyStoreTest, ReleasedClaimRunsAgain) {
  EXPECT_EQ(claim(key_, "req-a").kind, Kind::kStarted);
  release(key_, "req-a");
  EXPECT_EQ(rows(), 0);
  EXPECT_EQ(claim(key_, "req-a").kind, Kind::kStarted);
}

TEST_F(IdempotencyStoreTest, ReleaseNeverDeletesAFinishedResponse) {
  claim(key_, "req-a");
  complete(key_, "req-a", 201, "x");
  release(key_, "req-a");
  EXPECT_EQ(claim(key_, "req-a").kind, Kind::kDone);
}

TEST_F(IdempotencyStoreTest, AnAbandonedClaimIsTakenOverAfterItsLeaseBySameRequestOnly) {
  EXPECT_EQ(claim(key_, "req-a").kind, Kind::kStarted);
  clock_.advance(59s);
  EXPECT_EQ(claim(key_, "req-a").kind, Kind::kRunning);
  clock_.advance(2s);
  EXPECT_EQ(claim(key_, "req-b").kind, Kind::kMismatch);
  EXPECT_EQ(claim(key_, "req-a").kind, Kind::kStarted);
  // Both runs hold the same request hash: whichever completes first stores the response.
  EXPECT_TRUE(complete(key_, "req-a", 201, "x"));
  EXPECT_EQ(claim(key_, "req-a").kind, Kind::kDone);
}

TEST_F(IdempotencyStoreTest, KeysExpireAfterTheTtlAndArePurged) {
  claim(key_, "req-a");
  complete(key_, "req-a", 201, "x");
  clock_.advance(23h);
  EXPECT_EQ(claim(key_, "req-b").kind, Kind::kMismatch);
  EXPECT_EQ(purge_expired(), 0);
  clock_.advance(2h);
  // Past the TTL the key is free again, for any request.
  EXPECT_EQ(claim(key_, "req-b").kind, Kind::kStarted);
  complete(key_, "req-b", 200, "y");

  IdempotencyKeyRef old = key_;
  old.key_hash = "hash-of-key-2";
  claim(old, "req-c");
  EXPECT_EQ(rows(), 2);
  clock_.advance(25h);
  EXPECT_EQ(purge_expired(), 2);
  EXPECT_EQ(rows(), 0);
}

TEST_F(IdempotencyStoreTest, ConcurrentClaimsOfOneKeyStartExactlyOnce) {
  for (int round = 0; round < 20; ++round) {
    IdempotencyKeyRef k = key_;
    k.key_hash = "race-" + std::to_string(round);
    std::atomic<int> started{0}, running{0}, other{0};
    std::vector<std::thread> threads;
    constexpr int kThreads = 8;
    std::latch go(kThreads);  // all claim at once
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        go.arrive_and_wait();
        auto c = claim(k, "req");
        (c.kind == Kind::kStarted ? started : c.kind == Kind::kRunning ? running : other)++;
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(started.load(), 1) << "round " << round;
    EXPECT_EQ(running.load(), 7) << "round " << round;
    EXPECT_EQ(other.load(), 0) << "round " << round;
  }
}

TEST_F(IdempotencyStoreTest, DeletingTheUserDeletesTheirKeys) {
  claim(key_, "req-a");
  pqxx::connection c(db_.url());
  pqxx::work tx(c);
  tx.exec_params("DELETE FROM memberships WHERE user_id = $1", key_.user_id);
  tx.exec_params("DELETE FROM users WHERE id = $1", key_.user_id);
  tx.commit();
  EXPECT_EQ(rows(), 0);
}

}  // namespace idempotency_store_pgtest
}  // namespace gpurent::identity
