// The webhooks' wiring and the delivery worker's thread.
#include "api/modules/webhook_module.h"

#include "api/handlers/rental_json.h"
#include "core/error.h"
#include "core/money.h"

#include <nlohmann/json.hpp>

namespace gpurent {
namespace {

// What a rental event's `data.rental` holds: the rental as the API shows it (the one
// encoder), without `ssh`, which only the owner's views read from the node.
nlohmann::json event_rental_json(const scheduler::RentalRecord& r) {
  auto out = http::rental_json(r);
  out.erase("ssh");
  return out;
}

// One expiry warning per rental and end: an extension moves the end, and the warning is due
// again before the new one.
std::string expiring_key(const scheduler::RentalRecord& r) {
  return "rental.expiring:" + r.id + ":" + std::to_string(r.period.end.time_since_epoch().count());
}

// Rentals looked at per expiry scan; the rest wait for the next lifecycle run.
constexpr int kExpiringBatch = 200;

// Whole seconds from `from` to `to`; zero when `to` is not later.
std::uint64_t seconds_between(Timestamp from, Timestamp to) {
  if (to <= from) return 0;
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::seconds>(to - from).count());
}

}  // namespace

void append_webhook_delivery_metrics(std::string& out, const webhooks::DeliveryStats& stats,
                                     Timestamp now) {
  http::append_family(out, "gpurent_webhook_attempts_total", "counter",
                      "Webhook delivery attempts this replica made, by outcome: delivered (the "
                      "receiver answered 2xx) or failed.");
  out += "gpurent_webhook_attempts_total{outcome=\"delivered\"} " +
         std::to_string(stats.delivered) + "\n";
  out +=
      "gpurent_webhook_attempts_total{outcome=\"failed\"} " + std::to_string(stats.failed) + "\n";
  http::append_metric(out, "gpurent_webhook_deliveries_given_up_total", "counter",
                      "Webhook deliveries this replica failed for good after their last attempt "
                      "(webhook_max_attempts).",
                      stats.given_up);
  webhooks::OutboxBacklog backlog = stats.backlog.value_or(webhooks::OutboxBacklog{});
  http::append_metric(out, "gpurent_webhook_deliveries_pending", "gauge",
                      "Webhook deliveries neither delivered nor given up, every replica's, as "
                      "this replica last looked.",
                      static_cast<std::uint64_t>(backlog.pending));
  http::append_metric(
      out, "gpurent_webhook_deliveries_oldest_pending_age_seconds", "gauge",
      "How long ago the oldest pending webhook delivery was made; 0 with none.",
      backlog.oldest_created_at ? seconds_between(*backlog.oldest_created_at, now) : 0);
  http::append_metric(out, "gpurent_webhook_deliveries_overdue_seconds", "gauge",
                      "How long the pending webhook delivery due first has been due without "
                      "being claimed; 0 when none is due.",
                      backlog.first_due_at ? seconds_between(*backlog.first_due_at, now) : 0);
}

WebhookModule::WebhookModule(const ModuleContext& ctx, const WebhookPeers& peers)
    : pool_(ctx.pool),
      clock_(ctx.clock),
      expiring_before_(ctx.config.webhook_expiring_before),
      low_balance_minor_(ctx.config.webhook_low_balance_minor),
      store_(ctx.clock, ctx.config.webhook_secret_key),
      subscriptions_(store_, [&listener = ctx.listener] { return listener.connected(); }),
      resolver_slots_(std::make_shared<webhooks::ResolverSlots>(ctx.config.webhook_max_resolving)),
      sender_(webhooks::make_http_sender(
          {.allow_internal = ctx.config.webhook_allow_internal,
           .user_agent = std::string("gpurent-webhooks/") + GPURENT_VERSION,
           .resolver_slots = resolver_slots_})),
      worker_(ctx.pool, ctx.clock, store_, *sender_,
              {.retry = {.max_attempts = ctx.config.webhook_max_attempts,
                         .base = ctx.config.webhook_backoff,
                         .max = ctx.config.webhook_backoff_max},
               .timeout = ctx.config.webhook_timeout,
               .lease = ctx.config.webhook_lease,
               .batch = 5,
               .allow_internal = ctx.config.webhook_allow_internal}),
      routes_{.pool = &ctx.pool,
              .store = &store_,
              .subscriptions = &subscriptions_,
              .allow_internal = ctx.config.webhook_allow_internal},
      delivery_("webhook delivery run", ctx.config.webhook_poll_interval, [this] { deliver(); }) {
  // A lease shorter than a batch can take lets another replica send a delivery this one is
  // still sending: refused at start rather than found as duplicates later.
  if (ctx.config.webhook_lease <= ctx.config.webhook_timeout * worker_.options().batch) {
    throw ConfigError("config webhook_lease: must be longer than " +
                      std::to_string(worker_.options().batch) +
                      " times webhook_timeout (one batch of deliveries)");
  }
  watch_rentals(peers.rentals, peers.lifecycle);
  watch_balances(peers.ledger);
  watch_notices(peers.notices);
  // A webhook made, deleted or disabled by any replica reaches every replica's copy; after a
  // reconnection the copy is dropped, since announcements sent meanwhile are lost.
  ctx.listener.subscribe("gpurent_webhooks",
                         [this](const std::string&) { subscriptions_.changed(); });
  ctx.listener.on_connected([this] { subscriptions_.changed(); });
}

WebhookModule::~WebhookModule() {
  stop();
}

void WebhookModule::add_routes(http::Router& router) {
  http::add_webhook_routes(router, routes_);
}

void WebhookModule::add_metrics(http::Metrics& metrics) {
  metrics.add_collector([slots = resolver_slots_](std::string& out) {
    http::append_metric(out, "gpurent_webhook_resolving", "gauge",
                        "Webhook address lookups in flight.", slots->in_use());
    http::append_metric(out, "gpurent_webhook_resolving_max", "gauge",
                        "Webhook address lookups allowed at once (webhook_max_resolving).",
                        slots->limit());
    http::append_metric(out, "gpurent_webhook_resolver_busy_total", "counter",
                        "Webhook attempts failed at once because every lookup slot was taken.",
                        slots->busy_total());
  });
  // The ages from the stored times at each scrape: should the worker stop looking, they grow
  // rather than freeze.
  metrics.add_collector([this](std::string& out) {
    append_webhook_delivery_metrics(out, worker_.stats(), clock_.now());
  });
  metrics.add_job("webhook_delivery", delivery_.stats());
  metrics.add_job("webhook_expiring", expiring_stats_);
}

void WebhookModule::rental_event(Tx& tx, const scheduler::RentalRecord& rental,
                                 std::optional<scheduler::RentalState> previous) {
  std::string type = "rental." + std::string(scheduler::to_string(rental.state));
  if (!subscriptions_.wants(tx, rental.org_id, type)) return;
  nlohmann::json data = {
      {"rental", event_rental_json(rental)},
      {"previous_state",
       previous ? nlohmann::json(std::string(scheduler::to_string(*previous))) : nullptr}};
  store_.emit(tx, rental.org_id, type, data);
}

void WebhookModule::watch_rentals(scheduler::RentalStore& rentals,
                                  scheduler::Lifecycle& lifecycle) {
  rentals_ = &rentals;
  rentals.on_created(
      [this](Tx& tx, const scheduler::RentalRecord& r) { rental_event(tx, r, std::nullopt); });
  rentals.on_transition([this](Tx& tx, const std::string& id, scheduler::RentalState from,
                               scheduler::RentalState to) {
    std::string type = "rental." + std::string(scheduler::to_string(to));
    // Nobody anywhere subscribes (from memory), or not the rental's org (one statement).
    if (!subscriptions_.anyone_wants(tx, type) || !store_.rental_wanted(tx, id, type)) return;
    // The row as the move left it, in the move's transaction.
    if (auto r = rentals_->get_any(tx, id)) rental_event(tx, *r, from);
  });
  lifecycle.add_job("webhook_expiring",
                    [this](PgPool& pool, Timestamp now, const std::atomic<bool>*) {
                      expiring_stats_.run([&] { expiring_scan(pool, now); });
                    });
}

void WebhookModule::expiring_scan(PgPool& pool, Timestamp now) {
  pool.transact("webhook_expiring", [&](Tx& tx) {
    auto due = store_.expiring_rentals(
        tx, std::string(scheduler::to_string(scheduler::RentalState::kActive)), now,
        std::chrono::duration_cast<std::chrono::milliseconds>(expiring_before_), kExpiringBatch);
    for (const auto& [id, org_id] : due) {
      auto r = rentals_->get_any(tx, id);
      if (!r || r->state != scheduler::RentalState::kActive) continue;
      nlohmann::json data = {{"rental", event_rental_json(*r)},
                             {"ends_at", format_rfc3339(r->period.end)}};
      // Another replica's scan may write the same warning first: the dedup key keeps one.
      store_.emit(tx, org_id, "rental.expiring", data, expiring_key(*r));
    }
    return due.size();
  });
}

void WebhookModule::watch_notices(scheduler::NoticeStore& notices) {
  notices.on_created([this](Tx& tx, const scheduler::RentalNotice& n) {
    if (!subscriptions_.wants(tx, n.org_id, "rental.notice")) return;
    nlohmann::json data = {{"notice", scheduler::notice_json(n)}};
    if (auto r = rentals_->get_any(tx, n.rental_id)) data["rental"] = event_rental_json(*r);
    // One event per notice, whichever replica wrote it.
    store_.emit(tx, n.org_id, "rental.notice", data, "rental.notice:" + n.id);
  });
}

void WebhookModule::watch_balances(billing::Ledger& ledger) {
  ledger.on_available_changed([this, &ledger](Tx& tx, const std::string& org_id) {
    if (org_id.empty() || !subscriptions_.wants(tx, org_id, "billing.low_balance")) return;
    auto balances = ledger.balances(tx, org_id);
    bool below = balances.available.amount_minor() < low_balance_minor_;
    if (!store_.balance_seen(tx, org_id, below)) return;
    nlohmann::json data = {{"org_id", org_id},
                           {"available", balances.available.to_json()},
                           {"threshold", ledger.money(low_balance_minor_).to_json()}};
    store_.emit(tx, org_id, "billing.low_balance", data);
  });
}

void WebhookModule::start() {
  delivery_.start();
}

void WebhookModule::stop() {
  delivery_.stop();
}

void WebhookModule::deliver() {
  // A database outage throws (the worker logs it): claims not finished come back when their
  // leases end.
  int sent = worker_.run_once(&delivery_.stopping());
  // A full batch says more may be due: go again at once.
  if (sent >= worker_.options().batch) delivery_.wake();
}

}  // namespace gpurent
