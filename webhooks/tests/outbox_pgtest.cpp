// The outbox against a real PostgreSQL: an event is written in the transaction of the change
// it reports and rolled back with it; only live webhooks of the event's org that subscribe to
// it get a delivery; a dedup key writes once; the low-balance state reports each crossing
// once; another org's webhook is invisible.
#include "webhooks/tests/webhook_fixture.h"

#include <gtest/gtest.h>

namespace gpurent::webhooks {
namespace outbox_pgtest {

class OutboxTest : public WebhookTest {};

TEST_F(OutboxTest, AnEventCommitsAndRollsBackWithTheChangeThatCausedIt) {
  std::string acme = org();
  auto [hook, secret] = webhook(acme, {"rental.active"});
  // The change fails after the event was written: neither is kept.
  EXPECT_THROW(transact([&](Tx& tx) {
                 auto id = store_.emit(tx, acme, "rental.active", {{"id", "rnt_x"}});
                 EXPECT_TRUE(id);
                 throw std::runtime_error("the rental's move failed");
                 return 0;
               }),
               std::runtime_error);
  EXPECT_EQ(count("SELECT count(*) FROM webhook_events"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM webhook_deliveries"), 0);

  auto id = transact([&](Tx& tx) {
    return store_.emit(tx, acme, "rental.active", {{"id", "rnt_x"}});
  });
  ASSERT_TRUE(id);
  EXPECT_EQ(id->substr(0, 4), "evt_");
  EXPECT_EQ(count("SELECT count(*) FROM webhook_events"), 1);
  EXPECT_EQ(text("SELECT payload->>'id' FROM webhook_events"), "rnt_x");
  EXPECT_EQ(
      count("SELECT count(*) FROM webhook_deliveries WHERE state = 'pending' AND webhook_id = '" +
            hook + "'"),
      1);
}

TEST_F(OutboxTest, OnlyLiveSubscribersOfTheOrgGetADelivery) {
  std::string acme = org("Acme");
  std::string other = org("Other");
  auto [active_only, s1] = webhook(acme, {"rental.active"});
  auto [both, s2] = webhook(acme, {"rental.active", "rental.ended"});
  auto [ended_only, s3] = webhook(acme, {"rental.ended"});
  auto [gone, s4] = webhook(acme, {"rental.active"});
  auto [foreign, s5] = webhook(other, {"rental.active"});
  ASSERT_TRUE(transact([&](Tx& tx) { return store_.remove(tx, acme, gone, Actor{}); }));

  transact([&](Tx& tx) { return store_.emit(tx, acme, "rental.active", {{"id", "rnt_a"}}); });
  EXPECT_EQ(count("SELECT count(*) FROM webhook_deliveries"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM webhook_deliveries WHERE webhook_id IN ('" + active_only +
                  "', '" + both + "')"),
            2);
  // Nobody of the org subscribes: no event row at all.
  auto none = transact([&](Tx& tx) {
    return store_.emit(tx, acme, "rental.interrupted", {{"id", "rnt_a"}});
  });
  EXPECT_FALSE(none);
  EXPECT_EQ(count("SELECT count(*) FROM webhook_events"), 1);
  EXPECT_TRUE(transact([&](Tx& tx) { return store_.wants(tx, acme, "rental.ended"); }));
  EXPECT_FALSE(transact([&](Tx& tx) { return store_.wants(tx, acme, "rental.failed"); }));
}

TEST_F(OutboxTest, AnotherOrgsWebhookIsInvisibleAndCannotBeDeletedOrPinged) {
  std::string acme = org("Acme");
  std::string other = org("Other");
  auto [hook, secret] = webhook(acme, {"rental.active"});
  transact([&](Tx& tx) {
    EXPECT_FALSE(store_.get(tx, other, hook));
    EXPECT_TRUE(store_.list(tx, other, 50, std::nullopt).items.empty());
    EXPECT_FALSE(store_.remove(tx, other, hook, Actor{}));
    EXPECT_FALSE(store_.ping(tx, other, hook));
    EXPECT_TRUE(store_.get(tx, acme, hook));
    return 0;
  });
  // The secret is stored for signing but never part of a record.
  EXPECT_EQ(text("SELECT secret FROM webhooks WHERE id = '" + hook + "'"), secret);
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE details::text LIKE '%" + secret + "%'"), 0);
}

TEST_F(OutboxTest, ADedupKeyWritesTheEventOnce) {
  std::string acme = org();
  webhook(acme, {"rental.expiring"});
  auto first = transact([&](Tx& tx) {
    return store_.emit(tx, acme, "rental.expiring", {{"id", "rnt_a"}}, "rental.expiring:rnt_a:1");
  });
  auto again = transact([&](Tx& tx) {
    return store_.emit(tx, acme, "rental.expiring", {{"id", "rnt_a"}}, "rental.expiring:rnt_a:1");
  });
  auto moved = transact([&](Tx& tx) {
    return store_.emit(tx, acme, "rental.expiring", {{"id", "rnt_a"}}, "rental.expiring:rnt_a:2");
  });
  EXPECT_TRUE(first);
  EXPECT_FALSE(again);
  EXPECT_TRUE(moved);
  EXPECT_EQ(count("SELECT count(*) FROM webhook_deliveries"), 2);
}

TEST_F(OutboxTest, DeletingFailsPendingDeliveriesAndKeepsTheLog) {
  std::string acme = org();
  auto [hook, secret] = webhook(acme, {"rental.active"});
  transact([&](Tx& tx) { return store_.emit(tx, acme, "rental.active", {{"id", "rnt_a"}}); });
  ASSERT_TRUE(transact([&](Tx& tx) { return store_.remove(tx, acme, hook, Actor{}); }));
  EXPECT_FALSE(transact([&](Tx& tx) { return store_.remove(tx, acme, hook, Actor{}); }));
  EXPECT_EQ(text("SELECT state || ':' || last_error FROM webhook_deliveries"),
            "failed:webhook deleted");
  EXPECT_TRUE(transact([&](Tx& tx) {
                return store_.claim_due(tx, clock_.now(), std::chrono::seconds(60), 10);
              }).empty());
}

TEST_F(OutboxTest, LowBalanceIsReportedOncePerCrossing) {
  std::string acme = org();
  auto seen = [&](bool below) {
    return transact([&](Tx& tx) { return store_.balance_seen(tx, acme, below); });
  };
  EXPECT_FALSE(seen(false));
  EXPECT_TRUE(seen(true));   // crossed
  EXPECT_FALSE(seen(true));  // still below: not again
  EXPECT_FALSE(seen(true));
  EXPECT_FALSE(seen(false));  // back above
  EXPECT_TRUE(seen(true));    // crossed again
  std::string fresh = org("Fresh");
  EXPECT_TRUE(transact([&](Tx& tx) { return store_.balance_seen(tx, fresh, true); }));
}

TEST_F(OutboxTest, TheWebhookListPagesOldestFirst) {
  std::string acme = org();
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(webhook(acme, {"rental.active"}).first);
    clock_.advance(std::chrono::seconds(1));
  }
  std::vector<std::string> seen;
  std::optional<std::string> cursor;
  do {
    auto page = transact([&](Tx& tx) { return store_.list(tx, acme, 2, cursor); });
    for (const auto& w : page.items) seen.push_back(w.id);
    cursor = page.next_cursor;
  } while (cursor);
  EXPECT_EQ(seen, ids);
}

}  // namespace outbox_pgtest
}  // namespace gpurent::webhooks
