// PgFaultProxy with plain libpqxx 6: each fault, what libpqxx throws for it, and what the
// database kept. Each case prints an "observed:" line (exception type, SQLSTATE, what()).
#include "tests/support/pg_fault_proxy.h"
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include <cxxabi.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <typeinfo>

namespace gpurent::testing::pg_fault_proxy_pgtest {

struct Observed {
  std::string type;  // the exception's dynamic type; "none" when nothing was thrown
  std::string sqlstate;
  std::string what;
};

std::string demangle(const std::type_info& t) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> name(
      abi::__cxa_demangle(t.name(), nullptr, nullptr, &status), &std::free);
  return status == 0 ? name.get() : t.name();
}

template <class F>
Observed observe(const char* label, F&& f) {
  Observed o{"none", "", ""};
  try {
    f();
  } catch (const std::exception& e) {
    o.type = demangle(typeid(e));
    if (auto* sql = dynamic_cast<const pqxx::sql_error*>(&e)) o.sqlstate = sql->sqlstate();
    o.what = e.what();
  }
  std::string what = o.what;
  for (auto& c : what)
    if (c == '\n') c = '|';
  std::printf("observed: %-34s %-28s sqlstate=%-6s what=%s\n", label, o.type.c_str(),
              o.sqlstate.c_str(), what.c_str());
  return o;
}

class PgFaultProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pqxx::connection conn(db_.url());
    pqxx::nontransaction tx(conn);
    tx.exec("CREATE TABLE probe (id int PRIMARY KEY)");
  }

  // Read past the proxy, on a connection of the test's own.
  int rows(int id) {
    pqxx::connection conn(db_.url());
    pqxx::nontransaction tx(conn);
    return tx.exec_params1("SELECT count(*) FROM probe WHERE id = $1", id)[0].as<int>();
  }

  // A connection through the proxy with the statement every case binds.
  std::unique_ptr<pqxx::connection> connect() {
    auto conn = std::make_unique<pqxx::connection>(proxy_.url());
    conn->prepare("probe_insert", "INSERT INTO probe (id) VALUES ($1)");
    return conn;
  }

  // Inserts `id` in one transaction through the proxy, as gpurent's stores do.
  Observed insert(const char* label, int id) {
    auto conn = connect();
    return observe(label, [&] {
      pqxx::work tx(*conn);
      tx.exec_prepared("probe_insert", id);
      tx.commit();
    });
  }

  TestDatabase db_{TestDatabase::Kind::kEmpty};
  PgFaultProxy proxy_{db_.url()};
};

TEST_F(PgFaultProxyTest, ForwardsQueriesAndPreparedStatementsAndCountsThem) {
  EXPECT_EQ(insert("no fault", 1).type, "none");
  EXPECT_EQ(insert("no fault, a second connection", 2).type, "none");
  EXPECT_EQ(rows(1), 1);
  EXPECT_EQ(rows(2), 1);
  EXPECT_EQ(proxy_.seen(PgMatch::query("commit")), 2);
  EXPECT_EQ(proxy_.seen(PgMatch::query("BEGIN")), 2);
  EXPECT_EQ(proxy_.seen(PgMatch::statement("probe_insert")), 2);
  EXPECT_EQ(proxy_.seen(PgMatch::bound_sql("INSERT INTO probe")), 2);
  EXPECT_EQ(proxy_.seen(PgMatch::statement("probe")), 0);
}

TEST_F(PgFaultProxyTest, CutBeforeCommitIsInDoubtAndNothingCommitted) {
  int rule = proxy_.arm({.match = PgMatch::query("COMMIT"), .fault = PgFault::kCutBefore});
  auto o = insert("cut_before COMMIT", 1);
  EXPECT_EQ(o.type, "pqxx::in_doubt_error");
  EXPECT_EQ(proxy_.fired(rule), 1);
  EXPECT_EQ(rows(1), 0);
  // The rule is spent: the next booking goes through.
  EXPECT_EQ(insert("after a spent rule", 1).type, "none");
  EXPECT_EQ(rows(1), 1);
}

TEST_F(PgFaultProxyTest, CutAfterCommitIsInDoubtAndCommitted) {
  int rule = proxy_.arm({.match = PgMatch::query("COMMIT"), .fault = PgFault::kCutAfter});
  auto o = insert("cut_after COMMIT", 1);
  EXPECT_EQ(o.type, "pqxx::in_doubt_error");
  EXPECT_EQ(proxy_.fired(rule), 1);
  EXPECT_EQ(rows(1), 1);
}

TEST_F(PgFaultProxyTest, ARuleWithAfterFiresOnlyInATransactionThatSentThatMatch) {
  int rule = proxy_.arm({.match = PgMatch::query("COMMIT"),
                         .fault = PgFault::kCutAfter,
                         .after = PgMatch::statement("probe_insert")});
  // A transaction that inserts nothing commits untouched, then one that does is cut.
  auto conn = connect();
  auto other = observe("COMMIT without probe_insert", [&] {
    pqxx::work tx(*conn);
    tx.exec("SELECT 1");
    tx.commit();
  });
  EXPECT_EQ(other.type, "none");
  EXPECT_EQ(proxy_.fired(rule), 0);
  // On the same connection: what the earlier transaction sent does not count.
  auto same = observe("COMMIT after probe_insert", [&] {
    pqxx::work tx(*conn);
    tx.exec_prepared("probe_insert", 1);
    tx.commit();
  });
  EXPECT_EQ(same.type, "pqxx::in_doubt_error");
  EXPECT_EQ(proxy_.fired(rule), 1);
  EXPECT_EQ(rows(1), 1);

  proxy_.arm({.match = PgMatch::query("COMMIT"),
              .fault = PgFault::kCutBefore,
              .after = PgMatch::statement("probe_insert")});
  auto again = connect();
  auto first = observe("first transaction, no insert", [&] {
    pqxx::work tx(*again);
    tx.exec("SELECT 1");
    tx.commit();
  });
  EXPECT_EQ(first.type, "none");
  auto second = observe("second transaction, no insert", [&] {
    pqxx::work tx(*again);
    tx.exec("SELECT 2");
    tx.commit();
  });
  EXPECT_EQ(second.type, "none") << "the first transaction's messages were forgotten at BEGIN";
}

TEST_F(PgFaultProxyTest, CutAroundAStatementLosesTheConnectionAndRollsBack) {
  proxy_.arm({.match = PgMatch::statement("probe_insert"), .fault = PgFault::kCutAfter});
  auto after = insert("cut_after Bind(probe_insert)", 1);
  EXPECT_EQ(after.type, "pqxx::broken_connection");
  EXPECT_EQ(rows(1), 0);

  proxy_.arm({.match = PgMatch::statement("probe_insert"), .fault = PgFault::kCutBefore});
  auto before = insert("cut_before Bind(probe_insert)", 2);
  EXPECT_EQ(before.type, "pqxx::broken_connection");
  EXPECT_EQ(rows(2), 0);

  proxy_.arm({.match = PgMatch::query("BEGIN"), .fault = PgFault::kCutBefore});
  auto begin = insert("cut_before BEGIN", 3);
  EXPECT_EQ(begin.type, "pqxx::broken_connection");
  EXPECT_EQ(rows(3), 0);
}

TEST_F(PgFaultProxyTest, TerminatedBackendIsAdminShutdown) {
  int rule =
      proxy_.arm({.match = PgMatch::statement("probe_insert"), .fault = PgFault::kTerminate});
  auto o = insert("terminate Bind(probe_insert)", 1);
  EXPECT_EQ(proxy_.error(rule), "");
  // libpqxx 6 loses the backend's FATAL 57P01: building the exception it asks the dead
  // connection for its encoding, and throws that failure instead.
  EXPECT_EQ(o.type, "pqxx::broken_connection");
  EXPECT_EQ(o.what, "Could not obtain client encoding: not connected.");
  EXPECT_EQ(rows(1), 0);

  rule = proxy_.arm({.match = PgMatch::query("COMMIT"), .fault = PgFault::kTerminate});
  auto commit = insert("terminate COMMIT", 2);
  EXPECT_EQ(proxy_.error(rule), "");
  EXPECT_EQ(commit.type, "pqxx::in_doubt_error");
  EXPECT_EQ(rows(2), 0);
}

TEST_F(PgFaultProxyTest, StallRunsIntoTheStatementTimeout) {
  int rule = proxy_.arm({.match = PgMatch::statement("probe_insert"),
                         .fault = PgFault::kStall,
                         .stall_lock = "LOCK TABLE probe IN ACCESS EXCLUSIVE MODE"});
  auto conn = connect();
  auto started = std::chrono::steady_clock::now();
  auto o = observe("stall Bind(probe_insert), 500 ms", [&] {
    pqxx::work tx(*conn);
    tx.exec("SET LOCAL statement_timeout = 500");
    tx.exec_prepared("probe_insert", 1);
    tx.commit();
  });
  auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(proxy_.error(rule), "");
  EXPECT_EQ(o.type, "pqxx::sql_error");
  EXPECT_EQ(o.sqlstate, "57014");
  EXPECT_GE(waited, std::chrono::milliseconds(500));
  EXPECT_EQ(rows(1), 0);
  // The connection survives a timeout, and the lock is gone.
  EXPECT_TRUE(conn->is_open());
  pqxx::work tx(*conn);
  tx.exec_prepared("probe_insert", 1);
  tx.commit();
  EXPECT_EQ(rows(1), 1);
}

TEST_F(PgFaultProxyTest, StallOfAStatementPreparedEarlierHoldsItsBind) {
  auto conn = connect();
  conn->prepare_now("probe_insert");  // Parse now, outside the transaction below
  int rule = proxy_.arm({.match = PgMatch::statement("probe_insert"),
                         .fault = PgFault::kStall,
                         .stall_lock = "LOCK TABLE probe IN ACCESS EXCLUSIVE MODE"});
  auto o = observe("stall Bind(prepared earlier), 300 ms", [&] {
    pqxx::work tx(*conn);
    tx.exec("SET LOCAL statement_timeout = 300");
    tx.exec_prepared("probe_insert", 1);
    tx.commit();
  });
  EXPECT_EQ(proxy_.fired(rule), 1);
  EXPECT_EQ(proxy_.error(rule), "");
  EXPECT_EQ(o.sqlstate, "57014");
  EXPECT_EQ(rows(1), 0);
}

TEST_F(PgFaultProxyTest, StallOnATableTheTransactionHoldsIsReported) {
  int rule = proxy_.arm({.match = PgMatch::statement("probe_insert"),
                         .fault = PgFault::kStall,
                         .skip = 1,
                         .stall_lock = "LOCK TABLE probe IN ACCESS EXCLUSIVE MODE"});
  auto conn = connect();
  pqxx::work tx(*conn);
  tx.exec_prepared("probe_insert", 1);  // let through: skip = 1
  tx.exec_prepared("probe_insert", 2);  // the proxy's LOCK waits on this transaction
  tx.commit();
  EXPECT_EQ(proxy_.fired(rule), 1);
  EXPECT_NE(proxy_.error(rule).find("lock timeout"), std::string::npos) << proxy_.error(rule);
  EXPECT_EQ(rows(2), 1);
}

TEST_F(PgFaultProxyTest, RefusedConnections) {
  proxy_.refuse_connections(true);
  auto closed = observe("refuse (closed at accept)", [&] { pqxx::connection conn(proxy_.url()); });
  EXPECT_EQ(closed.type, "pqxx::broken_connection");
  proxy_.set_refusal(PgRefusal::kStartingUp);
  auto starting = observe("refuse (57P03 starting up)", [&] { pqxx::connection c(proxy_.url()); });
  EXPECT_EQ(starting.type, "pqxx::broken_connection");
  EXPECT_NE(starting.what.find("starting up"), std::string::npos);
  proxy_.refuse_connections(false);
  EXPECT_EQ(insert("accepting again", 1).type, "none");
}

TEST_F(PgFaultProxyTest, CutAllDropsEveryConnectionAndRollsTheirWorkBack) {
  auto a = connect();
  auto b = connect();
  auto tx = std::make_unique<pqxx::work>(*a);
  tx->exec_prepared("probe_insert", 1);
  EXPECT_EQ(proxy_.open_connections(), 2);
  proxy_.cut_all();
  EXPECT_EQ(proxy_.open_connections(), 0);
  auto in_tx = observe("cut_all, then COMMIT", [&] { tx->commit(); });
  EXPECT_EQ(in_tx.type, "pqxx::in_doubt_error");
  auto idle = observe("cut_all, then BEGIN on an idle one", [&] {
    pqxx::work t(*b);
    t.exec("SELECT 1");
  });
  EXPECT_EQ(idle.type, "pqxx::broken_connection");
  EXPECT_EQ(rows(1), 0);
  EXPECT_EQ(insert("a new connection after cut_all", 1).type, "none");
}

TEST_F(PgFaultProxyTest, SkipAndTimesCountAcrossConnections) {
  int rule = proxy_.arm(
      {.match = PgMatch::query("COMMIT"), .fault = PgFault::kCutBefore, .skip = 1, .times = 2});
  EXPECT_EQ(insert("skip 1: first COMMIT", 1).type, "none");
  EXPECT_EQ(insert("skip 1: second COMMIT", 2).type, "pqxx::in_doubt_error");
  EXPECT_EQ(insert("skip 1: third COMMIT", 3).type, "pqxx::in_doubt_error");
  EXPECT_EQ(insert("skip 1: fourth COMMIT", 4).type, "none");
  EXPECT_EQ(proxy_.fired(rule), 2);
  EXPECT_EQ(rows(1) + rows(2) + rows(3) + rows(4), 2);
}

}  // namespace gpurent::testing::pg_fault_proxy_pgtest
