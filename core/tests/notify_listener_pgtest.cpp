// NotifyListener against a real PostgreSQL: delivery on commit, fan-out to replicas,
// reconnecting after the backend is killed, failing callbacks, stopping, redacted logs.
#include "core/notify_listener.h"
#include "tests/support/pg_harness.h"
#include "tests/support/wait_for.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

namespace gpurent {
namespace notify_listener_pgtest {

using testing::TestDatabase;
using namespace std::chrono_literals;

// Polls `done` until it holds, up to the shared generous limit; never asserts how long
// anything took.
template <typename Pred>
bool eventually(Pred done) {
  return testing::wait_for(done);
}

// What one subscriber has received, readable from the test thread.
class Inbox {
 public:
  std::function<void(const std::string&)> callback() {
    return [this](const std::string& payload) {
      std::lock_guard lock(mutex_);
      payloads_.push_back(payload);
    };
  }
  std::vector<std::string> payloads() const {
    std::lock_guard lock(mutex_);
    return payloads_;
  }
  bool has(const std::string& payload) const {
    auto all = payloads();
    return std::find(all.begin(), all.end(), payload) != all.end();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> payloads_;
};

NotifyListener::Options options(const TestDatabase& db) {
  return {.url = db.url(), .reconnect_delay = 50ms};
}

// Sends from a connection of its own, as another replica would.
void send(pqxx::connection& conn, const std::string& channel, const std::string& payload,
          bool commit = true) {
  pqxx::work tx(conn, "send_notify");
  notify(tx, channel, payload);
  if (commit) tx.commit();  // otherwise the destructor rolls back
}

int listener_backend_pid(const TestDatabase& db) {
  pqxx::connection conn(db.url());
  pqxx::nontransaction tx(conn);
  auto r = tx.exec(
      "SELECT pid FROM pg_stat_activity "
      "WHERE application_name = 'gpurent_listener' AND datname = current_database()");
  return r.size() == 1 ? r[0][0].as<int>() : 0;
}

TEST(NotifyListener, DeliversCommittedNotificationsAndNotRolledBackOnes) {
  TestDatabase db;
  Inbox inbox;
  NotifyListener listener(options(db));
  listener.subscribe("catalog_changed", inbox.callback());
  listener.start();
  ASSERT_TRUE(eventually([&] { return listener.connected(); }));

  pqxx::connection sender(db.url());
  send(sender, "catalog_changed", "rolled back", /*commit=*/false);
  const std::string tricky = "it's \"quoted\"; DROP TABLE x; -- $1";
  send(sender, "catalog_changed", tricky);
  ASSERT_TRUE(eventually([&] { return inbox.has(tricky); }));
  // Same sender, commit order: had the rolled-back one been sent, it would have come first.
  EXPECT_EQ(inbox.payloads(), std::vector<std::string>{tricky});
  EXPECT_EQ(listener.notifications_total(), 1u);
}

// caught_up() is what a cache trusts: false until connected, false while an announcement
// sits unread or its callback runs, true once it has been delivered.
TEST(NotifyListener, CaughtUpOnlyOnceEverythingArrivedIsDelivered) {
  TestDatabase db;
  NotifyListener listener(options(db));
  std::mutex gate;
  std::atomic<bool> in_callback{false};
  listener.subscribe("catalog_changed", [&](const std::string&) {
    in_callback = true;
    std::lock_guard hold(gate);  // the test holds it while it looks
    in_callback = false;
  });
  EXPECT_FALSE(listener.caught_up()) << "not started";
  listener.start();
  ASSERT_TRUE(eventually([&] { return listener.caught_up(); }));
  {
    std::unique_lock hold(gate);
    pqxx::connection c(db.url());
    pqxx::nontransaction tx(c);
    tx.exec("NOTIFY catalog_changed, 'x'");
    // From the commit until the callback has returned, the listener is not caught up.
    ASSERT_TRUE(eventually([&] { return in_callback.load(); }));
    EXPECT_FALSE(listener.caught_up());
  }
  EXPECT_TRUE(eventually([&] { return listener.caught_up(); }));
  listener.stop();
  EXPECT_FALSE(listener.caught_up()) << "stopped";
}

TEST(NotifyListener, EveryReplicaOnTheChannelReceivesItAndOthersDoNot) {
  TestDatabase db;
  Inbox a, a_second, b, other;
  NotifyListener replica_a(options(db)), replica_b(options(db)), elsewhere(options(db));
  replica_a.subscribe("prices_changed", a.callback());
  replica_a.subscribe("prices_changed", a_second.callback());
  replica_b.subscribe("prices_changed", b.callback());
  elsewhere.subscribe("sites_changed", other.callback());
  for (auto* l : {&replica_a, &replica_b, &elsewhere}) l->start();
  ASSERT_TRUE(eventually(
      [&] { return replica_a.connected() && replica_b.connected() && elsewhere.connected(); }));

  pqxx::connection sender(db.url());
  send(sender, "prices_changed", "gpu_h100");
  ASSERT_TRUE(eventually([&] { return a.has("gpu_h100") && b.has("gpu_h100"); }));
  EXPECT_TRUE(eventually([&] { return a_second.has("gpu_h100"); }))
      << "two subscribers on one listener both hear it";

  send(sender, "sites_changed", "marker");
  ASSERT_TRUE(eventually([&] { return other.has("marker"); }));
  EXPECT_EQ(other.payloads(), std::vector<std::string>{"marker"});
  EXPECT_EQ(a.payloads(), std::vector<std::string>{"gpu_h100"});
  EXPECT_EQ(elsewhere.notifications_total(), 1u);
}

TEST(NotifyListener, ReconnectsAfterItsBackendIsKilledAndSaysSo) {
  TestDatabase db;
  Inbox inbox;
  std::atomic<int> connects{0};
  NotifyListener listener(options(db));
  listener.subscribe("nodes_changed", inbox.callback());
  listener.on_connected([&] { ++connects; });
  listener.start();
  ASSERT_TRUE(eventually([&] { return listener.connected(); }));
  EXPECT_EQ(connects.load(), 1);
  EXPECT_EQ(listener.reconnects_total(), 0u);

  int old_pid = listener_backend_pid(db);
  ASSERT_NE(old_pid, 0) << "the listener's session should carry application_name";
  {
    pqxx::connection admin(db.url());
    pqxx::nontransaction tx(admin);
    tx.exec_params("SELECT pg_terminate_backend($1)", old_pid);
  }
  ASSERT_TRUE(eventually([&] { return connects.load() == 2; })) << "on_connected runs again";
  EXPECT_EQ(listener.reconnects_total(), 1u);
  EXPECT_TRUE(listener.connected());
  // The killed backend may linger in pg_stat_activity for a moment after it has gone.
  EXPECT_TRUE(eventually([&] {
    int pid = listener_backend_pid(db);
    return pid != 0 && pid != old_pid;
  })) << "a new session replaces the killed one";

  pqxx::connection sender(db.url());
  send(sender, "nodes_changed", "after reconnect");
  EXPECT_TRUE(eventually([&] { return inbox.has("after reconnect"); }));
}

TEST(NotifyListener, AThrowingCallbackIsLoggedAndLaterDeliveriesContinue) {
  TestDatabase db;
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));

  Inbox inbox;
  NotifyListener listener(options(db));
  listener.subscribe("rentals_changed", [&](const std::string& payload) {
    inbox.callback()(payload);
    if (payload == "boom") throw std::runtime_error("subscriber failed");
    if (payload == "bang") throw 42;
  });
  listener.on_connected([] { throw std::runtime_error("resync failed"); });
  listener.start();
  ASSERT_TRUE(eventually([&] { return listener.connected(); }));

  pqxx::connection sender(db.url());
  send(sender, "rentals_changed", "boom");
  send(sender, "rentals_changed", "bang");
  send(sender, "rentals_changed", "fine");
  bool delivered = eventually([&] { return inbox.has("fine"); });
  listener.stop();
  spdlog::set_default_logger(previous);

  ASSERT_TRUE(delivered);
  EXPECT_EQ(inbox.payloads(), (std::vector<std::string>{"boom", "bang", "fine"}));
  EXPECT_EQ(listener.reconnects_total(), 0u) << "a failing callback is not a lost connection";
  std::string logged;
  for (const auto& line : sink->last_formatted()) logged += line;
  EXPECT_NE(logged.find("subscriber failed"), std::string::npos) << logged;
  EXPECT_NE(logged.find("resync failed"), std::string::npos) << logged;
}

TEST(NotifyListener, StopIsPromptAndIdempotent) {
  TestDatabase db;
  NotifyListener never_started(options(db));
  never_started.stop();

  NotifyListener listener(options(db));
  listener.subscribe("catalog_changed", [](const std::string&) {});
  listener.start();
  ASSERT_TRUE(eventually([&] { return listener.connected(); }));
  auto begin = std::chrono::steady_clock::now();
  listener.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 1500ms);
  EXPECT_FALSE(listener.connected());
  listener.stop();
  EXPECT_TRUE(eventually([&] { return listener_backend_pid(db) == 0; })) << "connection closed";
}

TEST(NotifyListener, UnreachableDatabaseIsRetriedQuietlyAndStopsPromptly) {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  auto previous = spdlog::default_logger();
  auto capture = std::make_shared<spdlog::logger>("capture", sink);
  capture->set_level(spdlog::level::debug);
  spdlog::set_default_logger(capture);

  // A malformed percent escape makes libpq quote the token, password included, in its error.
  NotifyListener listener({.url = "postgresql://gpurent:s3cr%zzet@/nope?host=/nonexistent-dir",
                           .reconnect_delay = 5000ms});
  listener.subscribe("catalog_changed", [](const std::string&) {});
  EXPECT_NO_THROW(listener.start());
  bool logged_failure = eventually([&] { return !sink->last_formatted().empty(); });
  auto begin = std::chrono::steady_clock::now();
  listener.stop();  // mid reconnect_delay: must not wait it out
  auto stop_took = std::chrono::steady_clock::now() - begin;
  spdlog::set_default_logger(previous);

  ASSERT_TRUE(logged_failure);
  EXPECT_LT(stop_took, 1000ms);
  EXPECT_FALSE(listener.connected());
  for (const auto& line : sink->last_formatted()) {
    EXPECT_EQ(line.find("s3cr"), std::string::npos) << line;
    EXPECT_NE(line.find("***"), std::string::npos) << line;
  }
}

TEST(NotifyListener, SubscribeRejectsChannelNamesThatAreNotPlainIdentifiers) {
  NotifyListener listener({.url = "postgresql://unused@/x"});
  for (const std::string& bad :
       std::vector<std::string>{"", "Upper", "9lives", "has-dash", "quote\"x", "semi;colon",
                                "sp ace", std::string(64, 'a')}) {
    EXPECT_THROW(listener.subscribe(bad, [](const std::string&) {}), std::invalid_argument) << bad;
  }
  EXPECT_NO_THROW(listener.subscribe(std::string(63, 'a'), [](const std::string&) {}));
  EXPECT_NO_THROW(listener.subscribe("_cache_v2", [](const std::string&) {}));
}

}  // namespace notify_listener_pgtest
}  // namespace gpurent
