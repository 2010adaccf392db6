// PgPool against a real PostgreSQL: bounds, waiting, timeouts, reconnects, prepared statements.
#include "core/db_pool.h"

#include "core/blocking.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <latch>
#include <thread>
#include <vector>

namespace gpurent {
namespace db_pool_pgtest {

using testing::TestDatabase;
using namespace std::chrono_literals;

constexpr Statement kBackendPid = {"backend_pid", "SELECT pg_backend_pid()"};
constexpr Statement kAddOne = {"add_one", "SELECT $1::int + 1"};

PgPoolOptions options(const TestDatabase& db, int size, std::chrono::milliseconds wait = 2000ms,
                      std::chrono::milliseconds statement_timeout = 5000ms) {
  return {
      .url = db.url(), .size = size, .wait_timeout = wait, .statement_timeout = statement_timeout};
}

int backend_pid(PgPool& pool) {
  return pool.transact("pid", [](Tx& tx) { return tx.exec(kBackendPid)[0][0].as<int>(); });
}

TEST(PgPool, ReusesConnectionsAndRunsPreparedStatements) {
  TestDatabase db;
  PgPool pool(options(db, 2));
  int first = backend_pid(pool);
  EXPECT_EQ(backend_pid(pool), first) << "an idle connection should be reused";
  int n = pool.transact("add", [](Tx& tx) { return tx.exec(kAddOne, 41)[0][0].as<int>(); });
  EXPECT_EQ(n, 42);
  auto s = pool.stats();
  EXPECT_EQ(s.open, 1);
  EXPECT_EQ(s.in_use, 0);
}

// What a request costs the database, as /metrics reports it: PREPARE once per connection,
// one round trip per statement, BEGIN and COMMIT per transaction, none for a single read.
TEST(PgPool, CountsItsRoundTrips) {
  TestDatabase db;
  PgPool pool(options(db, 1));
  constexpr Statement kOne = {"round_trip_one", "SELECT 1"};
  auto before = pool.stats().round_trips_total;
  pool.transact("first", [&](Tx& tx) { tx.exec(kOne); });
  EXPECT_EQ(pool.stats().round_trips_total - before, 4u) << "BEGIN, PREPARE, statement, COMMIT";
  before = pool.stats().round_trips_total;
  pool.transact("again", [&](Tx& tx) { tx.exec(kOne); });
  EXPECT_EQ(pool.stats().round_trips_total - before, 3u) << "prepared already";
  before = pool.stats().round_trips_total;
  pool.read("read", [&](Tx& tx) { return tx.exec(kOne); });
  EXPECT_EQ(pool.stats().round_trips_total - before, 1u) << "no BEGIN or COMMIT";
}

// read() runs outside any transaction: there is nothing to set a savepoint in, and saying
// so beats a savepoint PostgreSQL would refuse with a warning and ignore.
TEST(PgPool, ASavepointNeedsATransaction) {
  TestDatabase db;
  PgPool pool(options(db, 1));
  constexpr Statement kOne = {"savepoint_one", "SELECT 1"};
  pool.read("read", [&](Tx& tx) {
    EXPECT_FALSE(tx.in_transaction());
    EXPECT_THROW((void)tx.attempt("nothing", [&](Tx& sub) { sub.exec(kOne); }), std::logic_error);
  });
  pool.transact("write", [&](Tx& tx) {
    EXPECT_TRUE(tx.in_transaction());
    EXPECT_TRUE(tx.attempt("something", [&](Tx& sub) { sub.exec(kOne); }).ok());
  });
}

// A network thread trying a handler inline must never wait for a connection: the pool
// refuses at once, before taking or opening one, so the request can go to a worker.
TEST(PgPool, RefusesWhereBlockingIsForbidden) {
  TestDatabase db;
  PgPool pool(options(db, 1));
  auto before = pool.stats();
  {
    NoBlockingScope no_blocking;
    EXPECT_THROW(pool.acquire(), WouldBlock);
    EXPECT_THROW(pool.read("read", [](Tx& tx) { return tx.exec_fixed("SELECT 1"); }), WouldBlock);
  }
  auto after = pool.stats();
  EXPECT_EQ(after.acquired_total, before.acquired_total);
  EXPECT_EQ(after.open, before.open);
  EXPECT_EQ(pool.read("read", [](Tx& tx) { return tx.exec_fixed("SELECT 7")[0][0].as<int>(); }), 7)
      << "allowed again once the scope ends";
}

TEST(PgPool, ExhaustionWaitsThenTimesOutAsUnavailable) {
  TestDatabase db;
  PgPool pool(options(db, 1, 200ms));
  auto held = pool.acquire();
  auto start = std::chrono::steady_clock::now();
  try {
    auto second = pool.acquire();
    FAIL() << "acquire should time out while the only connection is leased";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, 190ms) << "it must wait before giving up";
  EXPECT_EQ(pool.stats().wait_timeouts_total, 1u);
}

TEST(PgPool, WaiterGetsTheConnectionWhenReleased) {
  TestDatabase db;
  PgPool pool(options(db, 1, 5000ms));
  auto held = std::make_unique<PgPool::Lease>(pool.acquire());
  auto waiter = std::async(std::launch::async, [&] {
    auto lease = pool.acquire();
    return true;
  });
  EXPECT_EQ(waiter.wait_for(100ms), std::future_status::timeout) << "waiter must block";
  held.reset();
  EXPECT_TRUE(waiter.get());
}

TEST(PgPool, StatementTimeoutBecomesUnavailable) {
  TestDatabase db;
  PgPool pool(options(db, 1, 1000ms, 100ms));
  try {
    pool.transact("slow", [](Tx& tx) { tx.exec_fixed("SELECT pg_sleep(2)"); });
    FAIL() << "statement_timeout should cancel the query";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
  }
  EXPECT_EQ(backend_pid(pool) > 0, true) << "the connection stays usable after a timeout";
}

TEST(PgPool, ReconnectsAfterTheServerKillsTheConnection) {
  TestDatabase db;
  PgPool pool(options(db, 2));
  int old_pid = backend_pid(pool);
  {
    pqxx::connection admin(db.url());
    pqxx::nontransaction tx(admin);
    tx.exec_params("SELECT pg_terminate_backend($1)", old_pid);
  }
  // The first use of the dead connection fails cleanly as unavailable…
  try {
    backend_pid(pool);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
  }
  // …and the pool then opens a new one, with its prepared statements prepared again.
  int new_pid = backend_pid(pool);
  EXPECT_NE(new_pid, old_pid);
  EXPECT_GE(pool.stats().broken_total, 1u);
}

TEST(PgPool, RetriesSerializationFailures) {
  TestDatabase db;
  PgPool pool(options(db, 1));
  int calls = 0;
  int result = pool.transact("retry", [&](Tx&) {
    if (++calls == 1) throw pqxx::serialization_failure("simulated");
    return 7;
  });
  EXPECT_EQ(result, 7);
  EXPECT_EQ(calls, 2);
}

TEST(PgPool, RollsBackWhenTheFunctionThrows) {
  TestDatabase db;
  PgPool pool(options(db, 1));
  pool.transact("create", [](Tx& tx) { tx.exec_fixed("CREATE TABLE t (x int)"); });
  EXPECT_THROW(pool.transact("insert",
                             [](Tx& tx) {
                               tx.exec_fixed("INSERT INTO t VALUES (1)");
                               throw Error(ErrorCode::kConflict, "changed my mind");
                             }),
               Error);
  int count = pool.transact(
      "count", [](Tx& tx) { return tx.exec_fixed("SELECT count(*) FROM t")[0][0].as<int>(); });
  EXPECT_EQ(count, 0);
}

TEST(PgPool, ManyThreadsShareASmallPool) {
  TestDatabase db;
  PgPool pool(options(db, 3, 10000ms));
  pool.transact("create", [](Tx& tx) { tx.exec_fixed("CREATE TABLE hits (n int)"); });
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  constexpr int kThreads = 8;
  std::latch go(kThreads);  // all contend from the start
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      go.arrive_and_wait();
      for (int i = 0; i < 25; ++i) {
        try {
          pool.transact("hit", [](Tx& tx) { tx.exec_fixed("INSERT INTO hits VALUES (1)"); });
        } catch (...) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  auto stats = pool.stats();
  EXPECT_LE(stats.open, 3);
  EXPECT_EQ(stats.in_use, 0);
  int count = pool.transact(
      "count", [](Tx& tx) { return tx.exec_fixed("SELECT count(*) FROM hits")[0][0].as<int>(); });
  EXPECT_EQ(count, 200);
}

TEST(PgPool, UnreachableDatabaseIsUnavailableNotACrash) {
  PgPool pool({.url = "postgresql://gpurent@/nope?host=/nonexistent-socket-dir", .size = 1});
  try {
    pool.acquire();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
  }
  EXPECT_EQ(pool.stats().open, 0) << "a failed connect must give its slot back";
  EXPECT_EQ(pool.stats().connect_failures_total, 1u);
}

// Both forms of DATABASE_URL, a multi-host one included, reach libpq as written, with only
// what the pool or the listener adds at the end; a setting the URL has is kept.
TEST(PgPool, ConnectionSettingsAreAddedToTheUrlAsWritten) {
  const std::string multi =
      "postgresql://u@db-a:5432,db-b:5432/gpurent?target_session_attrs=read-write";
  EXPECT_EQ(conninfo_with_default(multi, "connect_timeout", "2"), multi + "&connect_timeout=2");
  EXPECT_EQ(conninfo_with_default("postgresql://u@db/gpurent", "connect_timeout", "3"),
            "postgresql://u@db/gpurent?connect_timeout=3");
  EXPECT_EQ(conninfo_with_default("host=db-a,db-b dbname=gpurent", "connect_timeout", "2"),
            "host=db-a,db-b dbname=gpurent connect_timeout=2");
  const std::string chosen = "postgresql://u@db/gpurent?connect_timeout=10";
  EXPECT_EQ(conninfo_with_default(chosen, "connect_timeout", "2"), chosen);
  EXPECT_EQ(conninfo_with("host=db application_name=x", "application_name", "y"),
            "host=db application_name=x application_name=y")
      << "libpq takes the last";
}

// A database address that no longer answers (the host of a primary that failed over, a
// firewall that drops packets): a connect must not wait for the kernel to give up on its SYNs,
// about two minutes in which a worker and a pool slot are held and /readyz hangs. A listening
// socket whose accept queue is full and never read drops SYNs the same way.
TEST(PgPool, AConnectNobodyAnswersIsUnavailableWithinTheWait) {
  int silent = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(bind(silent, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(silent, 0), 0);
  ASSERT_EQ(getsockname(silent, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  int filler = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(filler, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);

  PgPool pool(
      {.url = "postgresql://gpurent@127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/nope",
       .size = 1,
       .wait_timeout = 2000ms});
  auto start = std::chrono::steady_clock::now();
  auto attempt = std::async(std::launch::async, [&] {
    try {
      pool.acquire();
      return std::string("connected");
    } catch (const Error& e) {
      return std::string(e.code() == ErrorCode::kUnavailable ? "unavailable" : e.what());
    }
  });
  bool answered = attempt.wait_for(10s) == std::future_status::ready;
  // Refused from now on, so a connect still waiting ends at its next SYN.
  close(filler);
  close(silent);
  EXPECT_TRUE(answered) << "acquire() still waiting on an unanswered connect after 10 s";
  EXPECT_EQ(attempt.get(), "unavailable");
  if (answered) {
    EXPECT_LT(std::chrono::steady_clock::now() - start, 6s)
        << "about the pool's wait (libpq's minimum connect_timeout is 2 s)";
  }
  EXPECT_EQ(pool.stats().open, 0);
}

// A connection the server drops mid-transaction (a restart, an operator's kill): the
// transaction certainly rolled back, so the pool runs it again on a fresh connection and
// the caller sees it done once, not an error.
TEST(PgPool, ATransactionWhoseConnectionDiesBeforeCommitRunsAgain) {
  TestDatabase db;
  PgPool pool(options(db, 2));
  pool.transact("create", [](Tx& tx) { tx.exec_fixed("CREATE TABLE t (x int)"); });
  int calls = 0;
  pool.transact("insert", [&](Tx& tx) {
    tx.exec_fixed("INSERT INTO t VALUES (1)");
    if (++calls == 1) {
      int pid = tx.exec(kBackendPid)[0][0].as<int>();
      pqxx::connection admin(db.url());
      pqxx::nontransaction a(admin);
      a.exec_params("SELECT pg_terminate_backend($1)", pid);
      tx.exec_fixed("SELECT 1");  // the server is gone from under this statement
    }
  });
  EXPECT_EQ(calls, 2);
  int count = pool.transact(
      "count", [](Tx& tx) { return tx.exec_fixed("SELECT count(*) FROM t")[0][0].as<int>(); });
  EXPECT_EQ(count, 1);
}

// A unit's nested transactions and reads join it: they see its writes, commit only with
// it, and a nested failure undoes its own statements alone.
TEST(PgPool, AUnitsNestedTransactionsCommitOrRollBackWithIt) {
  TestDatabase db;
  PgPool pool(options(db, 1));  // one connection: a nested call that took another would hang
  pool.transact("create", [](Tx& tx) { tx.exec_fixed("CREATE TABLE t (x int)"); });
  auto count = [&] {
    pqxx::connection c(db.url());
    pqxx::nontransaction n(c);
    return n.exec("SELECT count(*) FROM t")[0][0].as<int>();
  };
  pool.unit("outer", [&](Tx&) {
    pool.transact("first", [](Tx& tx) { tx.exec_fixed("INSERT INTO t VALUES (1)"); });
    EXPECT_EQ(count(), 0) << "nothing is durable before the unit commits";
    int seen = pool.read(
        "see", [](Tx& tx) { return tx.exec_fixed("SELECT count(*) FROM t")[0][0].as<int>(); });
    EXPECT_EQ(seen, 1) << "a read inside the unit sees its writes";
    EXPECT_THROW(pool.transact("second",
                               [](Tx& tx) {
                                 tx.exec_fixed("INSERT INTO t VALUES (2)");
                                 throw Error(ErrorCode::kConflict, "undo me");
                               }),
                 Error);
    EXPECT_THROW(pool.transact("third", [](Tx& tx) { tx.exec_fixed("SELECT 1/0"); }),
                 pqxx::sql_error);
    pool.transact("fourth", [](Tx& tx) { tx.exec_fixed("INSERT INTO t VALUES (4)"); });
  });
  EXPECT_EQ(count(), 2) << "the first and fourth inserts, not the failed ones";

  EXPECT_THROW(pool.unit("rolled_back",
                         [&](Tx&) {
                           pool.transact("inner",
                                         [](Tx& tx) { tx.exec_fixed("INSERT INTO t VALUES (5)"); });
                           throw Error(ErrorCode::kNotFound, "the unit fails after it");
                         }),
               Error);
  EXPECT_EQ(count(), 2) << "a unit's rollback takes its nested work with it";
}

TEST(PgPool, AfterCommitStepsRunOnlyOnceTheUnitCommits) {
  TestDatabase db;
  PgPool pool(options(db, 1));
  std::vector<std::string> steps;
  pool.unit("outer", [&](Tx&) {
    pool.after_commit([&] { steps.push_back("after"); });
    steps.push_back("inside");
  });
  EXPECT_EQ(steps, (std::vector<std::string>{"inside", "after"}));
  steps.clear();
  EXPECT_THROW(pool.unit("outer",
                         [&](Tx&) {
                           pool.after_commit([&] { steps.push_back("after"); });
                           throw Error(ErrorCode::kConflict, "no");
                         }),
               Error);
  EXPECT_TRUE(steps.empty()) << "a rolled-back unit runs none";
  pool.after_commit([&] { steps.push_back("now"); });
  EXPECT_EQ(steps, (std::vector<std::string>{"now"})) << "outside a unit: at once";
}

}  // namespace db_pool_pgtest
}  // namespace gpurent
