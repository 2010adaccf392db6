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
namespace {

using testing::TestDatabase;
using Kind = IdempotencyClaim::Kind;
using namespace std::chrono_literals;

class IdempotencyStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto [u, o] = identity_.create_user_with_org("one@example.com", "hash", "One", {"", ""});
    key_ = {
        .scope = o.id + "/" + u.id, .key_hash = "hash-of-key-1", .org_id = o.id, .user_id = u.id};
  }

  int rows() {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx.exec("SELECT count(*) FROM idempotency_keys")[0][0].as<int>();
  }

  TestDatabase db_;
  PgPool pool_{{.url = db_.url(), .size = 16}};
  TestClock clock_;
  IdentityStore identity_{pool_, clock_};
  IdempotencyStore store_{pool_, clock_, {.ttl = 24h, .lease = 60s}};
  IdempotencyKeyRef key_;
};

TEST_F(IdempotencyStoreTest, FirstClaimStartsThenSameRequestSeesRunningThenDone) {
  EXPECT_EQ(store_.claim(key_, "req-a").kind, Kind::kStarted);
  EXPECT_EQ(store_.claim(key_, "req-a").kind, Kind::kRunning);
  EXPECT_TRUE(store_.complete(key_, "req-a", 201, std::string("sealed\0bytes", 12)));
  auto replay = store_.claim(key_, "req-a");
  EXPECT_EQ(replay.kind, Kind::kDone);
  EXPECT_EQ(replay.status, 201);
  EXPECT_EQ(replay.response, std::string("sealed\0bytes", 12));
  EXPECT_EQ(rows(), 1);
}

TEST_F(IdempotencyStoreTest, AnotherRequestWithTheKeyIsAMismatchWhileRunningAndWhenDone) {
  EXPECT_EQ(store_.claim(key_, "req-a").kind, Kind::kStarted);
  EXPECT_EQ(store_.claim(key_, "req-b").kind, Kind::kMismatch);
  store_.complete(key_, "req-a", 200, "x");
  EXPECT_EQ(store_.claim(key_, "req-b").kind, Kind::kMismatch);
  // Completing with the wrong request hash changes nothing.
  EXPECT_FALSE(store_.complete(key_, "req-b", 500, "y"));
  EXPECT_EQ(store_.claim(key_, "req-a").status, 200);
}

TEST_F(IdempotencyStoreTest, KeysAreSeparatePerScope) {
  auto [u2, o2] = identity_.create_user_with_org("two@example.com", "hash", "Two", {"", ""});
  IdempotencyKeyRef other{
      .scope = o2.id + "/" + u2.id, .key_hash = key_.key_hash, .org_id = o2.id, .user_id = u2.id};
  EXPECT_EQ(store_.claim(key_, "req-a").kind, Kind::kStarted);
  EXPECT_EQ(store_.claim(other, "req-b").kind, Kind::kStarted);
  EXPECT_EQ(rows(), 2);
}

TEST_F(IdempotencyStoreTest, ReleasedClaimRunsAgain) {
  EXPECT_EQ(store_.claim(key_, "req-a").kind, Kind::kStarted);
  store_.release(key_, "req-a");
  EXPECT_EQ(rows(), 0);
  EXPECT_EQ(store_.claim(key_, "req-a").kind, Kind::kStarted);
}

TEST_F(IdempotencyStoreTest, ReleaseNeverDeletesAFinishedResponse) {
  store_.claim(key_, "req-a");
  store_.complete(key_, "req-a", 201, "x");
  store_.release(key_, "req-a");
  EXPECT_EQ(store_.claim(key_, "req-a").kind, Kind::kDone);
}

TEST_F(IdempotencyStoreTest, AnAbandonedClaimIsTakenOverAfterItsLeaseBySameRequestOnly) {
  EXPECT_EQ(store_.claim(key_, "req-a").kind, Kind::kStarted);
  clock_.advance(59s);
  EXPECT_EQ(store_.claim(key_, "req-a").kind, Kind::kRunning);
  clock_.advance(2s);
  EXPECT_EQ(store_.claim(key_, "req-b").kind, Kind::kMismatch);
  EXPECT_EQ(store_.claim(key_, "req-a").kind, Kind::kStarted);
  // Both runs hold the same request hash: whichever completes first stores the response.
  EXPECT_TRUE(store_.complete(key_, "req-a", 201, "x"));
  EXPECT_EQ(store_.claim(key_, "req-a").kind, Kind::kDone);
}

TEST_F(IdempotencyStoreTest, KeysExpireAfterTheTtlAndArePurged) {
  store_.claim(key_, "req-a");
  store_.complete(key_, "req-a", 201, "x");
  clock_.advance(23h);
  EXPECT_EQ(store_.claim(key_, "req-b").kind, Kind::kMismatch);
  EXPECT_EQ(store_.purge_expired(), 0);
  clock_.advance(2h);
  // Past the TTL the key is free again, for any request.
  EXPECT_EQ(store_.claim(key_, "req-b").kind, Kind::kStarted);
  store_.complete(key_, "req-b", 200, "y");

  IdempotencyKeyRef old = key_;
  old.key_hash = "hash-of-key-2";
  store_.claim(old, "req-c");
  EXPECT_EQ(rows(), 2);
  clock_.advance(25h);
  EXPECT_EQ(store_.purge_expired(), 2);
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
        auto c = store_.claim(k, "req");
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
  store_.claim(key_, "req-a");
  pqxx::connection c(db_.url());
  pqxx::work tx(c);
  tx.exec_params("DELETE FROM memberships WHERE user_id = $1", key_.user_id);
  tx.exec_params("DELETE FROM users WHERE id = $1", key_.user_id);
  tx.commit();
  EXPECT_EQ(rows(), 0);
}

}  // namespace
}  // namespace gpurent::identity
