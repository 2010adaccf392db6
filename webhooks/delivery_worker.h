// Delivers the outbox: claims due deliveries (FOR UPDATE SKIP LOCKED, so every replica can
// run one), POSTs each signed event outside any transaction, and records the attempt with
// what happens next: delivered, tried again after a backoff, or failed for good. Counts what
// it did and keeps the outbox's backlog as it last looked, for /metrics.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "webhooks/backoff.h"
#include "webhooks/sender.h"
#include "webhooks/webhook_store.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

namespace gpurent::webhooks {

struct DeliveryOptions {
  RetryPolicy retry;
  std::chrono::milliseconds timeout{10'000};
  // How long a claim is this replica's. Longer than a batch takes (batch × timeout), so a
  // live replica keeps its claims; a dead one's come back this long after they were made.
  std::chrono::milliseconds lease{120'000};
  int batch = 5;
  bool allow_internal = false;
  // How often a run looks at the backlog as well (one statement; zero: every run). A scrape
  // reads what the last look found and never waits for the database.
  std::chrono::milliseconds backlog_every{10'000};
};

// What one worker has done since it started, and the whole outbox's backlog (every
// replica's deliveries) as it last looked.
struct DeliveryStats {
  std::uint64_t delivered = 0;           // attempts the receiver answered with a 2xx
  std::uint64_t failed = 0;              // attempts that got no 2xx: an error, a refusal, no answer
  std::uint64_t given_up = 0;            // deliveries it failed for good after their last attempt
  std::optional<OutboxBacklog> backlog;  // nullopt until its first look
};

// The JSON body a receiver gets: {id, type, created_at, data}.
std::string delivery_body(const ClaimedDelivery& claimed);

class DeliveryWorker {
 public:
  DeliveryWorker(PgPool& pool, const Clock& clock, WebhookStore& store, Sender& sender,
                 DeliveryOptions options);

  // One batch: claims, sends and records. The number of deliveries attempted (0: nothing was
  // due). Stops between deliveries when `stopping` is set; what it claimed and did not send
  // comes back when its lease ends.
  int run_once(const std::atomic<bool>* stopping = nullptr);

  // Safe from any thread while run_once() runs.
  DeliveryStats stats() const;

  // A number in [0, 1) for the jitter; tests fix it.
  void draw_jitter_with(std::function<double()> draw) { draw_ = std::move(draw); }

  const DeliveryOptions& options() const { return options_; }

 private:
  AttemptOutcome attempt(const ClaimedDelivery& claimed);
  // Looks at the backlog when backlog_every has passed since the last look.
  void look_at_backlog();

  PgPool& pool_;
  const Clock& clock_;
  WebhookStore& store_;
  Sender& sender_;
  DeliveryOptions options_;
  std::function<double()> draw_;

  std::atomic<std::uint64_t> delivered_{0};
  std::atomic<std::uint64_t> failed_{0};
  std::atomic<std::uint64_t> given_up_{0};
  mutable std::mutex backlog_mutex_;
  std::optional<OutboxBacklog> backlog_;                            // under backlog_mutex_
  std::optional<std::chrono::steady_clock::time_point> looked_at_;  // under backlog_mutex_
};

}  // namespace gpurent::webhooks
