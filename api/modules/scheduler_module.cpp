// The scheduler's wiring and the lifecycle worker's thread.
#include "api/modules/scheduler_module.h"

#include "core/error.h"
#include "core/limits.h"
#include "core/log.h"
#include "scheduler/rental_billing.h"

namespace gpurent {

SchedulerModule::SchedulerModule(const ModuleContext& ctx, const SchedulerPeers& peers)
    : pool_(ctx.pool),
      clock_(ctx.clock),
      catalog_(peers.catalog),
      prices_(peers.prices),
      ssh_keys_(peers.ssh_keys),
      orgs_(peers.orgs),
      nodes_(peers.nodes),
      rentals_(ctx.clock),
      tasks_(ctx.clock),
      ssh_ca_(identity::SshCertificateAuthority::load_or_create(ctx.config.ssh_ca_dir)),
      ssh_access_(ssh_ca_, ctx.clock),
      access_material_(ssh_access_, ssh_keys_),
      // The copy reaches as far as any booking, quote or offer looks: the horizon, then the
      // longest rental (and a day for a site's time zone), so none of them loads directly.
      capacity_(ctx.clock, candidates_, [&listener = ctx.listener] { return listener.connected(); },
                {.reach = std::chrono::hours(24) *
                          (ctx.config.booking_horizon_days + limits::kMaxRentalDays + 2)}),
      booking_(ctx.clock, peers.catalog_copy, rentals_, candidates_, capacity_, orgs_,
               {.cleaning_window = ctx.config.rental_cleaning_window,
                .horizon = std::chrono::hours(24) * ctx.config.booking_horizon_days,
                .pending_for = ctx.config.pending_timeout}),
      // Checks as often as the worker runs: a finished task is noticed on the next run.
      lifecycle_(rentals_, tasks_, nodes_, booking_,
                 {.poll = ctx.config.lifecycle_interval,
                  .user_ca_keys = {ssh_ca_.user_ca_public_key()},
                  .burn_ins = ctx.config.burn_ins,
                  .wake = ctx.config.lifecycle_wake
                              ? std::function<void()>([this] { lifecycle_worker_.wake(); })
                              : std::function<void()>()},
                 &access_material_),
      views_(ctx.clock, catalog_, prices_, capacity_, ctx.config.rental_cleaning_window,
             ctx.config.booking_horizon_days),
      customer_rentals_(ctx.pool, ctx.clock, booking_, lifecycle_, rentals_, ssh_keys_,
                        &ssh_access_, &capacity_),
      reports_(ctx.pool, rentals_, ssh_ca_),
      doctor_(ctx.pool, rentals_, tasks_),
      telemetry_(ctx.pool, ctx.clock, rentals_),
      notices_(ctx.clock),
      maintenance_(ctx.pool, ctx.clock, rentals_, lifecycle_, notices_, &capacity_,
                   ctx.config.maintenance_notice),
      rental_routes_{.pool = &ctx.pool,
                     .clock = &ctx.clock,
                     .rentals = &customer_rentals_,
                     .store = &rentals_,
                     .views = &views_,
                     .reports = &reports_,
                     .doctor = &doctor_,
                     .telemetry = &telemetry_},
      advisor_routes_{.pool = &ctx.pool, .catalog = &catalog_, .views = &views_},
      maintenance_routes_{.pool = &ctx.pool, .maintenance = &maintenance_},
      notice_routes_{.pool = &ctx.pool, .notices = &notices_, .rentals = &rentals_},
      tenant_operation_routes_{.rentals = &customer_rentals_,
                               .maintenance = &maintenance_,
                               .currency = ctx.config.currency},
      // A database outage or a cancelled statement throws (the worker logs it): the next run
      // tries again, and every step it did not finish was rolled back whole.
      lifecycle_worker_("rental lifecycle run", ctx.config.lifecycle_interval, [this] {
        lifecycle_.run_once(pool_, clock_.now(), &lifecycle_worker_.stopping());
      }) {
  // Each announcement names a node, or '*' for everything (migrations/0010).
  ctx.listener.subscribe("gpurent_capacity", [this](const std::string& node) {
    if (node == "*") {
      capacity_.everything_changed();
    } else {
      capacity_.node_changed(node);
    }
  });
  ctx.listener.subscribe("gpurent_burn_ins",
                         [this](const std::string&) { views_.measurements_changed(); });
  // Changes made while the listener was reconnecting were never announced.
  ctx.listener.on_connected([this] {
    capacity_.everything_changed();
    views_.measurements_changed();
  });
  booking_.charge_with(&peers.charges);
  rentals_.on_transition([this, &charges = peers.charges](Tx& tx, const std::string& id,
                                                          scheduler::RentalState from,
                                                          scheduler::RentalState to) {
    scheduler::bill_transition(tx, charges, rentals_, handovers_, id, from, to, clock_.now());
  });
  for (const auto& job : peers.lifecycle_jobs) lifecycle_.add_job(job.name, job.run);
  // Tenants told of swaps and interruptions; every notice of a rental on its node reaches the
  // node's agent (the notice file, the checkpoint command).
  lifecycle_.notify_with(&notices_);
  notices_.on_created(
      [this](Tx& tx, const scheduler::RentalNotice& n) { lifecycle_.notice_to_node(tx, n); });
  // Maintenance notices unanswered by a window's start get the default, before the run's
  // steps start anything on the window's nodes.
  lifecycle_.add_job(
      "maintenance_defaults",
      [this](PgPool&, Timestamp now, const std::atomic<bool>*) { maintenance_.apply_due(now); },
      /*before_steps=*/true);
  // The tenants' telemetry kept with their rentals, every half minute on each replica (a node
  // reports a sample a minute): the lifecycle worker runs it, one thread per replica.
  lifecycle_.add_job("rental_telemetry", [this](PgPool& pool, Timestamp now,
                                                const std::atomic<bool>*) {
    constexpr auto kEvery = std::chrono::seconds(30);
    if (telemetry_kept_at_ && now - *telemetry_kept_at_ < kEvery && now >= *telemetry_kept_at_) {
      return;
    }
    telemetry_kept_at_ = now;
    pool.transact("rental_telemetry_keep", [&](Tx& tx) { return telemetry_.keep(tx, now).first; });
  });
}

bool SchedulerModule::serves_rentals(Tx& tx, const std::string& node_id) {
  for (const auto& id : rentals_.running_on(tx, node_id)) {
    auto r = rentals_.get_any(tx, id);
    if (r && r->state == scheduler::RentalState::kActive) return true;
  }
  return false;
}

nlohmann::json SchedulerModule::node_burn_ins(Tx& tx, const std::string& node_id) {
  constexpr int kShown = 10;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& b : inventory::BurnInStore().for_node(tx, node_id, kShown)) {
    nlohmann::json failed = nlohmann::json::array();
    for (const auto& f : b.findings) {
      if (f.value("verdict", "") == "fail") failed.push_back(f.value("detail", ""));
    }
    out.push_back({{"task_id", b.task_id},
                   {"phase", b.phase},
                   {"rental_id", b.rental_id ? nlohmann::json(*b.rental_id) : nullptr},
                   {"passed", b.passed},
                   {"finished_at", format_rfc3339(b.finished_at)},
                   {"failed", std::move(failed)}});
  }
  return out;
}

void SchedulerModule::check_node_transition(Tx& tx, const std::string& node_id,
                                            inventory::NodeAction action) {
  if (action == inventory::NodeAction::kActivate) {
    // Back in the pool, but not on GPUs a tenant could reach that were never wiped since.
    if (auto wipe = lifecycle_.node_activated(tx, node_id)) {
      log::info("node {} activated: wipe {} queued for its unwiped GPUs first", node_id, wipe->id);
    }
    return;
  }
  if (action != inventory::NodeAction::kRetire) return;
  auto running = rentals_.running_on(tx, node_id);
  if (running.empty()) return;
  throw Error(ErrorCode::kInvalidState,
              "The node has " + std::to_string(running.size()) +
                  " rental(s) running; drain it and retire it once they have ended.",
              {{"running_rentals", running}});
}

SchedulerModule::~SchedulerModule() {
  stop();
}

void SchedulerModule::add_routes(http::Router& router) {
  http::add_rental_routes(router, rental_routes_);
  http::add_advisor_routes(router, advisor_routes_);
  http::add_maintenance_routes(router, maintenance_routes_);
  http::add_notice_routes(router, notice_routes_);
  http::add_tenant_operation_routes(router, tenant_operation_routes_);
}

void SchedulerModule::add_metrics(http::Metrics& metrics) {
  metrics.add_job("rental_lifecycle", lifecycle_worker_.stats());
  metrics.add_collector([this](std::string& out) {
    http::append_family(out, "gpurent_burn_ins_total", "counter",
                        "Burn-ins this replica judged, by phase and verdict; a failed one drains "
                        "its node.");
    const auto& counts = lifecycle_.burn_in_counts();
    for (std::size_t i = 0; i < scheduler::BurnInCounts::kPhases.size(); ++i) {
      for (bool passed : {true, false}) {
        out += "gpurent_burn_ins_total{phase=\"";
        out += scheduler::BurnInCounts::kPhases[i];
        out += passed ? "\",verdict=\"passed\"} " : "\",verdict=\"failed\"} ";
        out += std::to_string((passed ? counts.passed[i] : counts.failed[i]).load());
        out += "\n";
      }
    }
  });
}

void SchedulerModule::start() {
  lifecycle_worker_.start();
}

void SchedulerModule::stop() {
  lifecycle_worker_.stop();
}

}  // namespace gpurent
