// The webhooks' wiring: the store, the routes, the producers that write events into the
// outbox inside the transactions of the changes they report (rental moves, the expiry scan,
// ledger postings), and the delivery worker's thread.
#pragma once

#include "api/handlers/webhook_handlers.h"
#include "api/metrics.h"
#include "api/modules/module.h"
#include "api/modules/module_context.h"
#include "billing/ledger.h"
#include "core/job_stats.h"
#include "core/periodic_worker.h"
#include "scheduler/lifecycle.h"
#include "scheduler/notices.h"
#include "scheduler/records.h"
#include "scheduler/rental_store.h"
#include "webhooks/delivery_worker.h"
#include "webhooks/sender.h"
#include "webhooks/subscription_copy.h"
#include "webhooks/webhook_store.h"

#include <memory>
#include <optional>

namespace gpurent {

// The delivery worker's families at `now` (the clock that times the deliveries): attempts by
// outcome and deliveries given up, this replica's; the outbox's backlog (every replica's) as
// the worker last looked, zero before its first look.
void append_webhook_delivery_metrics(std::string& out, const webhooks::DeliveryStats& stats,
                                     Timestamp now);

// What the webhooks report on, the other modules' stores: one instance each per process.
struct WebhookPeers {
  // scheduler: every rental created or moved writes rental.<state> in its own transaction,
  // and the lifecycle worker's runs look for rentals nearing their end (rental.expiring).
  scheduler::RentalStore& rentals;
  scheduler::Lifecycle& lifecycle;
  // billing: every posting that moves an org's available balance checks it against the
  // threshold (billing.low_balance, once per crossing).
  billing::Ledger& ledger;
  // scheduler: every notice to a tenant writes rental.notice in its own transaction.
  scheduler::NoticeStore& notices;
};

class WebhookModule final : public Module {
 public:
  WebhookModule(const ModuleContext& ctx, const WebhookPeers& peers);
  ~WebhookModule() override;
  WebhookModule(const WebhookModule&) = delete;
  WebhookModule& operator=(const WebhookModule&) = delete;

  void add_routes(http::Router& router) override;
  // Host lookups in flight against webhook_max_resolving, and attempts refused for it; the
  // deliveries (append_webhook_delivery_metrics); the delivery thread's runs and the expiry
  // scan's, as jobs webhook_delivery and webhook_expiring.
  void add_metrics(http::Metrics& metrics) override;

  // Starts the delivery thread: a batch whenever one is due, else a look every
  // webhook_poll_interval. Every replica runs one; their claims never overlap.
  void start() override;
  // Wakes the thread and waits for it: at most the delivery in progress (webhook_timeout).
  // Idempotent.
  void stop() override;

 private:
  void watch_rentals(scheduler::RentalStore& rentals, scheduler::Lifecycle& lifecycle);
  void watch_balances(billing::Ledger& ledger);
  void watch_notices(scheduler::NoticeStore& notices);
  // One delivery run (the delivery thread's tick).
  void deliver();
  void rental_event(Tx& tx, const scheduler::RentalRecord& rental,
                    std::optional<scheduler::RentalState> previous);
  void expiring_scan(PgPool& pool, Timestamp now);

  PgPool& pool_;
  const Clock& clock_;
  std::chrono::seconds expiring_before_;
  long long low_balance_minor_;
  webhooks::WebhookStore store_;
  webhooks::SubscriptionCopy subscriptions_;  // who wants what, asked before each event
  std::shared_ptr<webhooks::ResolverSlots> resolver_slots_;
  std::unique_ptr<webhooks::Sender> sender_;
  webhooks::DeliveryWorker worker_;
  http::WebhookRoutesState routes_;
  scheduler::RentalStore* rentals_ = nullptr;
  JobStats expiring_stats_;  // the expiry scan, a job of the lifecycle worker's runs
  // Last: stopped before what its ticks use is destroyed.
  PeriodicWorker delivery_;
};

}  // namespace gpurent
