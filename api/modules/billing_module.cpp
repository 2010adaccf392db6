// Billing's wiring.
#include "api/modules/billing_module.h"

#include "billing/pricing.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/log.h"

namespace gpurent {
namespace {

// The jobs' names: the lifecycle's log and /metrics' job_name label.
constexpr const char* kCaptureJob = "billing_capture";
constexpr const char* kFinaliseJob = "invoice_finalise";

}  // namespace

billing::RentalChargesOptions billing_options(const Config& config) {
  billing::RentalChargesOptions o;
  auto tiers = billing::parse_discount_tiers(config.rental_discounts);
  if (!tiers) {
    throw ConfigError("config rental_discounts: expected min_days (" +
                      std::to_string(limits::kMinDiscountTierDays) + " to " +
                      std::to_string(limits::kMaxDiscountTierDays) +
                      ", increasing) and "
                      "percent (0 to 100) pairs such as 7:5,30:10, got " +
                      config.rental_discounts);
  }
  o.pricing = {.discounts = *tiers,
               .vat_basis_points = config.vat_basis_points,
               .prices_include_tax = config.prices_include_tax};
  auto sla = billing::parse_sla_policy(config.sla_credit_policy);
  if (!sla) throw ConfigError("config sla_credit_policy: " + config.sla_credit_policy);
  o.sla = *sla;
  auto handover = billing::parse_sla_policy(config.handover_credit_policy);
  if (!handover)
    throw ConfigError("config handover_credit_policy: " + config.handover_credit_policy);
  o.handover = *handover;
  o.time_zone = config.billing_time_zone;
  return o;
}

BillingModule::BillingModule(const ModuleContext& ctx, OrgDirectory& orgs)
    : ledger_(ctx.config.currency),
      invoices_(ctx.clock, ctx.config.currency, ctx.config.vat_basis_points,
                ctx.config.billing_time_zone),
      charges_(ctx.clock, ledger_, invoices_, billing_options(ctx.config)),
      top_ups_(ctx.clock, ledger_),
      money_(ctx.pool, ctx.clock, ledger_, top_ups_, invoices_, orgs),
      billing_routes_{.pool = &ctx.pool,
                      .clock = &ctx.clock,
                      .ledger = &ledger_,
                      .top_ups = &top_ups_,
                      .money = &money_,
                      .webhook_secret = ctx.config.payment_webhook_secret,
                      .webhook_tolerance = ctx.config.payment_webhook_tolerance},
      invoice_routes_{.pool = &ctx.pool, .invoices = &invoices_} {
  // Only an unknown zone (22023, invalid_parameter_value) stops the start; a database that
  // is not there yet is readiness's business, and the zone is checked on its first use.
  try {
    ctx.pool.read("billing_time_zone_check", [&](Tx& tx) {
      return tx
          .exec(Statement{"billing_time_zone_check", "SELECT now() AT TIME ZONE $1"},
                ctx.config.billing_time_zone)
          .size();
    });
  } catch (const pqxx::sql_error& e) {
    if (e.sqlstate() == "22023") {
      throw ConfigError("config billing_time_zone: PostgreSQL knows no time zone named " +
                        ctx.config.billing_time_zone);
    }
    log::warn("billing_time_zone not checked at start: {}", e.what());
  } catch (const Error& e) {
    log::warn("billing_time_zone not checked at start: {}", e.what());
  }
}

void BillingModule::add_routes(http::Router& router) {
  http::add_billing_routes(router, billing_routes_);
  http::add_invoice_routes(router, invoice_routes_);
}

void BillingModule::add_metrics(http::Metrics& metrics) {
  metrics.add_job(kCaptureJob, capture_stats_);
  metrics.add_job(kFinaliseJob, finalise_stats_);
}

std::vector<scheduler::Lifecycle::Job> BillingModule::lifecycle_jobs() {
  return {{kCaptureJob,
           [this](PgPool& pool, Timestamp now, const std::atomic<bool>* stopping) {
             capture_stats_.run([&] { charges_.capture_due(pool, now, 500, stopping); });
           }},
          {kFinaliseJob, [this](PgPool& pool, Timestamp now, const std::atomic<bool>*) {
             finalise_stats_.run([&] { invoices_.finalise_due(pool, now); });
           }}};
}

std::map<std::string, nlohmann::json> BillingModule::balances_json(
    Tx& tx, const std::vector<std::string>& org_ids) {
  std::map<std::string, nlohmann::json> out;
  for (const auto& [id, b] : ledger_.balances_of(tx, org_ids)) out[id] = http::balances_json(b);
  return out;
}

}  // namespace gpurent
