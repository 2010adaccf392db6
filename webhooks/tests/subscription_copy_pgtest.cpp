// SubscriptionCopy against a real PostgreSQL: while listening it answers who subscribes to
// what as the store does, from memory; a webhook made or deleted shows once changed() is
// called (and the table's trigger announces every such change); while not listening every
// answer is the store's.
#include "webhooks/subscription_copy.h"

#include "core/notify_listener.h"
#include "tests/support/wait_for.h"
#include "webhooks/tests/webhook_fixture.h"

#include <gtest/gtest.h>

#include <atomic>

namespace gpurent::webhooks {
namespace subscription_copy_pgtest {

class SubscriptionCopyTest : public WebhookTest {
 protected:
  bool wants(SubscriptionCopy& copy, const std::string& org_id, std::string_view type) {
    return transact([&](Tx& tx) { return copy.wants(tx, org_id, type); });
  }
  bool anyone_wants(SubscriptionCopy& copy, std::string_view type) {
    return transact([&](Tx& tx) { return copy.anyone_wants(tx, type); });
  }
};

TEST_F(SubscriptionCopyTest, WhileListeningItAnswersAsTheStoreDoesFromMemory) {
  std::string acme = org("Acme"), other = org("Other");
  webhook(acme, {"rental.created", "rental.active"});
  SubscriptionCopy copy(store_, [] { return true; });
  struct Case {
    std::string org;
    const char* type;
  };
  for (const auto& c : {Case{acme, "rental.created"}, Case{acme, "rental.active"},
                        Case{acme, "billing.low_balance"}, Case{other, "rental.created"}}) {
    SCOPED_TRACE(std::string(c.type));
    bool stored = transact([&](Tx& tx) { return store_.wants(tx, c.org, c.type); });
    EXPECT_EQ(wants(copy, c.org, c.type), stored);
  }
  EXPECT_TRUE(anyone_wants(copy, "rental.active"));
  EXPECT_FALSE(anyone_wants(copy, "rental.failed"));
  auto before = pool_.stats().round_trips_total;
  EXPECT_TRUE(wants(copy, acme, "rental.created"));
  // BEGIN and COMMIT of the test's transaction, no statement.
  EXPECT_EQ(pool_.stats().round_trips_total - before, 2u);
  EXPECT_EQ(copy.stats().loads, 1u);
}

TEST_F(SubscriptionCopyTest, AWebhookMadeOrDeletedShowsOnceChanged) {
  std::string acme = org();
  SubscriptionCopy copy(store_, [] { return true; });
  EXPECT_FALSE(wants(copy, acme, "rental.created"));
  auto [id, secret] = webhook(acme, {"rental.created"});
  EXPECT_FALSE(wants(copy, acme, "rental.created")) << "not announced yet: the copy as it was";
  copy.changed();
  EXPECT_TRUE(wants(copy, acme, "rental.created"));
  transact([&](Tx& tx) { return store_.remove(tx, acme, id, Actor{}); });
  copy.changed();
  EXPECT_FALSE(wants(copy, acme, "rental.created"));
  EXPECT_FALSE(anyone_wants(copy, "rental.created"));
  EXPECT_EQ(copy.stats().loads, 3u);
}

TEST_F(SubscriptionCopyTest, NotListeningEveryAnswerIsTheStores) {
  std::string acme = org();
  SubscriptionCopy copy(store_, [] { return false; });
  EXPECT_FALSE(wants(copy, acme, "rental.created"));
  webhook(acme, {"rental.created"});
  EXPECT_TRUE(wants(copy, acme, "rental.created")) << "seen at once: nothing is kept";
  EXPECT_TRUE(anyone_wants(copy, "rental.failed")) << "it cannot tell: the store is asked";
  EXPECT_EQ(copy.stats().loads, 0u);
}

TEST_F(SubscriptionCopyTest, EveryChangeToTheWebhooksIsAnnounced) {
  std::string acme = org();
  std::atomic<int> heard{0};
  std::atomic<bool> ready{false};
  NotifyListener listener({.url = db_.url()});
  listener.subscribe("gpurent_webhooks", [&](const std::string&) { ++heard; });
  listener.on_connected([&] { ready = true; });
  listener.start();
  ASSERT_TRUE(testing::wait_for([&] { return ready.load(); }));
  auto [id, secret] = webhook(acme, {"rental.created"});
  EXPECT_TRUE(testing::wait_for([&] { return heard.load() >= 1; }));
  transact([&](Tx& tx) { return store_.remove(tx, acme, id, Actor{}); });
  EXPECT_TRUE(testing::wait_for([&] { return heard.load() >= 2; }));
  listener.stop();
}

}  // namespace subscription_copy_pgtest
}  // namespace gpurent::webhooks
