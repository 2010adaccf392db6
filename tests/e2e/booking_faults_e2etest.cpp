// A booking with an Idempotency-Key while the database connection fails at each of its steps:
// gpurentd talks to PostgreSQL through a PgFaultProxy that cuts the connection before or
// after a statement or the COMMIT, terminates the backend, holds a statement into its
// statement_timeout, or refuses new connections. Whatever happens, the answer is 201 or 503
// `unavailable` with Retry-After (never a 500), and a retry with the same key gets the first
// outcome: the stored 201 again when the booking committed, a booking made now when it did
// not. One rental per key, its money held once.
#include "tests/support/pg_fault_proxy.h"
#include "tests/support/rental_fleet_fixture.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::testing::booking_faults_e2e {

// What the first attempt must answer: 201 when gpurentd can tell its transaction did not
// commit and runs it again on a fresh connection (a connection lost before COMMIT), 503 when
// it cannot answer now (a COMMIT in doubt, a statement timeout, no connection to be had).
enum class First { kBooked, kUnavailable };
// What the retry with the same key must be: the first attempt's stored 201 replayed, or a
// booking made by the retry itself (the first left no trace).
enum class Retry { kReplay, kBooksNow };

struct FaultCase {
  std::string label;
  std::optional<PgFaultRule> rule;  // none: connections refused (refusal)
  PgRefusal refusal = PgRefusal::kNone;
  First first;
  Retry retry;
};

// The steps of a booking, in the order it sends them. Each is matched only in the
// transaction that also takes the key's lock, so no other request's statement is hit.
struct Step {
  const char* name;
  PgMatch match;
  // kStall: a lock that makes this step wait, taken on a table the booking's transaction
  // has not touched before the step (the proxy's LOCK would wait on the booking itself).
  const char* stall_lock;
};

std::vector<FaultCase> fault_cases() {
  const PgMatch key_lock = PgMatch::statement("idempotency_lock");
  std::vector<Step> steps{
      {"idempotency_lock", key_lock, nullptr},
      {"idempotency_find", PgMatch::statement("idempotency_find"),
       "LOCK TABLE idempotency_keys IN ACCESS EXCLUSIVE MODE"},
      // The rental, its event and its allocations in one statement.
      {"rental_create_placed", PgMatch::statement("rental_create_placed"), nullptr},
      // The meter, the hold and its posting in one statement.
      {"billing_hold_covered", PgMatch::statement("billing_hold_covered"),
       "LOCK TABLE ledger_transactions IN ACCESS EXCLUSIVE MODE"},
      {"idempotency_store", PgMatch::statement("idempotency_store"), nullptr},
  };
  std::vector<FaultCase> cases;
  for (const auto& s : steps) {
    // The key's lock is the transaction's first statement, only keyed requests send it.
    std::optional<PgMatch> after;
    if (s.match.text != key_lock.text) after = key_lock;
    for (auto [fault, name] :
         {std::pair{PgFault::kCutBefore, "cut_before"}, std::pair{PgFault::kCutAfter, "cut_after"},
          std::pair{PgFault::kTerminate, "terminate"}}) {
      cases.push_back({std::string(name) + " " + s.name,
                       PgFaultRule{.match = s.match, .fault = fault, .after = after},
                       PgRefusal::kNone, First::kBooked, Retry::kReplay});
    }
    if (s.stall_lock) {
      cases.push_back({std::string("stall ") + s.name,
                       PgFaultRule{.match = s.match,
                                   .fault = PgFault::kStall,
                                   .after = after,
                                   .stall_lock = s.stall_lock},
                       PgRefusal::kNone, First::kUnavailable, Retry::kBooksNow});
    }
  }
  // The COMMIT of the booking's transaction: lost on its way (nothing committed) or lost
  // with its answer (all committed): the client cannot tell, the database can.
  cases.push_back({"cut_before COMMIT",
                   PgFaultRule{.match = PgMatch::query("COMMIT"),
                               .fault = PgFault::kCutBefore,
                               .after = PgMatch::statement("idempotency_store")},
                   PgRefusal::kNone, First::kUnavailable, Retry::kBooksNow});
  cases.push_back({"cut_after COMMIT",
                   PgFaultRule{.match = PgMatch::query("COMMIT"),
                               .fault = PgFault::kCutAfter,
                               .after = PgMatch::statement("idempotency_store")},
                   PgRefusal::kNone, First::kUnavailable, Retry::kReplay});
  cases.push_back({"terminate at COMMIT",
                   PgFaultRule{.match = PgMatch::query("COMMIT"),
                               .fault = PgFault::kTerminate,
                               .after = PgMatch::statement("idempotency_store")},
                   PgRefusal::kNone, First::kUnavailable, Retry::kBooksNow});
  // Every connection dropped, and the database refusing new ones: closed at once, or
  // answering "the database system is starting up" as during a restart.
  cases.push_back(
      {"refused (closed)", std::nullopt, PgRefusal::kClose, First::kUnavailable, Retry::kBooksNow});
  cases.push_back({"refused (starting up)", std::nullopt, PgRefusal::kStartingUp,
                   First::kUnavailable, Retry::kBooksNow});
  return cases;
}

class BookingFaultsE2E : public RentalFleetTest {
 protected:
  void SetUp() override {
    proxy_ = std::make_unique<PgFaultProxy>(db_.url());
    // No worker runs on its own during the test: the lifecycle and webhook deliveries are
    // an hour apart, and the agents' listener is off.
    server_ = std::make_unique<ServerProcess>(
        ServerOptions{.database_url = proxy_->url(),
                      .flags = {"--rate_limit_per_credential=0", "--rate_limit_per_ip=0",
                                "--db_statement_timeout=2s", "--lifecycle_interval=1h",
                                "--webhook_poll_interval=1h", "--agent_listen=off"}});
    load_contract();
  }

  HttpResult book(const Login& owner, const std::string& key) {
    Headers h = session(owner);
    h["Idempotency-Key"] = key;
    return post("/v1/rentals",
                {{"gpu_model", kModel},
                 {"gpu_count", 1},
                 {"start", "now"},
                 {"days", 1},
                 {"image_id", image_id_}},
                h);
  }

  // Past the proxy, on a connection of the test's own.
  long long scalar(const std::string& query, const std::string& param) {
    pqxx::connection c(db_.url());
    pqxx::nontransaction tx(c);
    return tx.exec_params(query, param)[0][0].as<long long>();
  }
  long long rentals_of(const Login& owner) {
    return scalar("SELECT count(*) FROM rentals WHERE org_id = $1", owner.org_id);
  }
  long long held_of(const Login& owner) {
    return scalar("SELECT held_minor FROM billing_accounts WHERE org_id = $1", owner.org_id);
  }

  std::unique_ptr<PgFaultProxy> proxy_;
};

TEST_F(BookingFaultsE2E, EveryFailureAtEveryStepAnswers201Or503AndTheRetryGetsTheFirstOutcome) {
  seed_fleet({1});
  for (int n = 0; n < 4; ++n) add_node("fault-node-" + std::to_string(n));
  Login owner = account("owner@example.com", "Acme");

  // A booking without faults: what one booking holds, and every statement prepared once.
  long long held_before = held_of(owner);
  auto plain = book(owner, "no-fault");
  ASSERT_EQ(plain.status, 201) << plain.body;
  const long long one_hold = held_of(owner) - held_before;
  ASSERT_GT(one_hold, 0);

  for (const auto& c : fault_cases()) {
    SCOPED_TRACE(c.label);
    std::string key = "fault-" + c.label;
    std::replace(key.begin(), key.end(), ' ', '-');
    long long rentals = rentals_of(owner), held = held_of(owner);

    int rule = -1;
    if (c.rule) {
      rule = proxy_->arm(*c.rule);
    } else {
      proxy_->set_refusal(c.refusal);
      proxy_->cut_all();
    }
    auto first = book(owner, key);
    if (c.rule) {
      EXPECT_EQ(proxy_->fired(rule), 1) << "the fault was never injected";
      EXPECT_EQ(proxy_->error(rule), "");
    }
    proxy_->disarm_all();
    proxy_->set_refusal(PgRefusal::kNone);

    if (c.first == First::kBooked) {
      EXPECT_EQ(first.status, 201) << first.body;
    } else {
      EXPECT_EQ(first.status, 503) << first.body;
      EXPECT_EQ(first.header("retry-after"), "1");
      EXPECT_EQ(first.json()["error"].value("code", ""), "unavailable") << first.body;
    }

    auto retry = book(owner, key);
    ASSERT_EQ(retry.status, 201) << retry.body;
    std::string id = retry.json().value("id", "");
    if (first.status == 201) {
      EXPECT_EQ(first.json().value("id", ""), id);
      EXPECT_EQ(retry.header("idempotent-replayed"), "true");
    } else if (c.retry == Retry::kReplay) {
      EXPECT_EQ(retry.header("idempotent-replayed"), "true")
          << "the first booking committed: its response was stored with it";
    } else {
      EXPECT_EQ(retry.header("idempotent-replayed"), "") << "nothing of the first committed";
    }
    // A third try replays what the second got, whatever it was.
    auto again = book(owner, key);
    EXPECT_EQ(again.status, 201);
    EXPECT_EQ(again.json().value("id", ""), id);

    EXPECT_EQ(rentals_of(owner), rentals + 1) << "one rental per key";
    EXPECT_EQ(held_of(owner), held + one_hold) << "its money held once";
    EXPECT_EQ(scalar("SELECT count(*) FROM allocations WHERE rental_id = $1", id), 1);
  }
}

}  // namespace gpurent::testing::booking_faults_e2e
