// IdempotencyStore against a real PostgreSQL: the key's lock (one holder across
// connections, gone with its transaction), stored responses that exist only if their
// transaction committed, expiry and purging.
#include "identity/idempotency_store.h"

#include "identity/identity_store.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <atomic>
#include <future>
#include <latch>
#include <thread>
#include <vector>

namespace gpurent::identity {
namespace idempotency_store_pgtest {

using testing::TestDatabase;
using namespace std::chrono_literals;

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
  // A request's unit as the HTTP layer makes it: lock, look, store.
  bool store(const IdempotencyKeyRef& key, const std::string& request_hash, int status,
             const std::string& sealed) {
    return pool_.transact("idempotency_store", [&](Tx& tx) {
      EXPECT_TRUE(store_.lock(tx, key));
      return store_.store(tx, key, request_hash, status, sealed);
    });
  }
  std::optional<StoredResponse> find(const IdempotencyKeyRef& key) {
    return pool_.transact("idempotency_find", [&](Tx& tx) { return store_.find(tx, key); });
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
  IdempotencyStore store_{clock_, {.ttl = 24h}};
  IdempotencyKeyRef key_;
};

TEST_F(IdempotencyStoreTest, AStoredResponseIsFoundWithItsRequestHash) {
  EXPECT_FALSE(find(key_));
  EXPECT_TRUE(store(key_, "req-a", 201, std::string("sealed\0bytes", 12)));
  auto stored = find(key_);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->request_hash, "req-a");
  EXPECT_EQ(stored->status, 201);
  EXPECT_EQ(stored->response, std::string("sealed\0bytes", 12));
  // A live response is never replaced, whatever the request.
  EXPECT_FALSE(store(key_, "req-b", 200, "y"));
  EXPECT_EQ(find(key_)->request_hash, "req-a");
  EXPECT_EQ(rows(), 1);
}

// The response and the work share a transaction: a rollback (or a COMMIT that never
// arrived) leaves no trace, so the retry runs afresh.
TEST_F(IdempotencyStoreTest, AStoreThatRollsBackLeavesNoTrace) {
  EXPECT_THROW(pool_.transact("idempotency_store",
                              [&](Tx& tx) {
                                ASSERT_TRUE(store_.lock(tx, key_));
                                store_.store(tx, key_, "req-a", 201, "x");
                                throw Error(ErrorCode::kConflict, "the work failed");
                              }),
               Error);
  EXPECT_FALSE(find(key_));
  EXPECT_EQ(rows(), 0);
  EXPECT_TRUE(store(key_, "req-a", 201, "x"));
}

TEST_F(IdempotencyStoreTest, KeysAreSeparatePerScope) {
  auto [u2, o2] = signup("two@example.com", "Two");
  IdempotencyKeyRef other{
      .scope = o2.id + "/" + u2.id, .key_hash = key_.key_hash, .org_id = o2.id, .user_id = u2.id};
  EXPECT_TRUE(store(key_, "req-a", 201, "x"));
  EXPECT_TRUE(store(other, "req-b", 201, "y"));
  EXPECT_EQ(find(other)->request_hash, "req-b");
  EXPECT_EQ(rows(), 2);
}

// One holder at a time across connections (replicas), released by COMMIT or ROLLBACK, and
// by the server when the holder's connection dies: no key outlives its transaction.
TEST_F(IdempotencyStoreTest, TheKeysLockHasOneHolderAndEndsWithItsTransaction) {
  PgPool other{{.url = db_.url(), .size = 2}};
  auto try_elsewhere = [&](const IdempotencyKeyRef& k) {
    return other.transact("idempotency_lock", [&](Tx& tx) { return store_.lock(tx, k); });
  };
  IdempotencyKeyRef second = key_;
  second.key_hash = "hash-of-key-2";
  pool_.transact("holder", [&](Tx& tx) {
    ASSERT_TRUE(store_.lock(tx, key_));
    EXPECT_FALSE(try_elsewhere(key_)) << "held by this transaction";
    EXPECT_TRUE(try_elsewhere(second)) << "another key is free";
  });
  EXPECT_TRUE(try_elsewhere(key_)) << "released at COMMIT";

  // A holder whose connection dies (its replica crashed): the server frees the lock.
  PgPool holder{{.url = db_.url(), .size = 1}};
  std::promise<int> locked;
  std::promise<void> resume;
  std::thread t([&] {
    int attempt = 0;
    holder.transact("holder", [&](Tx& tx) {
      if (++attempt > 1) return;  // the run after the lost connection: nothing to hold
      EXPECT_TRUE(store_.lock(tx, key_));
      locked.set_value(tx.exec_fixed("SELECT pg_backend_pid()")[0][0].as<int>());
      resume.get_future().wait();
      tx.exec_fixed("SELECT 1");  // finds the connection gone
    });
  });
  int pid = locked.get_future().get();
  EXPECT_FALSE(try_elsewhere(key_));
  {
    pqxx::connection admin(db_.url());
    pqxx::nontransaction a(admin);
    a.exec_params("SELECT pg_terminate_backend($1)", pid);
  }
  for (int i = 0; i < 100 && !try_elsewhere(key_); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(try_elsewhere(key_)) << "freed with the dead connection";
  resume.set_value();
  t.join();
}

TEST_F(IdempotencyStoreTest, KeysExpireAfterTheTtlAndArePurged) {
  store(key_, "req-a", 201, "x");
  clock_.advance(23h);
  EXPECT_TRUE(find(key_));
  EXPECT_EQ(purge_expired(), 0);
  clock_.advance(2h);
  // Past the TTL the key is free again, for any request.
  EXPECT_FALSE(find(key_));
  EXPECT_TRUE(store(key_, "req-b", 200, "y"));
  EXPECT_EQ(find(key_)->request_hash, "req-b");

  IdempotencyKeyRef old = key_;
  old.key_hash = "hash-of-key-2";
  store(old, "req-c", 201, "z");
  EXPECT_EQ(rows(), 2);
  clock_.advance(25h);
  EXPECT_EQ(purge_expired(), 2);
  EXPECT_EQ(rows(), 0);
}

// Claims a version that kept them in transactions of their own may have left behind are
// not answers: a request with the key runs and its response replaces the claim.
TEST_F(IdempotencyStoreTest, AnOldRunningClaimIsReplaced) {
  {
    pqxx::connection c(db_.url());
    pqxx::work tx(c);
    tx.exec_params(
        "INSERT INTO idempotency_keys (scope, key_hash, org_id, user_id, request_hash, state,"
        " created_at, running_until) VALUES ($1, $2, $3, $4, 'req-a', 'running', now(), now())",
        key_.scope, key_.key_hash, *key_.org_id, key_.user_id);
    tx.commit();
  }
  EXPECT_FALSE(find(key_));
  EXPECT_TRUE(store(key_, "req-a", 201, "x"));
  EXPECT_EQ(find(key_)->status, 201);
}

TEST_F(IdempotencyStoreTest, ConcurrentLocksOfOneKeyHaveOneWinner) {
  for (int round = 0; round < 20; ++round) {
    IdempotencyKeyRef k = key_;
    k.key_hash = "race-" + std::to_string(round);
    std::atomic<int> won{0}, refused{0};
    std::vector<std::thread> threads;
    constexpr int kThreads = 8;
    std::latch go(kThreads);
    std::latch done(kThreads);  // every transaction stays open until all have tried
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        pool_.transact("idempotency_lock", [&](Tx& tx) {
          go.arrive_and_wait();
          (store_.lock(tx, k) ? won : refused)++;
          done.arrive_and_wait();
        });
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(won.load(), 1) << "round " << round;
    EXPECT_EQ(refused.load(), 7) << "round " << round;
  }
}

TEST_F(IdempotencyStoreTest, DeletingTheUserDeletesTheirKeys) {
  store(key_, "req-a", 201, "x");
  pqxx::connection c(db_.url());
  pqxx::work tx(c);
  tx.exec_params("DELETE FROM memberships WHERE user_id = $1", key_.user_id);
  tx.exec_params("DELETE FROM users WHERE id = $1", key_.user_id);
  tx.commit();
  EXPECT_EQ(rows(), 0);
}

}  // namespace idempotency_store_pgtest
}  // namespace gpurent::identity
