// The delivery worker against a real PostgreSQL, with a sender that answers as each test
// says: a signed body on success; retries with backoff and then failed, every attempt in the
// log; two workers at once send each delivery once; a claim abandoned by a dead worker is
// taken over when its lease ends, and the dead worker's late result decides nothing; what a
// worker counts and the backlog it finds (what /metrics shows).
#include "billing/payment_signature.h"
#include "webhooks/tests/webhook_fixture.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <set>
#include <thread>

namespace gpurent::webhooks {
namespace delivery_worker_pgtest {

using std::chrono::milliseconds;
using std::chrono::seconds;

class DeliveryWorkerTest : public WebhookTest {
 protected:
  DeliveryOptions options(int max_attempts = 3) {
    return {.retry = {.max_attempts = max_attempts, .base = seconds(10), .max = seconds(60)},
            .timeout = seconds(1),
            .lease = seconds(30),
            .batch = 5};
  }
  std::unique_ptr<DeliveryWorker> worker(DeliveryOptions o) {
    auto w = std::make_unique<DeliveryWorker>(pool_, clock_, store_, sender_, o);
    w->draw_jitter_with([] { return 0.0; });  // the shortest wait: half the doubled base
    return w;
  }
};

TEST_F(DeliveryWorkerTest, ASuccessfulDeliveryIsSignedAndLogged) {
  std::string acme = org();
  auto [hook, secret] = webhook(acme, {"rental.active"}, "https://hooks.example/gpurent?x=1");
  auto event = transact([&](Tx& tx) {
    return store_.emit(tx, acme, "rental.active", {{"id", "rnt_a"}, {"state", "active"}});
  });
  auto w = worker(options());
  EXPECT_EQ(w->run_once(), 1);
  EXPECT_EQ(w->run_once(), 0);  // nothing more is due

  auto sent = sender_.sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].url, "https://hooks.example/gpurent?x=1");
  auto body = nlohmann::json::parse(sent[0].body);
  EXPECT_EQ(body["id"], *event);
  EXPECT_EQ(body["type"], "rental.active");
  EXPECT_EQ(body["data"]["id"], "rnt_a");
  EXPECT_TRUE(body["created_at"].is_string());
  EXPECT_EQ(sent[0].header("X-Webhook-Id"), hook);
  EXPECT_EQ(sent[0].header("X-Webhook-Event-Id"), *event);
  EXPECT_EQ(sent[0].header("X-Webhook-Event"), "rental.active");
  EXPECT_EQ(sent[0].header("X-Webhook-Attempt"), "1");
  auto check = billing::check_payment_signature(sent[0].header("X-Signature"), sent[0].body, secret,
                                                clock_.now(), std::chrono::minutes(5));
  EXPECT_EQ(check.verdict, billing::SignatureVerdict::kValid);

  auto page = transact([&](Tx& tx) { return store_.deliveries(tx, hook, 50, std::nullopt); });
  ASSERT_EQ(page.items.size(), 1u);
  EXPECT_EQ(page.items[0].state, DeliveryState::kDelivered);
  EXPECT_EQ(page.items[0].attempts, 1);
  EXPECT_EQ(page.items[0].last_status, 200);
  ASSERT_EQ(page.items[0].attempt_log.size(), 1u);
  EXPECT_EQ(page.items[0].attempt_log[0].status, 200);
  EXPECT_TRUE(page.items[0].finished_at);
}

TEST_F(DeliveryWorkerTest, FailuresAreRetriedWithBackoffAndThenFailForGood) {
  std::string acme = org();
  auto [hook, secret] = webhook(acme, {"rental.ended"});
  transact([&](Tx& tx) { return store_.emit(tx, acme, "rental.ended", {{"id", "rnt_a"}}); });
  sender_.answer_with([](const SentRequest&) { return SendResult{500, ""}; });
  auto w = worker(options(3));

  EXPECT_EQ(w->run_once(), 1);
  // Not due again before the backoff: 10 s base, jitter 0 → 5 s.
  clock_.advance(seconds(4));
  EXPECT_EQ(w->run_once(), 0);
  clock_.advance(seconds(2));
  EXPECT_EQ(w->run_once(), 1);
  // Second wait: 20 s → 10 s.
  clock_.advance(seconds(9));
  EXPECT_EQ(w->run_once(), 0);
  clock_.advance(seconds(2));
  EXPECT_EQ(w->run_once(), 1);
  // Three attempts were all it had: failed, and never tried again.
  clock_.advance(seconds(3600));
  EXPECT_EQ(w->run_once(), 0);
  EXPECT_EQ(sender_.sent().size(), 3u);

  auto page = transact([&](Tx& tx) { return store_.deliveries(tx, hook, 50, std::nullopt); });
  ASSERT_EQ(page.items.size(), 1u);
  const auto& d = page.items[0];
  EXPECT_EQ(d.state, DeliveryState::kFailed);
  EXPECT_EQ(d.attempts, 3);
  EXPECT_EQ(d.last_status, 500);
  EXPECT_EQ(d.last_error, "HTTP 500");
  ASSERT_EQ(d.attempt_log.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(d.attempt_log[i].attempt, i + 1);
    EXPECT_EQ(d.attempt_log[i].status, 500);
  }
  // The attempt number goes out with each try, for the receiver's logs.
  EXPECT_EQ(sender_.sent()[2].header("X-Webhook-Attempt"), "3");
  // No answer at all (a timeout) is recorded with its reason.
  sender_.answer_with([](const SentRequest&) { return SendResult{std::nullopt, "timed out"}; });
  transact([&](Tx& tx) { return store_.emit(tx, acme, "rental.ended", {{"id", "rnt_b"}}); });
  EXPECT_EQ(w->run_once(), 1);
  EXPECT_EQ(text("SELECT last_error FROM webhook_deliveries ORDER BY id DESC LIMIT 1"),
            "timed out");
}

TEST_F(DeliveryWorkerTest, TwoWorkersAtOnceSendEachDeliveryOnce) {
  std::string acme = org();
  webhook(acme, {"rental.active"});
  webhook(acme, {"rental.active"});
  for (int i = 0; i < 20; ++i) {
    transact([&](Tx& tx) {
      return store_.emit(tx, acme, "rental.active", {{"id", "rnt_" + std::to_string(i)}});
    });
  }
  // Slow answers keep both workers' claims open at the same time.
  sender_.answer_with([](const SentRequest&) {
    std::this_thread::sleep_for(milliseconds(5));
    return SendResult{204, ""};
  });
  auto a = worker(options());
  auto b = worker(options());
  auto drain = [](DeliveryWorker& w) {
    while (w.run_once() > 0) {
    }
  };
  std::thread ta([&] { drain(*a); });
  std::thread tb([&] { drain(*b); });
  ta.join();
  tb.join();
  auto sent = sender_.sent();
  EXPECT_EQ(sent.size(), 40u);
  std::set<std::string> distinct;
  for (const auto& s : sent)
    distinct.insert(s.header("X-Webhook-Id") + s.header("X-Webhook-Event-Id"));
  EXPECT_EQ(distinct.size(), 40u);
  EXPECT_EQ(
      count("SELECT count(*) FROM webhook_deliveries WHERE state = 'delivered' AND attempts = 1"),
      40);
}

TEST_F(DeliveryWorkerTest, AnAbandonedClaimIsTakenOverWhenItsLeaseEnds) {
  std::string acme = org();
  auto [hook, secret] = webhook(acme, {"rental.active"});
  transact([&](Tx& tx) { return store_.emit(tx, acme, "rental.active", {{"id", "rnt_a"}}); });
  // A replica claims and dies before it sends or records anything.
  auto abandoned =
      transact([&](Tx& tx) { return store_.claim_due(tx, clock_.now(), seconds(30), 5); });
  ASSERT_EQ(abandoned.size(), 1u);
  auto w = worker(options());
  EXPECT_EQ(w->run_once(), 0);  // still its claim
  clock_.advance(seconds(31));
  EXPECT_EQ(w->run_once(), 1);  // the lease ended: delivered by another
  ASSERT_EQ(sender_.sent().size(), 1u);
  EXPECT_EQ(sender_.sent()[0].header("X-Webhook-Attempt"), "2");
  // The dead replica's result, should it come after all, changes nothing.
  AttemptOutcome late{
      .at = clock_.now(), .duration_ms = 1, .status = 500, .next = DeliveryState::kFailed};
  EXPECT_FALSE(transact([&](Tx& tx) { return store_.finish(tx, abandoned[0], late); }));
  EXPECT_EQ(text("SELECT state FROM webhook_deliveries"), "delivered");
}

TEST_F(DeliveryWorkerTest, APingGoesToItsWebhookOnlyAndTheLogPagesNewestFirst) {
  std::string acme = org();
  auto [hook, secret] = webhook(acme, {"rental.active"});
  auto [other, other_secret] = webhook(acme, {"rental.active"});
  std::vector<long long> ids;
  for (int i = 0; i < 3; ++i) {
    auto ping = transact([&](Tx& tx) { return store_.ping(tx, acme, hook); });
    ASSERT_TRUE(ping);
    ids.push_back(ping->second);
    clock_.advance(seconds(1));
  }
  auto w = worker(options());
  EXPECT_EQ(w->run_once(), 3);
  for (const auto& s : sender_.sent()) {
    EXPECT_EQ(s.header("X-Webhook-Id"), hook);
    EXPECT_EQ(s.header("X-Webhook-Event"), "webhook.ping");
  }
  std::vector<long long> seen;
  std::optional<std::string> cursor;
  do {
    auto page = transact([&](Tx& tx) { return store_.deliveries(tx, hook, 2, cursor); });
    for (const auto& d : page.items) seen.push_back(d.id);
    cursor = page.next_cursor;
  } while (cursor);
  EXPECT_EQ(seen, (std::vector<long long>{ids[2], ids[1], ids[0]}));
  EXPECT_TRUE(transact([&](Tx& tx) {
                return store_.deliveries(tx, other, 50, std::nullopt);
              }).items.empty());
}

TEST_F(DeliveryWorkerTest, WithAKeySecretsAreSealedAndOnlyThatKeyOpensThem) {
  std::string acme = org();
  WebhookStore sealed(clock_, "the platform's webhook key, 32+ chars");
  auto [record, secret] = transact([&](Tx& tx) {
    return sealed.create(tx, acme, "https://hooks.example/in", {"rental.active"}, Actor{});
  });
  std::string stored = text("SELECT secret FROM webhooks WHERE id = '" + record.id + "'");
  EXPECT_EQ(stored.rfind("sealed:v1:", 0), 0u) << stored;
  EXPECT_EQ(stored.find(secret), std::string::npos);
  EXPECT_EQ(stored.find(secret.substr(6)), std::string::npos);

  // Another key, or none, cannot open it: the delivery fails and nothing goes out unsigned.
  WebhookStore other(clock_, "another key of thirty-two characters");
  for (WebhookStore* store : {&other, &store_}) {
    transact([&](Tx& tx) { return store->emit(tx, acme, "rental.active", {{"id", "rnt_a"}}); });
    DeliveryWorker w(pool_, clock_, *store, sender_, options(1));
    EXPECT_EQ(w.run_once(), 1);
    EXPECT_TRUE(sender_.sent().empty());
    EXPECT_NE(text("SELECT last_error FROM webhook_deliveries ORDER BY id DESC LIMIT 1")
                  .find("cannot be opened"),
              std::string::npos);
  }
  // The key it was sealed under signs with the secret the creator was given.
  transact([&](Tx& tx) { return sealed.emit(tx, acme, "rental.active", {{"id", "rnt_b"}}); });
  DeliveryWorker w(pool_, clock_, sealed, sender_, options());
  EXPECT_EQ(w.run_once(), 1);
  auto sent = sender_.sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(billing::check_payment_signature(sent[0].header("X-Signature"), sent[0].body, secret,
                                             clock_.now(), std::chrono::minutes(5))
                .verdict,
            billing::SignatureVerdict::kValid);
  // Sealed to its webhook: the same text copied onto another webhook does not open.
  auto [copy, copy_secret] = webhook(acme, {"rental.ended"});
  exec("UPDATE webhooks SET secret = '" + stored + "' WHERE id = '" + copy + "'");
  transact([&](Tx& tx) { return sealed.emit(tx, acme, "rental.ended", {{"id", "rnt_c"}}); });
  EXPECT_EQ(w.run_once(), 1);
  EXPECT_EQ(sender_.sent().size(), 1u);
}

TEST_F(DeliveryWorkerTest, CountsAttemptsAndWhatItGaveUpAndFindsTheBacklog) {
  std::string acme = org();
  webhook(acme, {"rental.ended"});
  auto o = options(2);
  o.backlog_every = milliseconds(0);  // a look with every run
  auto w = worker(o);
  auto stats = w->stats();
  EXPECT_EQ(stats.delivered + stats.failed + stats.given_up, 0u);
  EXPECT_FALSE(stats.backlog);  // not looked yet

  // A delivery that fails its first attempt stays pending, due again after the backoff.
  Timestamp made_at = clock_.now();
  transact([&](Tx& tx) { return store_.emit(tx, acme, "rental.ended", {{"id", "rnt_a"}}); });
  sender_.answer_with([](const SentRequest&) { return SendResult{503, ""}; });
  EXPECT_EQ(w->run_once(), 1);
  stats = w->stats();
  EXPECT_EQ(stats.delivered, 0u);
  EXPECT_EQ(stats.failed, 1u);
  EXPECT_EQ(stats.given_up, 0u);
  ASSERT_TRUE(stats.backlog);
  EXPECT_EQ(stats.backlog->pending, 1);
  ASSERT_TRUE(stats.backlog->oldest_created_at);
  EXPECT_GE(*stats.backlog->oldest_created_at, made_at);
  EXPECT_LE(*stats.backlog->oldest_created_at, clock_.now());
  ASSERT_TRUE(stats.backlog->first_due_at);
  EXPECT_GT(*stats.backlog->first_due_at, clock_.now());  // 10 s base, jitter 0 → 5 s
  EXPECT_LE(*stats.backlog->first_due_at, clock_.now() + seconds(5));

  // Both delivered once the first is due again: the backlog is empty.
  clock_.advance(seconds(6));
  transact([&](Tx& tx) { return store_.emit(tx, acme, "rental.ended", {{"id", "rnt_b"}}); });
  auto both = transact([&](Tx& tx) { return store_.backlog(tx); });
  EXPECT_EQ(both.pending, 2);
  EXPECT_EQ(both.oldest_created_at, stats.backlog->oldest_created_at);  // the first one's
  EXPECT_EQ(both.first_due_at, stats.backlog->first_due_at);            // its retry, due before now
  sender_.answer_with([](const SentRequest&) { return SendResult{204, ""}; });
  EXPECT_EQ(w->run_once(), 2);
  stats = w->stats();
  EXPECT_EQ(stats.delivered, 2u);
  EXPECT_EQ(stats.failed, 1u);
  EXPECT_EQ(stats.backlog->pending, 0);
  EXPECT_FALSE(stats.backlog->oldest_created_at);
  EXPECT_FALSE(stats.backlog->first_due_at);

  // Two failed attempts are all it gets: given up, and no longer in the backlog.
  transact([&](Tx& tx) { return store_.emit(tx, acme, "rental.ended", {{"id", "rnt_c"}}); });
  sender_.answer_with([](const SentRequest&) { return SendResult{std::nullopt, "timed out"}; });
  EXPECT_EQ(w->run_once(), 1);
  EXPECT_EQ(w->stats().backlog->pending, 1);
  clock_.advance(seconds(6));
  EXPECT_EQ(w->run_once(), 1);
  stats = w->stats();
  EXPECT_EQ(stats.delivered, 2u);
  EXPECT_EQ(stats.failed, 3u);
  EXPECT_EQ(stats.given_up, 1u);
  EXPECT_EQ(stats.backlog->pending, 0);
  EXPECT_EQ(count("SELECT count(*) FROM webhook_deliveries WHERE state = 'failed'"), 1);
}

TEST_F(DeliveryWorkerTest, LooksAtTheBacklogNoMoreOftenThanAskedAndNotWhenStopping) {
  std::string acme = org();
  webhook(acme, {"rental.ended"});
  auto o = options();
  o.backlog_every = std::chrono::hours(1);
  auto w = worker(o);
  std::atomic<bool> stopping{true};
  EXPECT_EQ(w->run_once(&stopping), 0);
  EXPECT_FALSE(w->stats().backlog);  // a run that is stopping does not look

  EXPECT_EQ(w->run_once(), 0);
  ASSERT_TRUE(w->stats().backlog);
  EXPECT_EQ(w->stats().backlog->pending, 0);
  // Made and claimed since: the next look is an hour away, so the last one stands.
  transact([&](Tx& tx) { return store_.emit(tx, acme, "rental.ended", {{"id", "rnt_a"}}); });
  transact([&](Tx& tx) { return store_.claim_due(tx, clock_.now(), seconds(30), 5); });
  EXPECT_EQ(w->run_once(), 0);
  EXPECT_EQ(w->stats().backlog->pending, 0);
  // Another worker looks for itself, and finds the claimed delivery pending, due when its
  // lease ends.
  auto fresh = worker(o);
  EXPECT_EQ(fresh->run_once(), 0);
  ASSERT_TRUE(fresh->stats().backlog);
  EXPECT_EQ(fresh->stats().backlog->pending, 1);
  EXPECT_GT(*fresh->stats().backlog->first_due_at, clock_.now());
}

}  // namespace delivery_worker_pgtest
}  // namespace gpurent::webhooks
