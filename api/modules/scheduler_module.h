// The scheduler's wiring: rentals, candidates, booking, the rental routes, and the rental
// lifecycle worker's thread.
#pragma once

#include "api/handlers/advisor_handlers.h"
#include "api/handlers/invoice_handlers.h"
#include "api/handlers/maintenance_handlers.h"
#include "api/handlers/node_admin_handlers.h"
#include "api/handlers/notice_handlers.h"
#include "api/handlers/rental_handlers.h"
#include "api/handlers/tenant_operation_handlers.h"
#include "api/modules/module.h"
#include "api/modules/module_context.h"
#include "billing/rental_charges.h"
#include "core/org_directory.h"
#include "core/periodic_worker.h"
#include "identity/ssh_certificate_authority.h"
#include "identity/ssh_key_store.h"
#include "inventory/catalog_copy.h"
#include "inventory/catalog_store.h"
#include "inventory/node_store.h"
#include "inventory/price_store.h"
#include "scheduler/booking.h"
#include "scheduler/candidate_store.h"
#include "scheduler/capacity_index.h"
#include "scheduler/lifecycle.h"
#include "scheduler/rental_store.h"
#include "scheduler/rentals.h"
#include "scheduler/ssh_access.h"
#include "scheduler/task_store.h"

namespace gpurent {

// The other modules' stores the scheduler reads through, one instance each per process
// (their owners' modules hold them).
struct SchedulerPeers {
  OrgDirectory& orgs;                    // identity: an org's guardrails
  identity::SshKeyStore& ssh_keys;       // identity: the keys a booking names
  inventory::NodeStore& nodes;           // inventory: a drained node through its own machine
  inventory::CatalogStore& catalog;      // inventory: models and images
  inventory::CatalogCopy& catalog_copy;  // inventory: what a booking reads of them, in memory
  inventory::PriceStore& prices;         // inventory: the price list
  // billing: bookings and extensions hold money, and every move of a rental moves it on
  // (scheduler/rental_billing.h).
  billing::RentalCharges& charges;
  // billing: the capture and invoice jobs that ride on the lifecycle worker.
  std::vector<scheduler::Lifecycle::Job> lifecycle_jobs;
};

class SchedulerModule final : public Module,
                              public http::NodeWork,
                              public http::InvoiceLineDetails {
 public:
  SchedulerModule(const ModuleContext& ctx, const SchedulerPeers& peers);
  ~SchedulerModule() override;
  SchedulerModule(const SchedulerModule&) = delete;
  SchedulerModule& operator=(const SchedulerModule&) = delete;

  void add_routes(http::Router& router) override;
  // The lifecycle worker's runs, failures and last success (job rental_lifecycle). A run
  // that fails before its end runs none of the jobs riding on it (billing's, webhooks').
  void add_metrics(http::Metrics& metrics) override;
  // What the admin node view lists as the node's rentals.
  std::string request_burn_in(Tx& tx, const std::string& node_id, int gpu_count) override {
    return lifecycle_.node_burn_in(tx, node_id, gpu_count, "admin")->id;
  }
  nlohmann::json node_burn_ins(Tx& tx, const std::string& node_id) override;
  bool serves_rentals(Tx& tx, const std::string& node_id) override;
  void node_restarted(Tx& tx, const std::string& node_id, const std::string& action) override {
    lifecycle_.power_cycled(tx, node_id, action, clock_.now());
  }
  // The invoices' lines' energy (scheduler/rental_telemetry.h).
  std::map<std::string, double> energy_kwh(Tx& tx, const std::string& org_id,
                                           const std::vector<std::string>& rental_ids,
                                           const std::string& month_start,
                                           const std::string& month_end,
                                           const std::string& time_zone) override {
    return telemetry_.energy_kwh(tx, org_id, rental_ids, month_start, month_end, time_zone);
  }
  nlohmann::json node_rentals(Tx& tx, const std::string& node_id) override {
    return http::node_rentals_json(tx, rentals_, node_id);
  }

  // Refuses to retire a node while a rental runs on it (409 invalid_state naming them): its
  // customer would lose the GPUs mid-rental. Drain it instead; it can be retired once its
  // rentals have ended. Scheduled rentals do not stop it: they move to another node (as they
  // do from a node sent to maintenance or draining). An activation queues a wipe of the
  // node's unwiped GPUs (Lifecycle::node_activated) before any rental starts on them.
  void check_node_transition(Tx& tx, const std::string& node_id,
                             inventory::NodeAction action) override;

  // Starts the lifecycle worker's thread: run_once every lifecycle_interval. Every replica
  // runs one; their claims never overlap (scheduler/lifecycle.h).
  void start() override;
  // Wakes the thread and waits for it: at most the end of the run in progress, whose
  // statements pool.cancel_all() cuts short at shutdown. Idempotent.
  void stop() override;

  // For the test-only routes: a lifecycle run at the test clock's now, and agent tasks
  // completed by hand until the agent exists.
  scheduler::Lifecycle& lifecycle() { return lifecycle_; }
  scheduler::TaskStore& task_store() { return tasks_; }
  // Host certificates for the keys an agent's hello reports.
  scheduler::SshAccess& ssh_access() { return ssh_access_; }
  // Rentals' creations and moves, for other modules' hooks (webhooks).
  scheduler::RentalStore& rentals() { return rentals_; }
  // Notices to tenants, for other modules' hooks (webhooks).
  scheduler::NoticeStore& notices() { return notices_; }

 private:
  PgPool& pool_;
  const Clock& clock_;
  // The stores of other modules a booking reads inside its own transaction.
  inventory::CatalogStore& catalog_;
  inventory::PriceStore& prices_;
  identity::SshKeyStore& ssh_keys_;
  OrgDirectory& orgs_;
  // The lifecycle moves a drained node through inventory's own state machine.
  inventory::NodeStore& nodes_;
  scheduler::RentalStore rentals_;
  scheduler::CandidateStore candidates_;
  scheduler::TaskStore tasks_;
  // Before lifecycle_, whose install_access tasks carry its user CA key.
  identity::SshCertificateAuthority ssh_ca_;
  scheduler::SshAccess ssh_access_;
  // What install_access carries from the SSH capability (keys, host certificates, probe).
  scheduler::RentalAccessMaterial access_material_;
  // Before booking_, which chooses from it, and views_, which counts from it.
  scheduler::CapacityIndex capacity_;
  scheduler::Booking booking_;
  scheduler::Lifecycle lifecycle_;
  scheduler::CatalogViews views_;
  scheduler::Rentals customer_rentals_;
  scheduler::HandoverReports reports_;
  scheduler::Doctor doctor_;
  scheduler::RentalTelemetry telemetry_;
  std::optional<Timestamp> telemetry_kept_at_;  // the lifecycle worker's thread only
  scheduler::NoticeStore notices_;
  scheduler::HandoverStore handovers_;
  scheduler::Maintenance maintenance_;
  http::RentalRoutesState rental_routes_;
  http::AdvisorRoutesState advisor_routes_;
  http::MaintenanceRoutesState maintenance_routes_;
  http::NoticeRoutesState notice_routes_;
  http::TenantOperationRoutesState tenant_operation_routes_;
  // Last: stopped before what its ticks use is destroyed. Its stopping() is read by
  // run_once between its steps.
  PeriodicWorker lifecycle_worker_;
};

}  // namespace gpurent
