// The rental lifecycle worker: moves rentals through scheduled → provisioning → active →
// releasing → ended (and the side exit failed), hands the node's agent its tasks for each
// move, places the waitlist when capacity appears and expires what waited too long. Every
// replica runs it at once: each step is one transaction that claims its rental with
// FOR UPDATE SKIP LOCKED, so no rental is moved twice.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "inventory/burn_in_store.h"
#include "inventory/node_health_log.h"
#include "inventory/node_store.h"
#include "scheduler/access_material.h"
#include "scheduler/booking.h"
#include "scheduler/handovers.h"
#include "scheduler/notices.h"
#include "scheduler/records.h"
#include "scheduler/rental_store.h"
#include "scheduler/task_store.h"

#include <nlohmann/json.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::scheduler {

struct LifecycleOptions {
  // How long one provisioning attempt (reimage, image, access) may take before it is retried.
  std::chrono::seconds provisioning_timeout{30 * 60};
  // How long one wipe may take before it is asked again.
  std::chrono::seconds releasing_timeout{30 * 60};
  // How soon a rental waiting on its tasks is looked at again: tasks finish between checks,
  // and due() only offers a provisioning or releasing rental at its check time.
  std::chrono::seconds poll{5};
  // Provisioning tries, and wipe tries, each in all.
  int max_attempts = 3;
  // At most this many steps per run_once, so one run ends even under a flood of due rentals.
  int max_steps = 500;
  // How many waiting rentals one run considers.
  int waitlist_batch = 200;
  // The SSH user CA's public key lines each node's sshd trusts (install_access writes them
  // to TrustedUserCAKeys).
  std::vector<std::string> user_ca_keys;
  // The deadline of an install_access task that carries a probe certificate, from its
  // making: the certificate's own end (DESIGN.md "Node trust"), so an agent busy past it
  // fails the task rather than start a login probe that cannot succeed.
  std::chrono::seconds probe_deadline{110};
  // A burn-in (agent_proto/burn_in/figures.h) between a rental's provision and its access, and
  // after its wipe at the end: a node that fails the first is drained and the rental placed
  // again (or cancelled free), one that fails the second is drained for the operator. Off in
  // tests that run the lifecycle by hand; the server's `burn_ins` setting.
  bool burn_ins = false;
  // Has the next run_once start now rather than at its poll (the process's lifecycle worker's
  // wake()); none in tests that run it by hand.
  std::function<void()> wake;
};

// How many burn-ins this replica judged, by phase and verdict (gpurent_burn_ins_total): a
// failed one drains a node, which the operator is alerted to (deploy/prometheus/alerts.yml,
// GpurentBurnInFailed).
struct BurnInCounts {
  static constexpr std::array<std::string_view, 4> kPhases{"handover", "release", "enrolment",
                                                           "admin"};
  std::array<std::atomic<std::uint64_t>, 4> passed{};
  std::array<std::atomic<std::uint64_t>, 4> failed{};
};

class Lifecycle {
 public:
  // `access` is the SSH capability's (scheduler/access_material.h); none: install_access
  // grants certificates only and asks for no login probe.
  Lifecycle(RentalStore& rentals, TaskStore& tasks, inventory::NodeStore& nodes, Booking& booking,
            LifecycleOptions options, AccessMaterial* access = nullptr)
      : rentals_(rentals),
        tasks_(tasks),
        nodes_(nodes),
        booking_(booking),
        options_(options),
        access_(access) {}

  // One pass at `now`: expires the waitlist's overdue rentals, moves rentals whose node is
  // out of service (kNodesOutOfService) before their start to another node (or cancels them
  // free), places the waiting ones
  // that now fit (round-robin by org, see lifecycle.cpp), then steps every due rental, one
  // transaction each. The number of rentals moved. A set `stopping` ends the run after the
  // step in progress (shutdown), leaving the rest to the next run or another replica.
  int run_once(PgPool& pool, Timestamp now, const std::atomic<bool>* stopping = nullptr);

  const LifecycleOptions& options() const { return options_; }

  // Tenants told of what happens to their running rentals (a swap, an interruption) and
  // nodes told of every notice (notice_to_node); none in tests that do not ask.
  void notify_with(NoticeStore* notices) { notices_ = notices; }
  HandoverStore& handovers() { return handovers_; }

  // Hot swap: an active rental (locked by the caller) whose node failed or is taken by a
  // maintenance window moves to a spare of the same shape (Booking::place_rest) for the rest
  // of its period: its GPUs on the old node are let go (revoked and wiped there, should the
  // agent answer), a handover opens, and it is `provisioning` on the spare — provisioned,
  // burnt in and its access installed with the spare's fresh host certificate — under the
  // same id, login and certificate principal. Billing goes on; its return to active credits
  // the minutes lost (rental_billing.h). False, with nothing changed, when no spare fits.
  bool swap(Tx& tx, const RentalRecord& locked, HandoverCause cause, const std::string& why,
            Timestamp now);

  // A scheduled rental (locked) moves to start at `new_start`, the same length and price, on
  // any GPUs of its shape (its own again, if they are free then): a maintenance notice's
  // "shift". False, with its allocations gone (the caller rolls back), when nothing fits.
  bool shift(Tx& tx, const RentalRecord& locked, Timestamp new_start, const std::string& why);

  // A rental that gave up its GPUs on its node from a maintenance window's start (it stayed,
  // notified) has them back for its whole period: the window was cancelled. False, with
  // nothing changed, when someone else booked them meanwhile.
  bool restore_on_node(Tx& tx, const RentalRecord& locked);

  // The tenant's soft reboot of an active rental that holds its whole node: a reboot task for
  // the agent, then the access check again before it is `active` (no credit: the tenant's
  // own). Throws invalid_state for another state, a handover in progress, or a rental that
  // shares its node (details.node_gpu_count).
  void reboot(Tx& tx, const RentalRecord& locked, const std::optional<std::string>& by_user,
              Timestamp now);

  // An admin's power action reset the node (bmc/node_power.h): each active rental on it is
  // handed over again on the same node — the access and health checks again before it is
  // `active`, the minutes credited. The ids.
  std::vector<std::string> power_cycled(Tx& tx, const std::string& node_id,
                                        const std::string& action, Timestamp now);

  // A notice reached an active rental: its node's agent writes it into the node's notice file
  // and runs the rental's checkpoint command as its login.
  void notice_to_node(Tx& tx, const RentalNotice& notice);

  // A rental has a step due now (a task of its provisioning has finished, reported after
  // commit): the next run starts at once, so a CI job waiting for `active` does not wait for
  // the poll as well.
  void due_now() {
    if (options_.wake) options_.wake();
  }

  // Work that runs at the end of every run_once, on every replica, at the run's `now` (the
  // billing capture and invoice finalisation, set by the process wiring). A job must be safe
  // to run on several replicas at once; its failure is logged and retried on the next run.
  using JobFn = std::function<void(PgPool&, Timestamp now, const std::atomic<bool>* stopping)>;
  struct Job {
    std::string name;
    JobFn run;
  };
  // `before_steps`: run at the start of every run_once instead, before any rental is stepped
  // (what must be decided before a start at the same time: a maintenance window's defaults).
  void add_job(std::string name, JobFn run, bool before_steps = false) {
    (before_steps ? early_jobs_ : jobs_).push_back({std::move(name), std::move(run)});
  }

  // An agent's report of a task, in the transaction that recorded it (the agent module's),
  // `task` as it was before the report. A provision of a provisioning rental's current
  // attempt that succeeded gets its install_access at once (never a second one for the
  // attempt); the end of either has the rental looked at on the next run. A wipe that
  // succeeded clears the unwiped marks it covers (those set before it was made); a wipe that
  // failed with nobody to retry it (the node's own, or a rental that is over) sends the node
  // to maintenance. Never waits for a rental's lock: a rental the worker holds is the
  // worker's to look at (it makes the install_access itself when it finds the provision
  // done).
  void task_finished(Tx& tx, const AgentTask& task, bool ok, Timestamp now);

  // An agent's burn_in result, judged before its task is completed (fleet::ControlPlane): the
  // figures against the node's model and the fleet's medians (inventory/burn_in_rules.h),
  // recorded with the verdict. `ran`: the agent could run the tools. The task's outcome: it
  // succeeded only when the burn-in passed, with the verdict's summary as its message.
  struct BurnInOutcome {
    bool passed = false;
    std::string message;
  };
  BurnInOutcome judge_burn_in(Tx& tx, const AgentTask& task, bool ran, const std::string& message,
                              const std::optional<nlohmann::json>& result, Timestamp now);
  const BurnInCounts& burn_in_counts() const { return burn_in_counts_; }

  // A burn-in of the whole node, not for a rental: at its enrolment (only with burn_ins on)
  // or on an admin's request ("admin", always). A failure drains the node. The task; none at
  // an enrolment with burn-ins off.
  std::optional<AgentTask> node_burn_in(Tx& tx, const std::string& node_id, int gpu_count,
                                        const std::string& phase);

  // An admin activated the node (maintenance → available): its unwiped GPUs get a wipe of the
  // node's own first, unless one is queued already; until it succeeds no rental starts on
  // them. The task, when one was made.
  std::optional<AgentTask> node_activated(Tx& tx, const std::string& node_id);

  // The node failed under its rentals (fleet::ControlPlane::fail_node): every rental running on
  // it is swapped to a spare when it is active and one fits (swap()); otherwise (provisioning,
  // or no spare) it becomes `interrupted` with `reason` — the event billing
  // credits — its allocations cut to now, and revoke_access and wipe tasks queued should the
  // agent still answer (its GPUs stay unwiped until the wipe succeeds). Rentals that have not
  // started move to another node on the next run (stranded). A rental releasing already just
  // goes on. The ids interrupted (not those swapped).
  std::vector<std::string> interrupt_node(Tx& tx, const std::string& node_id,
                                          const std::string& reason, Timestamp now);

  // interrupt_node()'s end for one rental (provisioning or active, locked): a maintenance
  // window took its node and no spare fits.
  void interrupt_rental(Tx& tx, const RentalRecord& locked, const std::string& why, Timestamp now);

  // relocate()'s move, for a caller that decides what happens when nothing fits: the
  // rental's allocations are dropped and it is placed again for the same period at the same
  // price, on GPUs that are not unwiped (held out of its reach while it is placed), on no node
  // of `avoid_nodes`. Placed: a scheduled → scheduled event ("moved from
  // node …: why"), true. Nothing fits: cancelled free when `cancel_when_full`, else false with
  // the rental unplaced (its allocations gone: the caller rolls back).
  bool move_elsewhere(Tx& tx, const RentalRecord& r, const std::string& why, Timestamp now,
                      const std::vector<std::string>& avoid_nodes, bool cancel_when_full);

  // The customer's terminate, on a rental locked by the caller. Before its start: cancelled,
  // its GPUs free at once. Once started: released now, as at the end of its period (access
  // revoked and the node wiped, an unfinished provisioning abandoned), its GPUs free after
  // the cleaning window from now. Throws invalid_state when it is already ending or over.
  // The state it moved to.
  RentalState terminate(Tx& tx, const RentalRecord& locked, Timestamp now,
                        const std::string& reason, const std::optional<std::string>& by_user);

 private:
  int steps(PgPool& pool, Timestamp now, const std::atomic<bool>* stopping);
  int expire_waitlist(PgPool& pool, Timestamp now);
  int place_waitlist(PgPool& pool);
  int replace_stranded(PgPool& pool, Timestamp now);
  // Claims one due rental and steps it: whether it moved, nullopt when none is due.
  std::optional<bool> step(PgPool& pool, Timestamp now);
  bool start(Tx& tx, const RentalRecord& r, Timestamp now);
  // Moves a scheduled rental off a node out of service or off unwiped GPUs (`why`), for the
  // same period at the same price, to GPUs that are not unwiped; or cancels it free.
  void relocate(Tx& tx, const RentalRecord& r, const std::string& why, Timestamp now) {
    move_elsewhere(tx, r, why, now, {}, true);
  }
  bool check_provisioning(Tx& tx, const RentalRecord& r, Timestamp now);
  bool release(Tx& tx, const RentalRecord& r, Timestamp now);
  bool check_releasing(Tx& tx, const RentalRecord& r, Timestamp now);
  // The attempt's provision; its install_access follows once the provision succeeded.
  void provisioning_tasks(Tx& tx, const RentalRecord& r, int attempt);
  void access_task(Tx& tx, const RentalRecord& r, int attempt, Timestamp now);
  // The node's GPUs measured for the rental: before its access ("handover", of the attempt) or
  // after its wipe ("release").
  void burn_in_task(Tx& tx, const RentalRecord& r, const std::string& phase, int attempt);
  // The node's GPUs' memory error counters now (its latest telemetry), for a burn-in's
  // payload: what the judging compares with afterwards.
  nlohmann::json ecc_snapshot(Tx& tx, const std::string& node_id);
  // judge_burn_in without the counting.
  BurnInOutcome judged_burn_in(Tx& tx, const AgentTask& task, bool ran, const std::string& message,
                               const std::optional<nlohmann::json>& result, Timestamp now);
  // The attempt's provision succeeded: its burn-in next, or with none its access; once each.
  void after_provision(Tx& tx, const RentalRecord& r, Timestamp now);
  // The node failed the rental's handover burn-in: the node drains, the rental goes back to
  // the calendar on other GPUs for the same period, or is cancelled free; never billed.
  bool handover_failed(Tx& tx, const RentalRecord& r, const std::vector<AgentTask>& attempt_tasks,
                       const std::string& why, Timestamp now);
  // Out of the pool for the operator, with the reason: a failed burn-in.
  void drain_for_burn_in(Tx& tx, const std::string& node_id, const std::string& why);
  void wipe_task(Tx& tx, const RentalRecord& r, int attempt);
  // Revoke access and wipe, as every rental that reached its node ends with.
  void revoke_and_wipe(Tx& tx, const RentalRecord& r);
  // Revoke access and wipe, and the first check of them.
  void releasing_tasks(Tx& tx, const RentalRecord& r, Timestamp now);
  void settle_node(Tx& tx, const std::string& node_id, bool unwiped);
  // The rental's handover in progress ends with `outcome` (active, interrupted, ended).
  void end_handover(Tx& tx, const std::string& rental_id, const std::string& outcome,
                    Timestamp now);
  // A handed-over rental could not be made active again: interrupted, as its node failing
  // would have had it.
  bool interrupt_handover(Tx& tx, const RentalRecord& r, const std::vector<AgentTask>& open,
                          const std::string& why, Timestamp now);
  // A rental that became active for the first time: the maintenance notices it got before,
  // still unanswered, reach its node now.
  void notices_to_new_tenant(Tx& tx, const RentalRecord& r, Timestamp now);
  // Hands an active rental over again on its own node (a reboot, a power action).
  void hand_over_in_place(Tx& tx, const RentalRecord& r, HandoverCause cause,
                          const std::string& why, const std::optional<std::string>& by_user,
                          Timestamp now);

  RentalStore& rentals_;
  TaskStore& tasks_;
  inventory::NodeStore& nodes_;
  Booking& booking_;
  LifecycleOptions options_;
  AccessMaterial* access_;
  inventory::BurnInStore burn_ins_;
  inventory::NodeHealthLog health_log_;
  BurnInCounts burn_in_counts_;
  HandoverStore handovers_;
  NoticeStore* notices_ = nullptr;
  std::vector<Job> jobs_;
  std::vector<Job> early_jobs_;
  void run_jobs(const std::vector<Job>& jobs, PgPool& pool, Timestamp now,
                const std::atomic<bool>* stopping);
};

}  // namespace gpurent::scheduler
