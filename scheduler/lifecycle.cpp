// The rental lifecycle worker: one transaction per step, tasks for the agent with each move.
#include "scheduler/lifecycle.h"

#include "agent_proto/burn_in/figures.h"
#include "core/db_errors.h"
#include "core/error.h"
#include "core/log.h"
#include "core/pg_array.h"
#include "core/sql.h"
#include "inventory/node_state.h"
#include "scheduler/lifecycle_rules.h"

#include <algorithm>
#include <map>

namespace gpurent::scheduler {
namespace {

// Rentals that still hold or will hold the node: while one is left a draining node keeps
// draining.
constexpr Statement kLiveOnNode = {"lifecycle_live_on_node",
                                   "SELECT count(*) FROM rentals WHERE node_id = $1"
                                   " AND state = ANY ($2::text[])"};

// Whether a run has anything to do: one statement outside any transaction, so an idle fleet
// costs every replica one round trip per interval rather than three transactions (and one
// more for the maintenance defaults' own check, Maintenance::apply_due). Whatever becomes due
// just after it is the next run's.
constexpr Statement kNodeStateShared = {"lifecycle_node_state",
                                        "SELECT state FROM nodes WHERE id = $1 FOR SHARE"};

// $2 the rental state of those not started (scheduled), $3 the node states they leave
// (kNodesOutOfService). A silent node is the fleet control plane's to fail
// (fleet/control_plane.h); the rentals it strands are found here once it has.
constexpr Statement kAnyWork = {
    "lifecycle_any_work",
    "SELECT EXISTS (SELECT 1 FROM rentals WHERE due_at <= $1::timestamptz)"
    " OR EXISTS (SELECT 1 FROM rentals WHERE " GPURENT_SQL_RENTAL_WAITING_FOR_CAPACITY("state") ")"
    " OR EXISTS (SELECT 1 FROM rentals r JOIN nodes n ON n.id = r.node_id"
    " WHERE r.state = $2::text AND n.state = ANY ($3::text[]))"};

// The wipe gate (migrations/0019). A GPU is unwiped from its rental's start on: a tenant may
// reach it from then.
constexpr Statement kMarkUnwiped = {
    "lifecycle_mark_unwiped",
    "UPDATE gpus SET unwiped_since = $3::timestamptz WHERE node_id = $1"
    " AND idx = ANY ($2::int[]) AND unwiped_since IS NULL"};
// A wipe clears the marks set before it was made ($3): a mark set later is a tenant that came
// after it.
constexpr Statement kClearUnwiped = {
    "lifecycle_clear_unwiped",
    "UPDATE gpus SET unwiped_since = NULL WHERE node_id = $1 AND idx = ANY ($2::int[])"
    " AND unwiped_since <= $3::timestamptz"};
constexpr Statement kAnyUnwiped = {
    "lifecycle_any_unwiped",
    "SELECT EXISTS (SELECT 1 FROM gpus WHERE node_id = $1 AND idx = ANY ($2::int[])"
    " AND unwiped_since IS NOT NULL)"};
// A swapped rental's GPUs on the node it left.
constexpr Statement kDropOnNode = {
    "lifecycle_drop_on_node",
    "DELETE FROM allocations a USING gpus g WHERE a.gpu_id = g.id AND a.rental_id = $1"
    " AND g.node_id = $2"};
constexpr Statement kNodeGpuCount = {"lifecycle_node_gpu_count",
                                     "SELECT count(*) FROM gpus WHERE node_id = $1"};
constexpr Statement kCheckpointOf = {
    "lifecycle_checkpoint_of",
    "SELECT checkpoint_command, checkpoint_timeout_s FROM rentals WHERE id = $1"};
constexpr Statement kNodeUnwiped = {
    "lifecycle_node_unwiped",
    "SELECT idx FROM gpus WHERE node_id = $1 AND unwiped_since IS NOT NULL ORDER BY idx"};
// A handover's tasks; a release's burn-in carries no attempt and is not looked at here.
// A reboot is an in-place handover's first step, in the provision's place.
bool is_provisioning_kind(TaskKind k) {
  return k == TaskKind::kProvision || k == TaskKind::kInstallAccess || k == TaskKind::kBurnIn ||
         k == TaskKind::kReboot;
}

bool is_finished(TaskState s) {
  return s == TaskState::kSucceeded || s == TaskState::kFailed;
}

// Closes the unfinished tasks of an attempt given up on, so the agent is not sent them again after
// a reconnect and a late report of one cannot be taken for the new attempt's.
void close_superseded(Tx& tx, TaskStore& tasks, const std::vector<AgentTask>& superseded) {
  for (const auto& t : superseded) {
    if (!is_finished(t.state))
      tasks.complete(tx, t.id, false, "abandoned: its attempt timed out or failed");
  }
}

int attempt_of(const AgentTask& t) {
  return t.payload.value("attempt", 0);
}

std::vector<int> gpu_indices_of(const AgentTask& t) {
  std::vector<int> out;
  auto it = t.payload.find("gpu_indices");
  if (it == t.payload.end() || !it->is_array()) return out;
  for (const auto& i : *it) {
    if (i.is_number_integer()) out.push_back(i.get<int>());
  }
  return out;
}

bool is_state(const std::string& text, inventory::NodeState state) {
  return text == inventory::to_string(state);
}

}  // namespace

int Lifecycle::run_once(PgPool& pool, Timestamp now, const std::atomic<bool>* stopping) {
  run_jobs(early_jobs_, pool, now, stopping);
  bool work = pool.read("lifecycle_any_work", [&](Tx& tx) {
    return tx
        .exec(kAnyWork, sql_timestamp(now), std::string(to_string(RentalState::kScheduled)),
              inventory::kNodesOutOfService.sql())[0][0]
        .as<bool>();
  });
  int moved = work ? steps(pool, now, stopping) : 0;
  run_jobs(jobs_, pool, now, stopping);
  return moved;
}

void Lifecycle::run_jobs(const std::vector<Job>& jobs, PgPool& pool, Timestamp now,
                         const std::atomic<bool>* stopping) {
  // The jobs that ride on the worker (billing's daily capture and invoices), each on its own:
  // one failing leaves the others to run, and the next run tries it again.
  for (const auto& job : jobs) {
    if (stopping && stopping->load()) break;
    try {
      job.run(pool, now, stopping);
    } catch (const std::exception& e) {
      log::warn("lifecycle job {} failed: {}", job.name, e.what());
    }
  }
}

int Lifecycle::steps(PgPool& pool, Timestamp now, const std::atomic<bool>* stopping) {
  auto stop = [stopping] { return stopping && stopping->load(); };
  int moved = expire_waitlist(pool, now);
  if (stop()) return moved;
  moved += replace_stranded(pool, now);
  if (stop()) return moved;
  moved += place_waitlist(pool);
  for (int i = 0; i < options_.max_steps && !stop(); ++i) {
    auto step_moved = step(pool, now);
    if (!step_moved) break;
    if (*step_moved) ++moved;
  }
  return moved;
}

int Lifecycle::expire_waitlist(PgPool& pool, Timestamp now) {
  return pool.transact("lifecycle_expire", [&](Tx& tx) {
    // A pending rental holds no GPUs, so there is nothing to release with it.
    return static_cast<int>(rentals_.expire_pending(tx, now).size());
  });
}

int Lifecycle::replace_stranded(PgPool& pool, Timestamp now) {
  return pool.transact("lifecycle_stranded", [&](Tx& tx) {
    int moved = 0;
    // Soonest start first: with room for only some, the nearest are the ones kept.
    for (const auto& r : rentals_.stranded(tx, options_.waitlist_batch)) {
      auto node = nodes_.get(tx, *r.node_id);
      relocate(tx, r, "node " + *r.node_id + " is " + (node ? node->node.state : "gone"), now);
      ++moved;
    }
    return moved;
  });
}

bool Lifecycle::move_elsewhere(Tx& tx, const RentalRecord& r, const std::string& why, Timestamp now,
                               const std::vector<std::string>& avoid_nodes, bool cancel_when_full) {
  // A rental that may not start where it was booked (its node out of service, or its GPUs not
  // wiped since their last tenant) moves to another place that fits the same period, keeping
  // its price; with none free it is cancelled, and since it never started nothing is
  // charged. In one transaction: the old allocations are dropped and the new ones taken
  // together, so the rental never holds both or neither. Unwiped GPUs, wherever they are,
  // are held by the rental itself while it is placed, so the placement cannot choose them,
  // and let go again after.
  std::string from = r.node_id.value_or("");
  rentals_.drop_allocations(tx, r.id);
  std::vector<long long> unwiped;
  for (const auto& g : rentals_.unwiped_gpus(tx, r.gpu_model)) unwiped.push_back(g.gpu_id);
  // Wide enough for wherever the placement may put it: from its start (or now) over its
  // length, the cleaning window and a day to spare for a period that moves to local days.
  Timestamp begin = std::min(r.period.start, now);
  Timestamp end = std::max(r.period.end, now + (r.period.end - r.period.start)) +
                  booking_.options().cleaning_window + std::chrono::hours(24);
  auto held = rentals_.hold_gpus(tx, r.id, unwiped, {begin, end});
  bool placed = booking_.place_pending(tx, r, avoid_nodes);
  rentals_.let_go(tx, r.id, held);
  if (placed) {
    rentals_.transition(tx, r.id, RentalState::kScheduled, RentalState::kScheduled,
                        "moved from node " + from + ": " + why);
  } else if (cancel_when_full) {
    rentals_.transition(tx, r.id, RentalState::kScheduled, RentalState::kCancelled,
                        why + ", and no other GPUs are free for the period; nothing is charged");
  } else {
    return false;
  }
  // A draining node that held nothing else has drained.
  if (!from.empty()) settle_node(tx, from, false);
  return placed;
}

int Lifecycle::place_waitlist(PgPool& pool) {
  // One transaction for the whole waitlist: pending_in_order() locks it without skipping,
  // so a second replica waits here rather than placing a later request ahead of an earlier
  // one; each placement is its own savepoint inside Booking::place_pending.
  return pool.transact("lifecycle_waitlist", [&](Tx& tx) {
    int placed = 0;
    for (const auto& r :
         round_robin_by_org(rentals_.pending_in_order(tx, options_.waitlist_batch))) {
      if (!booking_.within_limits(tx, r) || !booking_.place_pending(tx, r)) continue;
      if (rentals_.transition(tx, r.id, RentalState::kPending, RentalState::kScheduled,
                              "capacity available")) {
        ++placed;
      }
    }
    return placed;
  });
}

std::optional<bool> Lifecycle::step(PgPool& pool, Timestamp now) {
  return pool.transact("lifecycle_step", [&](Tx& tx) -> std::optional<bool> {
    auto due = rentals_.due(tx, now, 1);
    if (due.empty()) return std::nullopt;
    const RentalRecord& r = due.front();
    switch (r.state) {
      case RentalState::kScheduled:
        return start(tx, r, now);
      case RentalState::kProvisioning:
        return check_provisioning(tx, r, now);
      case RentalState::kActive:
        return release(tx, r, now);
      case RentalState::kReleasing:
        return check_releasing(tx, r, now);
      default:
        // due() offers only the four states above; anything else is left where it is.
        return false;
    }
  });
}

void Lifecycle::provisioning_tasks(Tx& tx, const RentalRecord& r, int attempt) {
  tasks_.create(tx, *r.node_id, r.id, TaskKind::kProvision,
                {{"image_id", r.image_id}, {"gpu_indices", r.gpu_indices}, {"attempt", attempt}});
}

void Lifecycle::access_task(Tx& tx, const RentalRecord& r, int attempt, Timestamp now) {
  // What the agent writes for sshd (agent/access_files.h): the rental's own login, the
  // principal its certificates carry, and its registered keys for clients without them.
  nlohmann::json keys = access_ ? access_->authorized_keys(tx, r) : std::vector<std::string>{};
  nlohmann::json payload = {
      {"ssh_key_ids", r.ssh_key_ids},
      {"attempt", attempt},
      {"user", rental_login(r.id)},
      {"principals", {rental_principal(r.id)}},
      {"authorized_keys", keys},
      {"user_ca_keys", options_.user_ca_keys},
      {"host_certificates",
       access_ ? access_->host_certificates(tx, *r.node_id) : std::vector<std::string>{}}};
  // The login probe's certificate is made now, after the provision, so it is fresh; the
  // agent must start the task before it expires.
  std::optional<Timestamp> deadline;
  if (access_) {
    if (auto probe = access_->probe(tx, r, now)) {
      payload["probe"] = std::move(*probe);
      deadline = now + options_.probe_deadline;
    }
  }
  tasks_.create(tx, *r.node_id, r.id, TaskKind::kInstallAccess, payload, deadline);
}

void Lifecycle::wipe_task(Tx& tx, const RentalRecord& r, int attempt) {
  tasks_.create(
      tx, *r.node_id, r.id, TaskKind::kWipe,
      {{"gpu_indices", r.gpu_indices}, {"attempt", attempt}, {"user", rental_login(r.id)}});
}

void Lifecycle::revoke_and_wipe(Tx& tx, const RentalRecord& r) {
  // Access first, then the wipe: the agent runs a node's tasks in the order they were made.
  tasks_.create(tx, *r.node_id, r.id, TaskKind::kRevokeAccess,
                {{"ssh_key_ids", r.ssh_key_ids}, {"user", rental_login(r.id)}});
  wipe_task(tx, r, 0);
}

nlohmann::json Lifecycle::ecc_snapshot(Tx& tx, const std::string& node_id) {
  nlohmann::json out = nlohmann::json::array();
  auto latest = health_log_.latest(tx, node_id);
  if (!latest || !latest->gpus.is_array()) return out;
  for (const auto& gpu : latest->gpus) {
    if (!gpu.is_object() || !gpu.contains("index")) continue;
    nlohmann::json kept = {{"index", gpu["index"]}};
    for (const auto& [key, value] : gpu.items()) {
      if (key.starts_with("ecc_") || key.starts_with("remapped_")) kept[key] = value;
    }
    out.push_back(std::move(kept));
  }
  return out;
}

void Lifecycle::burn_in_task(Tx& tx, const RentalRecord& r, const std::string& phase, int attempt) {
  tasks_.create(tx, *r.node_id, r.id, TaskKind::kBurnIn,
                {{"gpu_indices", r.gpu_indices},
                 {"phase", phase},
                 {"attempt", attempt},
                 {"ecc_before", ecc_snapshot(tx, *r.node_id)}});
}

void Lifecycle::after_provision(Tx& tx, const RentalRecord& r, Timestamp now) {
  bool burn_in = false;
  bool access = false;
  for (const auto& other : tasks_.for_rental(tx, r.id)) {
    if (attempt_of(other) != r.attempts) continue;
    burn_in = burn_in || other.kind == TaskKind::kBurnIn;
    access = access || other.kind == TaskKind::kInstallAccess;
  }
  if (!options_.burn_ins) {
    if (!access) access_task(tx, r, r.attempts, now);
  } else if (!burn_in) {
    burn_in_task(tx, r, "handover", r.attempts);
  }
}

std::optional<AgentTask> Lifecycle::node_burn_in(Tx& tx, const std::string& node_id, int gpu_count,
                                                 const std::string& phase) {
  if (phase == "enrolment" && !options_.burn_ins) return std::nullopt;
  std::vector<int> all(static_cast<std::size_t>(std::max(gpu_count, 0)));
  for (int i = 0; i < gpu_count; ++i) all[static_cast<std::size_t>(i)] = i;
  return tasks_.create(tx, node_id, std::nullopt, TaskKind::kBurnIn,
                       {{"gpu_indices", all},
                        {"phase", phase},
                        {"attempt", 0},
                        {"ecc_before", ecc_snapshot(tx, node_id)}});
}

Lifecycle::BurnInOutcome Lifecycle::judge_burn_in(Tx& tx, const AgentTask& task, bool ran,
                                                  const std::string& message,
                                                  const std::optional<nlohmann::json>& result,
                                                  Timestamp now) {
  auto outcome = judged_burn_in(tx, task, ran, message, result, now);
  const std::string phase = task.payload.value("phase", "handover");
  for (std::size_t i = 0; i < BurnInCounts::kPhases.size(); ++i) {
    if (BurnInCounts::kPhases[i] != phase) continue;
    ++(outcome.passed ? burn_in_counts_.passed[i] : burn_in_counts_.failed[i]);
  }
  return outcome;
}

Lifecycle::BurnInOutcome Lifecycle::judged_burn_in(Tx& tx, const AgentTask& task, bool ran,
                                                   const std::string& message,
                                                   const std::optional<nlohmann::json>& result,
                                                   Timestamp now) {
  if (!ran) return {false, "burn-in could not run: " + message};
  burn_in::BurnInFigures figures;
  try {
    figures = burn_in::figures_from_json(result.value_or(nlohmann::json::object()));
  } catch (const burn_in::ParseError& e) {
    return {false, std::string("burn-in result unreadable: ") + e.what()};
  }
  auto basis = burn_ins_.basis(tx, task.node_id);
  if (!basis) return {false, "burn-in of an unknown node"};
  auto verdict = inventory::judge_burn_in(figures, basis->nominal, basis->medians);
  // Memory errors that appeared while the tools ran, from the counters the task was made with.
  if (auto before = task.payload.find("ecc_before"); before != task.payload.end()) {
    auto now_seen = health_log_.latest(tx, task.node_id);
    inventory::add_ecc_findings(verdict, *before, now_seen ? now_seen->gpus : nlohmann::json());
  }
  burn_ins_.record(tx, {.task_id = task.id,
                        .node_id = task.node_id,
                        .rental_id = task.rental_id,
                        .phase = task.payload.value("phase", "handover"),
                        .gpu_model = basis->gpu_model,
                        .passed = verdict.passed,
                        .figures = burn_in::to_json(figures),
                        .findings = inventory::findings_json(verdict),
                        .finished_at = now});
  if (verdict.passed) return {true, "burn-in passed"};
  log::warn("node {} failed its burn-in: {}", task.node_id, verdict.summary());
  std::string summary = verdict.summary();
  constexpr std::size_t kMessageBytes = 1500;  // a task's message is for people
  if (summary.size() > kMessageBytes) summary = summary.substr(0, kMessageBytes) + "…";
  return {false, "burn-in failed: " + summary};
}

bool Lifecycle::handover_failed(Tx& tx, const RentalRecord& r,
                                const std::vector<AgentTask>& attempt_tasks, const std::string& why,
                                Timestamp now) {
  close_superseded(tx, tasks_, attempt_tasks);
  std::string node = *r.node_id;
  drain_for_burn_in(tx, node, "handover burn-in failed for rental " + r.id + ": " + why);
  // Provisioned but never handed over: the tenant had no access yet, still the node is wiped
  // before anyone else's rental (its GPUs stay unwiped until then).
  revoke_and_wipe(tx, r);
  if (!rentals_.transition(tx, r.id, RentalState::kProvisioning, RentalState::kScheduled,
                           "node " + node + " failed its handover burn-in")) {
    return false;
  }
  // A new attempt: the old node's tasks are not taken for the new node's.
  rentals_.add_attempt(tx, r.id);
  auto moved = rentals_.get_any(tx, r.id);
  if (moved) relocate(tx, *moved, "node " + node + " failed its handover burn-in", now);
  return true;
}

void Lifecycle::drain_for_burn_in(Tx& tx, const std::string& node_id, const std::string& why) {
  auto node = nodes_.get(tx, node_id);
  if (!node) return;
  auto state = inventory::parse_node_state(node->node.state);
  log::warn("node {} drained: {}", node_id, why);
  if (state && inventory::next_state(*state, inventory::NodeAction::kDrain)) {
    nodes_.transition(tx, node_id, inventory::NodeAction::kDrain, why.substr(0, 500), std::nullopt);
  }
}

bool Lifecycle::start(Tx& tx, const RentalRecord& r, Timestamp now) {
  // The node's row, shared: a retirement either committed before (the rental moves on
  // rather than starting on a node out of service) or waits for this start and then sees
  // the rental running, and is refused.
  auto node = tx.exec(kNodeStateShared, *r.node_id);
  std::string state = node.empty() ? "gone" : node[0][0].as<std::string>();
  if (!is_state(state, inventory::NodeState::kAvailable)) {
    relocate(tx, r, "node " + *r.node_id + " is " + state, now);
    return true;
  }
  // The wipe gate: GPUs whose last tenant's wipe has not succeeded serve nobody else.
  if (tx.exec(kAnyUnwiped, *r.node_id, pg_array_literal(r.gpu_indices))[0][0].as<bool>()) {
    relocate(tx, r, "its GPUs on node " + *r.node_id + " are not wiped since their last rental",
             now);
    return true;
  }
  if (!rentals_.transition(tx, r.id, RentalState::kScheduled, RentalState::kProvisioning,
                           "start time reached")) {
    return false;
  }
  // From now on the tenant may reach them.
  tx.exec(kMarkUnwiped, *r.node_id, pg_array_literal(r.gpu_indices), sql_timestamp(now));
  provisioning_tasks(tx, r, r.attempts);
  // Soon rather than at the timeout: the tasks usually finish well before it.
  rentals_.set_next_check(tx, r.id,
                          std::min(now + options_.poll, now + options_.provisioning_timeout));
  return true;
}

bool Lifecycle::check_provisioning(Tx& tx, const RentalRecord& r, Timestamp now) {
  std::optional<AgentTask> provision, burn_in, access;
  std::vector<AgentTask> current_tasks;
  Timestamp created = now;
  for (const auto& t : tasks_.for_rental(tx, r.id)) {  // oldest first
    if (!is_provisioning_kind(t.kind) || attempt_of(t) != r.attempts) continue;
    (t.kind == TaskKind::kProvision || t.kind == TaskKind::kReboot ? provision
     : t.kind == TaskKind::kBurnIn                                 ? burn_in
                                                                   : access) = t;
    current_tasks.push_back(t);
    created = current_tasks.size() == 1 ? t.created_at : std::max(created, t.created_at);
  }
  auto state_of = [](const std::optional<AgentTask>& t) -> std::optional<TaskState> {
    if (!t) return std::nullopt;
    return t->state;
  };
  auto provisioned = state_of(provision);
  // A handover counts its tries from its own start; one in place (a reboot, a power action)
  // has no provision: the node kept its image, and a power action asks nothing before the
  // access check (a reboot's task stands in the provision's place).
  auto handover = handovers_.current(tx, r.id);
  const bool in_place = handover && !is_swap(handover->cause);
  const int tries = handover ? r.attempts - handover->attempt_base : r.attempts;
  if (in_place && !provision) provisioned = TaskState::kSucceeded;
  if (options_.burn_ins && !in_place && provisioned == TaskState::kSucceeded) {
    // The burn-in is the provision's second half: access only once the node measured well.
    if (!burn_in) {
      after_provision(tx, r, now);
      rentals_.set_next_check(tx, r.id, now + options_.poll);
      return false;
    }
    if (burn_in->state == TaskState::kFailed) {
      if (handover) {
        drain_for_burn_in(tx, *r.node_id,
                          "handover burn-in failed for rental " + r.id + ": " +
                              burn_in->result_message.value_or(""));
        return interrupt_handover(tx, r, current_tasks,
                                  "the spare node " + *r.node_id + " failed its burn-in", now);
      }
      return handover_failed(tx, r, current_tasks, burn_in->result_message.value_or(""), now);
    }
    provisioned = burn_in->state;
  }
  Timestamp deadline = created + options_.provisioning_timeout;
  switch (provisioning_step(provisioned, state_of(access), tries, options_.max_attempts, now,
                            deadline)) {
    case ProvisioningStep::kWait:
      rentals_.set_next_check(tx, r.id, std::min(now + options_.poll, deadline));
      return false;
    case ProvisioningStep::kMakeAccess:
      // The agent's report did not make it (this worker held the rental then, or the report
      // came another way): made here, under the rental's lock, once.
      access_task(tx, r, r.attempts, now);
      rentals_.set_next_check(tx, r.id, now + options_.poll);
      return false;
    case ProvisioningStep::kActive: {
      if (!rentals_.transition(tx, r.id, RentalState::kProvisioning, RentalState::kActive,
                               handover ? "access ready again after the " +
                                              std::string(to_string(handover->cause)) + " handover"
                                        : "access ready")) {
        return false;
      }
      if (handover) {
        end_handover(tx, r.id, "active", now);
      } else {
        notices_to_new_tenant(tx, r, now);
      }
      return true;
    }
    case ProvisioningStep::kRetry: {
      close_superseded(tx, tasks_, current_tasks);
      int attempt = rentals_.add_attempt(tx, r.id);
      if (in_place) {
        access_task(tx, r, attempt, now);
      } else {
        provisioning_tasks(tx, r, attempt);
      }
      rentals_.set_next_check(tx, r.id, now + options_.poll);
      return false;
    }
    case ProvisioningStep::kFail:
      if (handover) {
        return interrupt_handover(tx, r, current_tasks,
                                  "the access could not be made ready again after the " +
                                      std::string(to_string(handover->cause)) + " handover",
                                  now);
      }
      close_superseded(tx, tasks_, current_tasks);
      if (!rentals_.transition(
              tx, r.id, RentalState::kProvisioning, RentalState::kFailed,
              "provisioning failed after " + std::to_string(options_.max_attempts) + " attempts")) {
        return false;
      }
      // Not billed and never started: the GPUs go back to the calendar at once, but stay
      // unwiped (no rental starts on them) until the wipe succeeds: the tenant may have
      // reached them during an attempt.
      rentals_.drop_allocations(tx, r.id);
      revoke_and_wipe(tx, r);
      settle_node(tx, *r.node_id, false);
      return true;
  }
  return false;
}

void Lifecycle::task_finished(Tx& tx, const AgentTask& t, bool ok, Timestamp now) {
  switch (t.kind) {
    case TaskKind::kWipe: {
      if (ok) {
        tx.exec(kClearUnwiped, t.node_id, pg_array_literal(gpu_indices_of(t)),
                sql_timestamp(t.created_at));
        return;
      }
      // A releasing rental's wipe is retried by its checks; the node's own, or one of a
      // rental that is over (failed, interrupted), has nobody to retry it: the node leaves the
      // pool until an operator has looked.
      std::optional<RentalRecord> r;
      if (t.rental_id) r = rentals_.get_any(tx, *t.rental_id);
      if (r && r->state == RentalState::kReleasing) return;
      settle_node(tx, t.node_id, true);
      return;
    }
    case TaskKind::kBurnIn:
      if (auto phase = t.payload.value("phase", ""); phase != "handover") {
        // After a release, at an enrolment, on an admin's request: the operator's to look at.
        if (!ok) {
          drain_for_burn_in(tx, t.node_id,
                            phase + " burn-in failed" +
                                (t.rental_id ? " after rental " + *t.rental_id : "") + ": " +
                                t.result_message.value_or(""));
        }
        return;
      }
      [[fallthrough]];
    case TaskKind::kProvision:
    case TaskKind::kReboot:
    case TaskKind::kInstallAccess: {
      if (!t.rental_id) return;
      // Not waiting: the worker may hold the rental while it closes this very task (an
      // attempt timed out), and the report holds the task's row.
      auto r = rentals_.try_lock_any(tx, *t.rental_id);
      if (!r || r->state != RentalState::kProvisioning || attempt_of(t) != r->attempts) return;
      const bool provisioned = t.kind == TaskKind::kProvision && ok;
      const bool rebooted = t.kind == TaskKind::kReboot && ok;
      if (provisioned || rebooted || (t.kind == TaskKind::kBurnIn && ok)) {
        if (provisioned && options_.burn_ins) {
          after_provision(tx, *r, now);
        } else {
          bool made = false;
          for (const auto& other : tasks_.for_rental(tx, r->id)) {
            made = made ||
                   (other.kind == TaskKind::kInstallAccess && attempt_of(other) == r->attempts);
          }
          if (!made) access_task(tx, *r, r->attempts, now);
        }
      }
      // Looked at on the next run rather than at its check time.
      rentals_.set_next_check(tx, r->id, now);
      return;
    }
    case TaskKind::kRevokeAccess:
    case TaskKind::kDoctor:  // the request that made it reads its result
    case TaskKind::kNotice:  // what the checkpoint did is the task's result, for the tenant
      return;
  }
}

std::optional<AgentTask> Lifecycle::node_activated(Tx& tx, const std::string& node_id) {
  std::vector<int> unwiped;
  for (const auto& row : tx.exec(kNodeUnwiped, node_id)) unwiped.push_back(row[0].as<int>());
  if (unwiped.empty()) return std::nullopt;
  constexpr int kOpenTasksRead = 1000;
  for (const auto& t : tasks_.queued_for_node(tx, node_id, kOpenTasksRead)) {
    if (t.kind != TaskKind::kWipe || t.rental_id) continue;
    auto covered = gpu_indices_of(t);
    if (std::all_of(unwiped.begin(), unwiped.end(), [&](int i) {
          return std::find(covered.begin(), covered.end(), i) != covered.end();
        })) {
      return std::nullopt;  // one is on its way already
    }
  }
  return tasks_.create(tx, node_id, std::nullopt, TaskKind::kWipe,
                       {{"gpu_indices", unwiped}, {"attempt", 0}});
}

bool Lifecycle::release(Tx& tx, const RentalRecord& r, Timestamp now) {
  if (!rentals_.transition(tx, r.id, RentalState::kActive, RentalState::kReleasing,
                           "end time reached")) {
    return false;
  }
  releasing_tasks(tx, r, now);
  return true;
}

void Lifecycle::releasing_tasks(Tx& tx, const RentalRecord& r, Timestamp now) {
  revoke_and_wipe(tx, r);
  rentals_.set_next_check(tx, r.id, now + options_.poll);
}

std::vector<std::string> Lifecycle::interrupt_node(Tx& tx, const std::string& node_id,
                                                   const std::string& reason, Timestamp now) {
  std::vector<std::string> out;
  for (const auto& id : rentals_.running_on(tx, node_id)) {
    auto r = rentals_.lock_any(tx, id);
    if (!r || (r->state != RentalState::kProvisioning && r->state != RentalState::kActive)) {
      continue;
    }
    if (r->state == RentalState::kActive && swap(tx, *r, HandoverCause::kFault, reason, now)) {
      continue;
    }
    interrupt_rental(tx, *r, reason, now);
    out.push_back(r->id);
  }
  return out;
}

RentalState Lifecycle::terminate(Tx& tx, const RentalRecord& r, Timestamp now,
                                 const std::string& reason,
                                 const std::optional<std::string>& by_user) {
  switch (r.state) {
    case RentalState::kPending:
    case RentalState::kScheduled:
      // Before the start nothing ran: cancelled, and the GPUs free at once.
      rentals_.drop_allocations(tx, r.id);
      rentals_.transition(tx, r.id, r.state, RentalState::kCancelled, reason, by_user);
      return RentalState::kCancelled;
    case RentalState::kProvisioning:
    case RentalState::kActive: {
      if (r.state == RentalState::kProvisioning) {
        std::vector<AgentTask> open;
        for (const auto& t : tasks_.for_rental(tx, r.id)) {
          if (is_provisioning_kind(t.kind)) open.push_back(t);
        }
        close_superseded(tx, tasks_, open);
      }
      rentals_.end_allocations(tx, r.id, now, booking_.options().cleaning_window);
      rentals_.transition(tx, r.id, r.state, RentalState::kReleasing, reason, by_user);
      end_handover(tx, r.id, "ended", now);
      releasing_tasks(tx, r, now);
      return RentalState::kReleasing;
    }
    default:
      throw Error(
          ErrorCode::kInvalidState,
          "The rental is " + std::string(to_string(r.state)) + "; there is nothing to terminate.",
          {{"state", to_string(r.state)}});
  }
}

bool Lifecycle::check_releasing(Tx& tx, const RentalRecord& r, Timestamp now) {
  // Only the wipe decides: it reimages the node, which takes the tenant's access with it, so a
  // failed revoke_access is covered by the wipe that follows it.
  std::optional<AgentTask> latest_task;
  int wipes = 0;
  for (const auto& t : tasks_.for_rental(tx, r.id)) {  // oldest first
    if (t.kind != TaskKind::kWipe) continue;
    ++wipes;
    latest_task = t;
  }
  std::optional<TaskState> latest;
  Timestamp created = now;
  std::vector<AgentTask> superseded;
  if (latest_task) {
    latest = latest_task->state;
    created = latest_task->created_at;
    superseded.push_back(*latest_task);
  }
  Timestamp deadline = created + options_.releasing_timeout;
  switch (releasing_step(latest, wipes, options_.max_attempts, now, deadline)) {
    case ReleasingStep::kWait:
      rentals_.set_next_check(tx, r.id, std::min(now + options_.poll, deadline));
      return false;
    case ReleasingStep::kRetryWipe:
      close_superseded(tx, tasks_, superseded);
      wipe_task(tx, r, wipes);
      rentals_.set_next_check(tx, r.id, now + options_.poll);
      return false;
    case ReleasingStep::kEnded:
      if (!rentals_.transition(tx, r.id, RentalState::kReleasing, RentalState::kEnded,
                               "node wiped")) {
        return false;
      }
      // Its report cleared them already, unless the outcome came another way.
      tx.exec(kClearUnwiped, *r.node_id, pg_array_literal(gpu_indices_of(*latest_task)),
              sql_timestamp(latest_task->created_at));
      // What the rental left the hardware in: a failure is the operator's to look at, not the
      // tenant's to be credited for (issue "Hardware you can trust").
      if (options_.burn_ins) burn_in_task(tx, r, "release", 0);
      settle_node(tx, *r.node_id, false);
      return true;
    case ReleasingStep::kEndedUnwiped:
      close_superseded(tx, tasks_, superseded);
      // The customer's time is over whatever the node does, so the rental ends; but a node
      // whose wipe was never confirmed may still hold the last tenant's data, so it leaves
      // the pool (maintenance) until an operator has looked, rather than go to the next one.
      if (!rentals_.transition(tx, r.id, RentalState::kReleasing, RentalState::kEnded,
                               "wipe not confirmed; node sent to maintenance")) {
        return false;
      }
      settle_node(tx, *r.node_id, true);
      return true;
  }
  return false;
}

void Lifecycle::settle_node(Tx& tx, const std::string& node_id, bool unwiped) {
  auto node = nodes_.get(tx, node_id);
  if (!node) return;
  auto state = inventory::parse_node_state(node->node.state);
  if (!state) return;
  if (unwiped) {
    // A node already out of the pool (maintenance, failed, retired) stays where it is.
    if (inventory::next_state(*state, inventory::NodeAction::kMaintenance) &&
        *state != inventory::NodeState::kFailed) {
      nodes_.transition(tx, node_id, inventory::NodeAction::kMaintenance,
                        "wipe not confirmed after a rental", std::nullopt);
    }
    return;
  }
  if (*state != inventory::NodeState::kDraining) return;
  if (tx.exec(kLiveOnNode, node_id, kHoldingTheNode.sql())[0][0].as<long long>() > 0) return;
  nodes_.transition(tx, node_id, inventory::NodeAction::kDrained, "last rental ended",
                    std::nullopt);
}

}  // namespace gpurent::scheduler

namespace gpurent::scheduler {

void Lifecycle::interrupt_rental(Tx& tx, const RentalRecord& r, const std::string& why,
                                 Timestamp now) {
  std::vector<AgentTask> open;
  if (r.state == RentalState::kProvisioning) {
    for (const auto& t : tasks_.for_rental(tx, r.id)) {
      if (is_provisioning_kind(t.kind)) open.push_back(t);
    }
  }
  interrupt_handover(tx, r, open, why, now);
}

void Lifecycle::end_handover(Tx& tx, const std::string& rental_id, const std::string& outcome,
                             Timestamp now) {
  if (auto h = handovers_.current(tx, rental_id)) handovers_.close(tx, h->id, now, outcome);
}

bool Lifecycle::interrupt_handover(Tx& tx, const RentalRecord& r,
                                   const std::vector<AgentTask>& open, const std::string& why,
                                   Timestamp now) {
  close_superseded(tx, tasks_, open);
  // No cleaning window: the node is out of service (or failed the rental) and nothing is placed
  // on it until an admin returns it; its GPUs stay unwiped until the wipe asked here (or the
  // one activation asks for) succeeds.
  rentals_.end_allocations(tx, r.id, now, std::chrono::seconds(0));
  if (!rentals_.transition(tx, r.id, r.state, RentalState::kInterrupted, why)) return false;
  end_handover(tx, r.id, "interrupted", now);
  revoke_and_wipe(tx, r);
  if (notices_) {
    notices_->add(tx, r.id, r.org_id, "fault",
                  "Rental " + r.id + " was interrupted: " + why +
                      ". The time lost is credited to the organisation's balance.",
                  now);
  }
  return true;
}

bool Lifecycle::swap(Tx& tx, const RentalRecord& r, HandoverCause cause, const std::string& why,
                     Timestamp now) {
  if (r.state != RentalState::kActive || !r.node_id || r.period.end <= now) return false;
  const std::string from = *r.node_id;
  // Out of the placement's reach while it chooses: GPUs not wiped since their last tenant,
  // wherever they are (the rental's own are its allocations already), and the node it leaves.
  std::vector<long long> unwiped;
  for (const auto& g : rentals_.unwiped_gpus(tx, r.gpu_model)) unwiped.push_back(g.gpu_id);
  auto held = rentals_.hold_gpus(tx, r.id, unwiped,
                                 {now, r.period.end + booking_.options().cleaning_window});
  bool placed = booking_.place_rest(tx, r, now, {from});
  rentals_.let_go(tx, r.id, held);
  if (!placed) return false;
  // The old node's GPUs: no longer the rental's; cleaned there before anyone else's.
  tx.exec(kDropOnNode, r.id, from);
  revoke_and_wipe(tx, r);
  auto moved = rentals_.get_any(tx, r.id);
  if (!moved || !moved->node_id) return false;
  handovers_.open(tx, r.id, cause, why, from, *moved->node_id, r.attempts + 1, now);
  // A window on the node it left no longer concerns it.
  if (notices_) notices_->settle_unanswered(tx, r.id, now);
  rentals_.transition(tx, r.id, RentalState::kActive, RentalState::kProvisioning,
                      "swapped from node " + from + " to node " + *moved->node_id + ": " + why);
  int attempt = rentals_.add_attempt(tx, r.id);
  tx.exec(kMarkUnwiped, *moved->node_id, pg_array_literal(moved->gpu_indices), sql_timestamp(now));
  moved->attempts = attempt;
  provisioning_tasks(tx, *moved, attempt);
  rentals_.set_next_check(tx, r.id, now + options_.poll);
  settle_node(tx, from, false);
  if (notices_) {
    notices_->add(tx, r.id, r.org_id, cause == HandoverCause::kFault ? "fault" : "maintenance",
                  "Rental " + r.id + " is moving from node " + from + " to the spare node " +
                      *moved->node_id + " (" + why +
                      "). It keeps its id, login and certificates; reconnect with `gpurent ssh " +
                      r.id + "` once it is active again. The minutes lost are credited.",
                  now);
  }
  return true;
}

bool Lifecycle::shift(Tx& tx, const RentalRecord& r, Timestamp new_start, const std::string& why) {
  if (r.state != RentalState::kScheduled) return false;
  std::string from = r.node_id.value_or("");
  rentals_.drop_allocations(tx, r.id);
  RentalRecord later = r;
  later.period = {new_start, new_start + (r.period.end - r.period.start)};
  if (!booking_.place_pending(tx, later)) return false;
  rentals_.transition(tx, r.id, RentalState::kScheduled, RentalState::kScheduled,
                      "shifted to " + format_rfc3339(new_start) + ": " + why);
  if (!from.empty()) settle_node(tx, from, false);
  return true;
}

bool Lifecycle::restore_on_node(Tx& tx, const RentalRecord& r) {
  if (!r.node_id) return false;
  auto attempt = tx.attempt("restore_on_node", [&](Tx& sub) {
    sub.exec(kDropOnNode, r.id, *r.node_id);
    rentals_.allocate(sub, r.id, *r.node_id, r.gpu_indices,
                      {r.period.start, r.period.end + booking_.options().cleaning_window});
    return true;
  });
  if (attempt) return true;
  if (attempt.failure() != DbFailure::kExclusionViolation) throw attempt.violation();
  return false;
}

void Lifecycle::hand_over_in_place(Tx& tx, const RentalRecord& r, HandoverCause cause,
                                   const std::string& why,
                                   const std::optional<std::string>& by_user, Timestamp now) {
  handovers_.open(tx, r.id, cause, why, *r.node_id, *r.node_id, r.attempts + 1, now);
  rentals_.transition(tx, r.id, RentalState::kActive, RentalState::kProvisioning, why, by_user);
  int attempt = rentals_.add_attempt(tx, r.id);
  if (cause == HandoverCause::kReboot) {
    tasks_.create(tx, *r.node_id, r.id, TaskKind::kReboot,
                  {{"gpu_indices", r.gpu_indices}, {"attempt", attempt}});
  } else {
    // The node was reset already: the access check is what is left.
    RentalRecord current = r;
    current.attempts = attempt;
    access_task(tx, current, attempt, now);
  }
  rentals_.set_next_check(tx, r.id, now + options_.poll);
}

void Lifecycle::reboot(Tx& tx, const RentalRecord& r, const std::optional<std::string>& by_user,
                       Timestamp now) {
  if (r.state != RentalState::kActive || handovers_.current(tx, r.id)) {
    throw Error(ErrorCode::kInvalidState,
                "Only an active rental can be rebooted; this one is " +
                    std::string(to_string(r.state)) + ".",
                {{"state", to_string(r.state)}});
  }
  auto gpus = tx.exec(kNodeGpuCount, *r.node_id)[0][0].as<long long>();
  if (gpus != r.gpu_count) {
    throw Error(
        ErrorCode::kInvalidState,
        "The rental shares its node with others; only a rental of the whole node can "
        "reboot it.",
        {{"state", to_string(r.state)}, {"gpu_count", r.gpu_count}, {"node_gpu_count", gpus}});
  }
  hand_over_in_place(tx, r, HandoverCause::kReboot, "rebooted by the tenant", by_user, now);
}

std::vector<std::string> Lifecycle::power_cycled(Tx& tx, const std::string& node_id,
                                                 const std::string& action, Timestamp now) {
  std::vector<std::string> out;
  for (const auto& id : rentals_.running_on(tx, node_id)) {
    auto r = rentals_.lock_any(tx, id);
    if (!r || r->state != RentalState::kActive || handovers_.current(tx, r->id)) continue;
    hand_over_in_place(tx, *r, HandoverCause::kPower, "power action " + action + " on its node",
                       std::nullopt, now);
    out.push_back(r->id);
  }
  return out;
}

void Lifecycle::notices_to_new_tenant(Tx& tx, const RentalRecord& r, Timestamp now) {
  // Notices given before it started had no login to run a checkpoint as; its node has them
  // now, with the login made.
  if (!notices_) return;
  constexpr int kNoticesRead = 20;
  for (const auto& n : notices_->list(tx, r.org_id, r.id, kNoticesRead)) {
    if (n.kind == "maintenance" && !n.applied_at && n.respond_by && *n.respond_by > now) {
      notice_to_node(tx, n);
    }
  }
}

void Lifecycle::notice_to_node(Tx& tx, const RentalNotice& n) {
  // Only to a rental handed over on its node: before that its login does not exist there for
  // the checkpoint (a rental notified earlier gets it at its handover, notices_to_new_tenant),
  // and a swap's own notice is not about the spare it goes to.
  auto r = rentals_.get_any(tx, n.rental_id);
  if (!r || !r->node_id || r->state != RentalState::kActive) return;
  // Several tenants may share the node and read its file: what it says names no rental.
  std::string text =
      n.kind == "maintenance"
          ? "This node is under maintenance from " + format_rfc3339(n.effective_at) +
                (n.ends_at ? " to " + format_rfc3339(*n.ends_at) : std::string()) +
                ". Save your work before it starts; your rental's notices say what you may "
                "choose."
      : n.kind == "moved" ? std::string("A rental was moved to this node.")
                          : std::string(
                                "A hardware fault was found on this rental's node; it is "
                                "being handed over to a spare, or ends.");
  nlohmann::json notice = {
      {"id", n.id},
      {"kind", n.kind},
      {"message", text},
      {"starts_at", format_rfc3339(n.effective_at)},
      {"ends_at", n.ends_at ? nlohmann::json(format_rfc3339(*n.ends_at)) : nlohmann::json(nullptr)},
      {"respond_by",
       n.respond_by ? nlohmann::json(format_rfc3339(*n.respond_by)) : nlohmann::json(nullptr)}};
  nlohmann::json payload = {{"notice", notice}, {"login", rental_login(r->id)}};
  auto checkpoint = tx.exec(kCheckpointOf, r->id);
  if (!checkpoint.empty() && !checkpoint[0][0].is_null()) {
    payload["checkpoint_command"] = checkpoint[0][0].as<std::string>();
    payload["checkpoint_timeout_s"] = checkpoint[0][1].as<int>();
  }
  tasks_.create(tx, *r->node_id, r->id, TaskKind::kNotice, payload);
}

}  // namespace gpurent::scheduler
