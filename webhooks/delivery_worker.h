// Delivers the outbox: claims due deliveries (FOR UPDATE SKIP LOCKED, so every replica can
// run one), POSTs each signed event outside any transaction, and records the attempt with
// what happens next: delivered, tried again after a backoff, or failed for good.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "webhooks/backoff.h"
#include "webhooks/sender.h"
#include "webhooks/webhook_store.h"

#include <atomic>
#include <chrono>
#include <functional>
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

  // A number in [0, 1) for the jitter; tests fix it.
  void draw_jitter_with(std::function<double()> draw) { draw_ = std::move(draw); }

  const DeliveryOptions& options() const { return options_; }

 private:
  AttemptOutcome attempt(const ClaimedDelivery& claimed);

  PgPool& pool_;
  const Clock& clock_;
  WebhookStore& store_;
  Sender& sender_;
  DeliveryOptions options_;
  std::function<double()> draw_;
};

}  // namespace gpurent::webhooks
