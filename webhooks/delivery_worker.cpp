// The delivery worker's batch: claim, send, record; now and then a look at the backlog.
#include "webhooks/delivery_worker.h"

#include "core/log.h"
#include "webhooks/signature.h"

#include <nlohmann/json.hpp>

#include <random>

namespace gpurent::webhooks {
namespace {

// The log line and the stored error stay short: a receiver's error text is not ours to keep
// at length.
constexpr std::size_t kMaxErrorBytes = 300;

std::string clipped(std::string text) {
  if (text.size() > kMaxErrorBytes) text.resize(kMaxErrorBytes);
  return text;
}

}  // namespace

std::string delivery_body(const ClaimedDelivery& claimed) {
  nlohmann::json body = {{"id", claimed.event_id},
                         {"type", claimed.event_type},
                         {"created_at", format_rfc3339(claimed.event_created_at)},
                         {"data", nlohmann::json::parse(claimed.payload)}};
  return body.dump();
}

DeliveryWorker::DeliveryWorker(PgPool& pool, const Clock& clock, WebhookStore& store,
                               Sender& sender, DeliveryOptions options)
    : pool_(pool), clock_(clock), store_(store), sender_(sender), options_(options) {
  draw_ = [] {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  };
}

int DeliveryWorker::run_once(const std::atomic<bool>* stopping) {
  auto claimed = pool_.transact("webhook_claim", [&](Tx& tx) {
    return store_.claim_due(tx, clock_.now(), options_.lease, options_.batch);
  });
  int attempted = 0;
  for (const auto& c : claimed) {
    if (stopping && stopping->load()) break;
    AttemptOutcome outcome = attempt(c);
    ++attempted;
    (outcome.next == DeliveryState::kDelivered ? delivered_ : failed_)
        .fetch_add(1, std::memory_order_relaxed);
    bool ours =
        pool_.transact("webhook_finish", [&](Tx& tx) { return store_.finish(tx, c, outcome); });
    if (!ours) {
      log::warn("webhook delivery {} attempt {} finished after its claim was taken over",
                delivery_id_text(c.id), c.attempt);
    } else if (outcome.next == DeliveryState::kFailed) {
      // Only while the claim was ours: a late attempt decides nothing, so gives nothing up.
      given_up_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (!(stopping && stopping->load())) look_at_backlog();
  return attempted;
}

void DeliveryWorker::look_at_backlog() {
  auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(backlog_mutex_);
    if (looked_at_ && now - *looked_at_ < options_.backlog_every) return;
  }
  auto backlog = pool_.read("webhook_backlog", [&](Tx& tx) { return store_.backlog(tx); });
  std::lock_guard lock(backlog_mutex_);
  backlog_ = backlog;
  looked_at_ = now;
}

DeliveryStats DeliveryWorker::stats() const {
  DeliveryStats out{.delivered = delivered_.load(std::memory_order_relaxed),
                    .failed = failed_.load(std::memory_order_relaxed),
                    .given_up = given_up_.load(std::memory_order_relaxed)};
  std::lock_guard lock(backlog_mutex_);
  out.backlog = backlog_;
  return out;
}

AttemptOutcome DeliveryWorker::attempt(const ClaimedDelivery& c) {
  AttemptOutcome out;
  auto started = std::chrono::steady_clock::now();
  SendResult sent;
  auto parsed = parse_webhook_url(c.url);
  if (c.secret.empty()) {
    // Nothing is sent unsigned: the key it was sealed under is not this replica's.
    sent.error =
        "the webhook's secret cannot be opened (is webhook_secret_key the same on every "
        "replica?)";
  } else if (auto* url = std::get_if<WebhookUrl>(&parsed)) {
    std::string body = delivery_body(c);
    auto now = clock_.now();
    auto unix_seconds =
        std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    sent = sender_.post(*url, body,
                        {{"X-Signature", sign_delivery(body, c.secret, unix_seconds)},
                         {"X-Webhook-Id", c.webhook_id},
                         {"X-Webhook-Event-Id", c.event_id},
                         {"X-Webhook-Event", c.event_type},
                         {"X-Webhook-Attempt", std::to_string(c.attempt)}},
                        options_.timeout);
  } else {
    // Stored URLs were checked when created; one that no longer parses fails like a refusal.
    sent.error = "the webhook's URL " + std::get<UrlError>(parsed).reason;
  }
  out.at = clock_.now();
  out.duration_ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         std::chrono::steady_clock::now() - started)
                                         .count());
  out.status = sent.status;
  if (!sent.error.empty()) out.error = clipped(sent.error);
  if (sent.status && is_success_status(*sent.status)) {
    out.next = DeliveryState::kDelivered;
    return out;
  }
  if (sent.status && !out.error) out.error = "HTTP " + std::to_string(*sent.status);
  if (!may_retry(options_.retry, c.attempt)) {
    out.next = DeliveryState::kFailed;
    log::warn("webhook delivery {} of {} failed after {} attempts: {}", delivery_id_text(c.id),
              c.event_id, c.attempt, out.error.value_or(""));
    return out;
  }
  out.next = DeliveryState::kPending;
  out.retry_at = out.at + std::chrono::duration_cast<std::chrono::microseconds>(
                              retry_delay(options_.retry, c.attempt, draw_()));
  return out;
}

}  // namespace gpurent::webhooks
