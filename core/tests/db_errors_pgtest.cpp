// Typed database failures against a real PostgreSQL: every constraint kind really violated,
// the savepoint that lets a booking try its next candidate, serialization failures and
// deadlocks as the server reports them.
#include "core/db_errors.h"
#include "core/db_pool.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

#include <latch>
#include <optional>
#include <thread>
#include <vector>

namespace gpurent {
namespace db_errors_pgtest {

using testing::TestDatabase;
using namespace std::chrono_literals;

PgPool make_pool(const TestDatabase& db) {
  return PgPool({.url = db.url(), .size = 2, .wait_timeout = 5000ms});
}

void exec(const TestDatabase& db, const std::string& sql) {
  pqxx::connection c(db.url());
  pqxx::nontransaction tx(c);
  tx.exec(sql);
}

int count(PgPool& pool, const std::string& sql) {
  return pool.transact("count", [&](Tx& tx) { return tx.exec_fixed(sql)[0][0].as<int>(); });
}

// The ConstraintViolation that running `sql` through PgPool::transact raises.
ConstraintViolation violation_of(PgPool& pool, const std::string& sql) {
  try {
    pool.transact("violate", [&](Tx& tx) { tx.exec_fixed(sql); });
  } catch (const ConstraintViolation& v) {
    return v;
  } catch (const std::exception& e) {
    ADD_FAILURE() << sql << ": expected a ConstraintViolation, got " << e.what();
    throw;
  }
  ADD_FAILURE() << sql << ": expected a ConstraintViolation, but it succeeded";
  throw std::logic_error("no violation");
}

// How classify() sees what libpqxx throws for `sql` on a plain connection, outside the pool.
DbFailure raw_failure(const TestDatabase& db, const std::string& sql) {
  pqxx::connection c(db.url());
  pqxx::work tx(c);
  try {
    tx.exec(sql);
  } catch (const std::exception& e) {
    return classify(e);
  }
  ADD_FAILURE() << sql << " succeeded";
  return DbFailure::kOther;
}

void expect_violation(const TestDatabase& db, PgPool& pool, const std::string& sql, DbFailure kind,
                      const std::string& sqlstate, const std::string& constraint) {
  SCOPED_TRACE(sql);
  ConstraintViolation v = violation_of(pool, sql);
  EXPECT_EQ(v.kind(), kind) << db_failure_name(v.kind());
  EXPECT_EQ(v.sqlstate(), sqlstate);
  EXPECT_EQ(v.constraint(), constraint) << v.what();
  std::string what = v.what();
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  EXPECT_EQ(what.rfind("ERROR", 0), std::string::npos) << what;
  EXPECT_EQ(raw_failure(db, sql), kind) << "classify() on libpqxx's own exception";
}

TEST(DbErrors, UniqueViolationIsTypedWithItsConstraint) {
  TestDatabase db;
  exec(db,
       "CREATE TABLE test_accounts (id int PRIMARY KEY, email text,"
       " CONSTRAINT accounts_email_key UNIQUE (email));"
       "INSERT INTO test_accounts VALUES (1, 'first@example.com')");
  PgPool pool = make_pool(db);
  expect_violation(db, pool, "INSERT INTO test_accounts VALUES (2, 'first@example.com')",
                   DbFailure::kUniqueViolation, "23505", "accounts_email_key");
  expect_violation(db, pool, "INSERT INTO test_accounts VALUES (1, 'second@example.com')",
                   DbFailure::kUniqueViolation, "23505", "test_accounts_pkey");
  // The row's values are in PostgreSQL's DETAIL line, which the message leaves out.
  ConstraintViolation v =
      violation_of(pool, "INSERT INTO test_accounts VALUES (3, 'first@example.com')");
  EXPECT_EQ(std::string(v.what()).find("first@example.com"), std::string::npos) << v.what();
  EXPECT_EQ(count(pool, "SELECT count(*) FROM test_accounts"), 1) << "nothing was written";
}

TEST(DbErrors, ExclusionViolationIsTypedWithItsConstraint) {
  TestDatabase db;  // migrated: btree_gist is installed, as the allocations table needs
  exec(db,
       "CREATE TABLE test_bookings (gpu int NOT NULL, period tstzrange NOT NULL,"
       " CONSTRAINT bookings_no_overlap EXCLUDE USING gist (gpu WITH =, period WITH &&));"
       "INSERT INTO test_bookings VALUES (1, '[2026-12-01, 2026-12-03)')");
  PgPool pool = make_pool(db);
  expect_violation(db, pool, "INSERT INTO test_bookings VALUES (1, '[2026-12-02, 2026-12-04)')",
                   DbFailure::kExclusionViolation, "23P01", "bookings_no_overlap");
  // A plain range exclusion needs no extension at all.
  exec(db,
       "CREATE TABLE test_slots (r int4range,"
       " CONSTRAINT slots_no_overlap EXCLUDE USING gist (r WITH &&));"
       "INSERT INTO test_slots VALUES ('[1, 5)')");
  expect_violation(db, pool, "INSERT INTO test_slots VALUES ('[4, 9)')",
                   DbFailure::kExclusionViolation, "23P01", "slots_no_overlap");
}

TEST(DbErrors, ForeignKeyViolationIsTypedOnInsertAndOnDelete) {
  TestDatabase db;
  exec(db,
       "CREATE TABLE test_parents (id int PRIMARY KEY);"
       "CREATE TABLE test_children (id int, parent_id int"
       " CONSTRAINT children_parent_fkey REFERENCES test_parents (id));"
       "INSERT INTO test_parents VALUES (1); INSERT INTO test_children VALUES (1, 1)");
  PgPool pool = make_pool(db);
  expect_violation(db, pool, "INSERT INTO test_children VALUES (2, 2)",
                   DbFailure::kForeignKeyViolation, "23503", "children_parent_fkey");
  // Refused from the other side, the message names the referencing table after the name.
  expect_violation(db, pool, "DELETE FROM test_parents WHERE id = 1",
                   DbFailure::kForeignKeyViolation, "23503", "children_parent_fkey");
}

TEST(DbErrors, CheckViolationIsTypedWithItsConstraint) {
  TestDatabase db;
  exec(db,
       "CREATE TABLE test_prices (amount_minor bigint"
       " CONSTRAINT prices_amount_positive CHECK (amount_minor > 0))");
  PgPool pool = make_pool(db);
  expect_violation(db, pool, "INSERT INTO test_prices VALUES (-100)", DbFailure::kCheckViolation,
                   "23514", "prices_amount_positive");
}

TEST(DbErrors, NotNullViolationIsTypedWithoutAConstraintName) {
  TestDatabase db;
  exec(db, "CREATE TABLE test_hosts (hostname text NOT NULL)");
  PgPool pool = make_pool(db);
  expect_violation(db, pool, "INSERT INTO test_hosts VALUES (NULL)", DbFailure::kNotNullViolation,
                   "23502", "");
}

TEST(DbErrors, ViolationFoundAtCommitIsTypedToo) {
  TestDatabase db;
  exec(db,
       "CREATE TABLE test_deferred (x int CONSTRAINT deferred_x_key UNIQUE DEFERRABLE INITIALLY "
       "DEFERRED);"
       "INSERT INTO test_deferred VALUES (1)");
  PgPool pool = make_pool(db);
  // The INSERT itself succeeds; PostgreSQL checks the constraint at COMMIT.
  ConstraintViolation v = violation_of(pool, "INSERT INTO test_deferred VALUES (1)");
  EXPECT_EQ(v.kind(), DbFailure::kUniqueViolation);
  EXPECT_EQ(v.constraint(), "deferred_x_key");
}

TEST(DbErrors, UnknownSqlstatesStayOtherAndAreNotRetyped) {
  TestDatabase db;
  PgPool pool = make_pool(db);
  for (const auto& [sql, sqlstate] : std::vector<std::pair<std::string, std::string>>{
           {"SELECT 1 / 0", "22012"}, {"SELECT * FROM no_such_table", "42P01"}}) {
    EXPECT_EQ(raw_failure(db, sql), DbFailure::kOther) << sql;
    try {
      pool.transact("other", [&](Tx& tx) { tx.exec_fixed(sql); });
      ADD_FAILURE() << sql << " succeeded";
    } catch (const ConstraintViolation& v) {
      ADD_FAILURE() << sql << " became a ConstraintViolation: " << v.what();
    } catch (const pqxx::sql_error& e) {
      EXPECT_EQ(e.sqlstate(), sqlstate);
      EXPECT_EQ(classify(e), DbFailure::kOther);
      EXPECT_FALSE(ConstraintViolation::from(e));
    }
  }
}

constexpr Statement kBook = {"test_book",
                             "INSERT INTO test_allocations (gpu, period) VALUES ($1, $2::tstzrange)"
                             " RETURNING gpu"};

TEST(DbErrors, SavepointLetsTheTransactionTryTheNextCandidate) {
  TestDatabase db;
  exec(db,
       "CREATE TABLE test_allocations (gpu int NOT NULL, period tstzrange NOT NULL,"
       " CONSTRAINT allocations_t_no_overlap EXCLUDE USING gist (gpu WITH =, period WITH &&))");
  PgPool pool = make_pool(db);
  const std::string period = "[2026-12-01 00:00:00+00, 2026-12-03 00:00:00+00)";
  const std::string overlapping = "[2026-12-02 00:00:00+00, 2026-12-04 00:00:00+00)";
  std::vector<std::optional<DbFailure>> outcomes;  // nullopt: that candidate was booked
  pool.transact("book", [&](Tx& tx) {
    outcomes.clear();
    auto book = [&](int gpu, const std::string& p) {
      return tx.attempt("candidate",
                        [&](Tx& sub) { return sub.exec(kBook, gpu, p)[0][0].as<int>(); });
    };
    auto first = book(1, period);
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(first.value(), 1);
    // GPU 1 is taken over an overlapping period by this same transaction: the candidate is
    // refused, and only its savepoint is rolled back.
    for (int gpu : {1, 2}) {
      auto attempt = book(gpu, overlapping);
      outcomes.push_back(attempt ? std::nullopt : std::optional(attempt.failure()));
      if (!attempt) {
        EXPECT_EQ(attempt.violation().constraint(), "allocations_t_no_overlap");
        EXPECT_EQ(attempt.violation().sqlstate(), "23P01");
        continue;
      }
      EXPECT_EQ(attempt.value(), gpu);
      break;
    }
    // The transaction is still usable on the parent after the savepoints closed.
    EXPECT_EQ(tx.exec_fixed("SELECT count(*) FROM test_allocations")[0][0].as<int>(), 2);
  });
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[0], DbFailure::kExclusionViolation);
  EXPECT_EQ(outcomes[1], std::nullopt) << "the next candidate was booked";
  // Committed with both rows.
  EXPECT_EQ(count(pool, "SELECT count(*) FROM test_allocations WHERE gpu = 1"), 1);
  EXPECT_EQ(count(pool, "SELECT count(*) FROM test_allocations WHERE gpu = 2"), 1);
  EXPECT_EQ(count(pool, "SELECT count(*) FROM test_allocations"), 2);
}

constexpr Statement kInsertT = {"test_insert_t", "INSERT INTO test_t VALUES ($1)"};

TEST(DbErrors, WithoutASavepointAViolationDoomsTheWholeTransaction) {
  // Why try_in_savepoint exists: after a failed statement PostgreSQL refuses everything
  // else in that transaction, so the next candidate could not even be tried.
  TestDatabase db;
  exec(db, "CREATE TABLE test_t (x int PRIMARY KEY); INSERT INTO test_t VALUES (1)");
  PgPool pool = make_pool(db);
  try {
    pool.transact("no_savepoint", [&](Tx& tx) {
      EXPECT_THROW(tx.exec(kInsertT, 1), pqxx::unique_violation);
      tx.exec(kInsertT, 2);
    });
    ADD_FAILURE() << "an aborted transaction accepted a statement";
  } catch (const pqxx::sql_error& e) {
    EXPECT_EQ(e.sqlstate(), "25P02") << e.what();  // in_failed_sql_transaction
  }
  EXPECT_EQ(count(pool, "SELECT count(*) FROM test_t"), 1);
}

TEST(DbErrors, VoidStatementsInASavepointAndOtherFailuresPropagate) {
  TestDatabase db;
  exec(db, "CREATE TABLE test_t (x int PRIMARY KEY)");
  PgPool pool = make_pool(db);
  EXPECT_THROW(
      pool.transact("other",
                    [&](Tx& tx) {
                      auto ok = tx.attempt(
                          "insert", [](Tx& s) { s.exec_fixed("INSERT INTO test_t VALUES (1)"); });
                      EXPECT_TRUE(ok.ok());
                      auto dup = tx.attempt(
                          "insert", [](Tx& s) { s.exec_fixed("INSERT INTO test_t VALUES (1)"); });
                      EXPECT_EQ(dup.failure(), DbFailure::kUniqueViolation);
                      // Not a constraint: thrown, and the whole transaction ends.
                      (void)tx.attempt("divide", [](Tx& s) { s.exec_fixed("SELECT 1 / 0"); });
                      ADD_FAILURE() << "division by zero was swallowed";
                    }),
      pqxx::sql_error);
  EXPECT_EQ(count(pool, "SELECT count(*) FROM test_t"), 0) << "the transaction rolled back";
}

// fn for PgPool::transact that loses a write race under REPEATABLE READ when `lose` says so:
// another connection commits an update between this transaction's snapshot and its update.
struct RacingUpdate {
  const TestDatabase& db;
  int losses_left;
  int calls = 0;
  std::vector<DbFailure> seen;

  void operator()(Tx& tx) {
    ++calls;
    tx.exec_fixed("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    tx.exec_fixed("SELECT n FROM test_counters WHERE id = 1");  // takes the snapshot
    if (losses_left > 0) {
      --losses_left;
      pqxx::connection other(db.url());
      pqxx::work o(other);
      o.exec("UPDATE test_counters SET n = n + 1 WHERE id = 1");
      o.commit();
    }
    try {
      tx.exec_fixed("UPDATE test_counters SET n = n + 100 WHERE id = 1");
    } catch (const std::exception& e) {
      seen.push_back(classify(e));
      throw;
    }
  }
};

TEST(DbErrors, SerializationFailuresAreRetriedThenUnavailable) {
  TestDatabase db;
  exec(db,
       "CREATE TABLE test_counters (id int PRIMARY KEY, n int); INSERT INTO test_counters VALUES "
       "(1, 0)");
  PgPool pool = make_pool(db);

  RacingUpdate once{db, 1};
  pool.transact("race_once", std::ref(once));
  EXPECT_EQ(once.calls, 2) << "one lost race, then a clean run";
  ASSERT_EQ(once.seen.size(), 1u);
  EXPECT_EQ(once.seen[0], DbFailure::kSerializationFailure);
  EXPECT_EQ(count(pool, "SELECT n FROM test_counters"), 101);

  RacingUpdate always{db, 100};
  try {
    pool.transact("race_always", std::ref(always));
    FAIL() << "a transaction that always loses must give up";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable) << e.what();
  }
  EXPECT_EQ(always.calls, 3);
  EXPECT_EQ(always.seen, std::vector<DbFailure>(3, DbFailure::kSerializationFailure));
  EXPECT_EQ(count(pool, "SELECT n FROM test_counters"), 104) << "only the other side's updates";
}

TEST(DbErrors, DeadlocksAreClassified) {
  TestDatabase db;
  exec(db, "CREATE TABLE test_locks (id int PRIMARY KEY); INSERT INTO test_locks VALUES (1), (2)");
  std::latch both_hold(2);
  // Each side test_locks one row, then wants the other's: PostgreSQL ends one of them.
  auto side = [&](int mine, int theirs) -> std::optional<DbFailure> {
    pqxx::connection c(db.url());
    pqxx::work tx(c);
    tx.exec("SET LOCAL deadlock_timeout = '50ms'");
    tx.exec_params("SELECT id FROM test_locks WHERE id = $1 FOR UPDATE", mine);
    both_hold.arrive_and_wait();
    try {
      tx.exec_params("SELECT id FROM test_locks WHERE id = $1 FOR UPDATE", theirs);
      tx.commit();
      return std::nullopt;
    } catch (const std::exception& e) {
      return classify(e);
    }
  };
  std::optional<DbFailure> a, b;
  std::thread ta([&] { a = side(1, 2); });
  std::thread tb([&] { b = side(2, 1); });
  ta.join();
  tb.join();
  EXPECT_NE(a.has_value(), b.has_value()) << "exactly one side is chosen as the victim";
  EXPECT_EQ(a ? *a : *b, DbFailure::kDeadlock);
}

}  // namespace db_errors_pgtest
}  // namespace gpurent
