// Billing's wiring: the ledger, rentals' holds and captures, invoices, top-ups; the billing
// and invoice routes; and the jobs (daily capture, invoice finalisation) it runs in the
// rental lifecycle worker.
#pragma once

#include "api/handlers/admin_handlers.h"
#include "api/handlers/billing_handlers.h"
#include "api/handlers/invoice_handlers.h"
#include "api/modules/module.h"
#include "api/modules/module_context.h"
#include "billing/admin_money.h"
#include "billing/invoice_store.h"
#include "billing/ledger.h"
#include "billing/rental_charges.h"
#include "billing/top_ups.h"
#include "core/job_stats.h"
#include "core/org_directory.h"
#include "scheduler/lifecycle.h"

namespace gpurent {

// The billing settings of the configuration as billing's own types. Throws ConfigError on
// values only billing can judge (the discount tiers' order, the SLA policy).
billing::RentalChargesOptions billing_options(const Config& config);

class BillingModule final : public Module, public http::OrgBalancesView {
 public:
  // Checks the billing time zone against PostgreSQL's time zone database.
  // `orgs`: identity's, where the admins' money use cases check that an org exists.
  BillingModule(const ModuleContext& ctx, OrgDirectory& orgs);
  BillingModule(const BillingModule&) = delete;
  BillingModule& operator=(const BillingModule&) = delete;

  void add_routes(http::Router& router) override;
  // The jobs' runs, failures and last success (jobs billing_capture and invoice_finalise).
  void add_metrics(http::Metrics& metrics) override;
  // The capture and invoice jobs, which ride on the lifecycle worker of every replica (the
  // scheduler is given them when it is made). Each run is counted for add_metrics.
  std::vector<scheduler::Lifecycle::Job> lifecycle_jobs();
  // The admins' org list's balances (identity's route).
  std::map<std::string, nlohmann::json> balances_json(
      Tx& tx, const std::vector<std::string>& org_ids) override;

  // The scheduler's measurements shown on the invoices' lines (their energy); set before
  // add_routes, since the scheduler is made after billing.
  void set_line_details(http::InvoiceLineDetails& details) { invoice_routes_.details = &details; }

  billing::RentalCharges& charges() { return charges_; }
  billing::Ledger& ledger() { return ledger_; }
  billing::TopUps& top_ups() { return top_ups_; }

 private:
  billing::Ledger ledger_;
  billing::InvoiceStore invoices_;
  billing::RentalCharges charges_;
  billing::TopUps top_ups_;
  billing::AdminMoney money_;
  http::BillingRoutesState billing_routes_;
  http::InvoiceRoutesState invoice_routes_;
  JobStats capture_stats_;
  JobStats finalise_stats_;
};

}  // namespace gpurent
