// Maintenance windows: the plan (move what can move, then hold the GPUs), the list, the cancel.
#include "scheduler/maintenance.h"

#include "core/db_errors.h"
#include "core/error.h"
#include "core/id.h"
#include "core/sql.h"
#include "inventory/node_state.h"
#include "scheduler/rental_state.h"

#include <algorithm>
#include <set>

namespace gpurent::scheduler {
namespace {

constexpr Statement kWindowSiteExists = {"maintenance_site_exists",
                                         "SELECT 1 FROM sites WHERE id = $1"};
// The site's nodes not retired ($2), in a stable order.
constexpr Statement kWindowSiteNodes = {
    "maintenance_site_nodes",
    "SELECT id FROM nodes WHERE site_id = $1 AND state <> ALL ($2::text[]) ORDER BY id"};
constexpr Statement kWindowNodeExists = {"maintenance_node_exists",
                                         "SELECT 1 FROM nodes WHERE id = $1"};
// The rentals holding one of the node's GPUs at some time in the window (their cleaning
// windows included).
constexpr Statement kWindowColliding = {
    "maintenance_colliding",
    "SELECT DISTINCT a.rental_id FROM allocations a JOIN gpus g ON g.id = a.gpu_id"
    " WHERE g.node_id = $1 AND a.rental_id IS NOT NULL"
    " AND a.period && tstzrange($2::timestamptz, $3::timestamptz, '[)') ORDER BY 1"};
// A running rental that stays over the window holds its node up to the window's start.
constexpr Statement kWindowCutRental = {
    "maintenance_cut_rental",
    "WITH cut AS (UPDATE allocations a SET period = tstzrange(lower(a.period), $3::timestamptz,"
    " '[)') FROM gpus g WHERE a.gpu_id = g.id AND g.node_id = $2 AND a.rental_id = $1"
    " AND lower(a.period) < $3::timestamptz AND upper(a.period) > $3::timestamptz)"
    " DELETE FROM allocations a USING gpus g WHERE a.gpu_id = g.id AND g.node_id = $2"
    " AND a.rental_id = $1 AND lower(a.period) >= $3::timestamptz"};
constexpr Statement kWindowLockGpus = {
    "maintenance_lock_gpus",
    "SELECT pg_advisory_xact_lock($2::bigint + g.id)"
    " FROM (SELECT id FROM gpus WHERE node_id = $1 ORDER BY id OFFSET 0) g"};
constexpr Statement kWindowInsert = {
    "maintenance_insert",
    "WITH w AS (INSERT INTO maintenance_windows (id, node_id, period, reason, created_by,"
    " created_at) VALUES ($1, $2, tstzrange($3::timestamptz, $4::timestamptz, '[)'), $5, $6,"
    " $7::timestamptz) RETURNING id)"
    " INSERT INTO allocations (maintenance_id, gpu_id, period)"
    " SELECT w.id, g.id, tstzrange($3::timestamptz, $4::timestamptz, '[)')"
    " FROM w JOIN gpus g ON g.node_id = $2"};
#define MAINTENANCE_COLUMNS \
  "id, node_id, " SQL_MICROS("lower(period)") ", " SQL_MICROS("upper(period)") ", reason," \
                                                                             " created_by, " \
      SQL_MICROS("created_at") ", " SQL_MICROS("cancelled_at")
constexpr Statement kWindowList = {
    "maintenance_list",
    "SELECT " MAINTENANCE_COLUMNS
    " FROM maintenance_windows"
    " WHERE ($1::text IS NULL OR node_id = $1) AND ($2 OR upper(period) > $4::timestamptz)"
    " AND ($3 OR cancelled_at IS NULL) ORDER BY lower(period), id LIMIT $5"};
constexpr Statement kWindowGet = {
    "maintenance_get", "SELECT " MAINTENANCE_COLUMNS " FROM maintenance_windows WHERE id = $1"};
constexpr Statement kWindowCancel = {
    "maintenance_cancel",
    "WITH c AS (UPDATE maintenance_windows SET cancelled_at = $2::timestamptz"
    " WHERE id = $1 AND cancelled_at IS NULL RETURNING id),"
    " freed AS (DELETE FROM allocations a USING c WHERE a.maintenance_id = c.id)"
    " SELECT count(*) FROM c"};
#undef MAINTENANCE_COLUMNS

MaintenanceWindow maintenance_window_of(const pqxx::row& row) {
  return {.id = row[0].as<std::string>(),
          .node_id = row[1].as<std::string>(),
          .period = {read_timestamp(row[2]), read_timestamp(row[3])},
          .reason = row[4].as<std::string>(),
          .created_by = optional_field<std::string>(row[5]),
          .created_at = read_timestamp(row[6]),
          .cancelled_at =
              row[7].is_null() ? std::nullopt : std::optional<Timestamp>(read_timestamp(row[7]))};
}

nlohmann::json maintenance_blocker_json(const RentalRecord& r) {
  return {{"id", r.id}, {"state", std::string(to_string(r.state))}, {"node_id", *r.node_id}};
}

}  // namespace

void check_maintenance_request(const std::vector<std::string>& node_ids, const Period& period,
                               const std::string& reason, Timestamp now) {
  if (node_ids.empty() || node_ids.size() > static_cast<std::size_t>(Maintenance::kMaxNodes)) {
    throw Error::invalid_field("node_ids", "must name 1 to 100 nodes");
  }
  if (std::set<std::string>(node_ids.begin(), node_ids.end()).size() != node_ids.size()) {
    throw Error::invalid_field("node_ids", "names a node twice");
  }
  if (period.end <= period.start) throw Error::invalid_field("end", "must be after start");
  if (period.end - period.start > Maintenance::kMaxLength) {
    throw Error::invalid_field("end", "a window lasts at most 30 days");
  }
  if (period.end <= now) throw Error::invalid_field("end", "must be in the future");
  if (reason.empty() || reason.size() > Maintenance::kMaxReasonBytes) {
    throw Error::invalid_field(
        "reason", "must be 1 to " + std::to_string(Maintenance::kMaxReasonBytes) + " bytes");
  }
}

PlannedMaintenance Maintenance::plan(const std::vector<std::string>& node_ids, const Period& period,
                                     const std::string& reason,
                                     const std::optional<std::string>& by_user) {
  const Timestamp now = clock_.now();
  check_maintenance_request(node_ids, period, reason, now);
  return pool_.transact("maintenance_plan", [&](Tx& tx) {
    return plan_in(tx, node_ids, period, reason, by_user, now);
  });
}

PlannedMaintenance Maintenance::plan_site(const std::string& site_id, const Period& period,
                                          const std::string& reason,
                                          const std::optional<std::string>& by_user) {
  const Timestamp now = clock_.now();
  return pool_.transact("maintenance_plan_site", [&](Tx& tx) {
    if (tx.exec(kWindowSiteExists, site_id).empty()) {
      throw Error(ErrorCode::kNotFound, "No such site.", {{"site_id", site_id}});
    }
    std::vector<std::string> node_ids;
    for (const auto& row : tx.exec(kWindowSiteNodes, site_id,
                                   inventory::NodeStates{inventory::NodeState::kRetired}.sql())) {
      node_ids.push_back(row[0].as<std::string>());
    }
    if (node_ids.empty()) throw Error::invalid_field("site_id", "the site has no node in service");
    check_maintenance_request(node_ids, period, reason, now);
    return plan_in(tx, node_ids, period, reason, by_user, now);
  });
}

PlannedMaintenance Maintenance::plan_in(Tx& tx, const std::vector<std::string>& node_ids,
                                        const Period& period, const std::string& reason,
                                        const std::optional<std::string>& by_user, Timestamp now) {
  PlannedMaintenance out;
  nlohmann::json blockers = nlohmann::json::array();
  std::vector<RentalRecord> movable, staying;
  for (const auto& node : node_ids) {
    if (tx.exec(kWindowNodeExists, node).empty()) {
      throw Error(ErrorCode::kNotFound, "No such node: " + node + ".", {{"node_id", node}});
    }
    for (const auto& row :
         tx.exec(kWindowColliding, node, sql_timestamp(period.start), sql_timestamp(period.end))) {
      auto r = rentals_.lock_any(tx, row[0].as<std::string>());
      if (!r) continue;
      if (r->state == RentalState::kScheduled) {
        movable.push_back(*r);
      } else if (r->state == RentalState::kActive || r->state == RentalState::kProvisioning) {
        staying.push_back(*r);
      } else {
        blockers.push_back(maintenance_blocker_json(*r));
      }
    }
  }
  if (!blockers.empty()) {
    throw Error(ErrorCode::kConflict,
                "Rentals being cleaned hold these GPUs during the window; plan it after they "
                "end.",
                {{"rentals", blockers}});
  }
  const std::string why = "maintenance of its node (" + reason + ")";
  std::vector<RentalRecord> moved_records;
  for (const auto& r : movable) {
    if (lifecycle_.move_elsewhere(tx, r, why, now, node_ids, false)) {
      auto moved = rentals_.get_any(tx, r.id);
      out.moved.push_back({r.id, *r.node_id, moved ? moved->node_id.value_or("") : ""});
      moved_records.push_back(r);
      continue;
    }
    // Nowhere else for its period: it keeps its node up to the window (move_elsewhere let
    // its GPUs go), and its tenant chooses.
    if (r.period.start < period.start) {
      rentals_.allocate(tx, r.id, *r.node_id, r.gpu_indices, {r.period.start, period.start});
    }
    staying.push_back(r);
  }
  if (!staying.empty() && period.start - now < notice_) {
    nlohmann::json named = nlohmann::json::array();
    for (const auto& r : staying) named.push_back(maintenance_blocker_json(r));
    throw Error(ErrorCode::kConflict,
                "Rentals that cannot move hold these GPUs during the window, and it starts in "
                "less than the " +
                    std::to_string(notice_.count() / 3600) +
                    " hours' notice their tenants are owed; plan it later.",
                {{"rentals", named}, {"notice_hours", notice_.count() / 3600}});
  }
  // A rental that stays holds its node up to the window's start; what happens then is its
  // tenant's answer, or the default (apply_due).
  for (const auto& r : staying) {
    if (r.state != RentalState::kScheduled) {
      tx.exec(kWindowCutRental, r.id, *r.node_id, sql_timestamp(period.start));
    }
  }
  for (const auto& node : node_ids) {
    tx.exec(kWindowLockGpus, node, kAllocationLockSpace);
    MaintenanceWindow w{.id = new_id(id_prefix::kMaintenance),
                        .node_id = node,
                        .period = period,
                        .reason = reason,
                        .created_by = by_user,
                        .created_at = now};
    try {
      tx.exec(kWindowInsert, w.id, node, sql_timestamp(period.start), sql_timestamp(period.end),
              reason, by_user, sql_timestamp(now));
    } catch (const std::exception& e) {
      if (classify(e) != DbFailure::kExclusionViolation) throw;
      throw Error(ErrorCode::kConflict,
                  "A booking took one of node " + node + "'s GPUs meanwhile; try again.",
                  {{"node_id", node}});
    }
    out.windows.push_back(std::move(w));
  }
  std::vector<std::string> changed = node_ids;
  for (const auto& m : out.moved) changed.push_back(m.to_node_id);
  capacity_changed(changed);
  auto window_of_node = [&](const std::string& node) {
    std::optional<std::string> window;
    for (const auto& w : out.windows) {
      if (w.node_id == node) window = w.id;
    }
    return window;
  };
  const std::string when = format_rfc3339(period.start) + " to " + format_rfc3339(period.end);
  // Each tenant told, once the windows exist: which node, when, and that nothing else changed.
  for (std::size_t i = 0; i < moved_records.size(); ++i) {
    const auto& r = moved_records[i];
    notices_.add(tx, r.id, r.org_id, "moved",
                 "Rental " + r.id + " moved from node " + out.moved[i].from_node_id + " to node " +
                     out.moved[i].to_node_id +
                     " for the same period at the same price: its node is under maintenance "
                     "from " +
                     when + " (" + reason + ").",
                 r.period.start, window_of_node(*r.node_id));
  }
  for (const auto& r : staying) {
    std::vector<std::string> choices =
        r.state == RentalState::kScheduled
            ? std::vector<std::string>{"other_node", "shift", "cancel"}
            : std::vector<std::string>{"other_node", "cancel"};
    std::string text =
        "Node " + *r.node_id + " of rental " + r.id + " is under maintenance from " + when + " (" +
        reason + "). Answer by the window's start: " +
        (r.state == RentalState::kScheduled
             ? "another node for the same period, a shift to after the window, or cancel free. "
               "With no answer the rental is cancelled free."
             : "move to another node now, or end the rental (the days not started are not "
               "charged). With no answer it moves to a spare at the window's start, or is "
               "interrupted and credited when none is free.");
    notices_.add(tx, r.id, r.org_id, "maintenance", text, period.start, window_of_node(*r.node_id),
                 {.ends_at = period.end, .choices = choices, .respond_by = period.start});
    out.notified.push_back(r.id);
  }
  return out;
}

RentalNotice Maintenance::choose(const std::string& org_id, const std::string& rental_id,
                                 const std::string& notice_id, const std::string& choice,
                                 const std::optional<std::string>& by_user) {
  const Timestamp now = clock_.now();
  return pool_.transact("maintenance_choose", [&](Tx& tx) {
    auto r = rentals_.get(tx, org_id, rental_id);
    if (!r) throw Error(ErrorCode::kNotFound, "No such rental.");
    r = rentals_.lock_any(tx, rental_id);
    auto n = notices_.lock(tx, org_id, rental_id, notice_id);
    if (!n || !r) throw Error(ErrorCode::kNotFound, "No such notice.");
    if (std::find(n->choices.begin(), n->choices.end(), choice) == n->choices.end()) {
      throw Error::invalid_field("choice", n->choices.empty()
                                               ? "this notice asks for no answer"
                                               : "must be one of the notice's choices");
    }
    if (n->applied_at || (n->respond_by && *n->respond_by <= now)) {
      throw Error(ErrorCode::kInvalidState, "The notice was answered or applied already.",
                  {{"choice", n->choice ? nlohmann::json(*n->choice) : nullptr}});
    }
    std::optional<Period> window;
    if (n->maintenance_id) {
      auto w = tx.exec(kWindowGet, *n->maintenance_id);
      if (!w.empty()) window = maintenance_window_of(w[0]).period;
    }
    if (!window) throw Error(ErrorCode::kInvalidState, "The window was cancelled.");
    std::string node = r->node_id.value_or("");
    const std::string why = "its tenant's answer to maintenance notice " + n->id;
    auto no_room = [&] {
      return Error(ErrorCode::kInsufficientCapacity,
                   "No other GPUs of the rental's shape are free for it now; choose another "
                   "answer or try again later.");
    };
    if (choice == "cancel") {
      if (r->state != RentalState::kScheduled && r->state != RentalState::kActive &&
          r->state != RentalState::kProvisioning) {
        throw Error(ErrorCode::kInvalidState, "The rental is over already.");
      }
      lifecycle_.terminate(tx, *r, now, "cancelled: " + why, by_user);
    } else if (choice == "shift") {
      if (r->state != RentalState::kScheduled) {
        throw Error(ErrorCode::kInvalidState, "Only a rental that has not started can shift.");
      }
      if (!lifecycle_.shift(tx, *r, window->end, why)) throw no_room();
    } else if (r->state == RentalState::kScheduled) {
      if (!lifecycle_.move_elsewhere(tx, *r, why, now, {node}, false)) throw no_room();
    } else if (r->state == RentalState::kActive) {
      if (!lifecycle_.swap(tx, *r, HandoverCause::kMaintenance, why, now)) throw no_room();
    } else {
      throw Error(ErrorCode::kInvalidState,
                  "The rental is being handed over; answer once it is active.");
    }
    notices_.record_choice(tx, n->id, choice, now);
    capacity_changed({node});
    return *notices_.lock(tx, org_id, rental_id, notice_id);
  });
}

int Maintenance::apply_due(Timestamp now, int limit) {
  if (!pool_.read("maintenance_any_due",
                  [&](Tx& tx) { return notices_.any_due_unanswered(tx, now); })) {
    return 0;
  }
  return pool_.transact("maintenance_apply_due", [&](Tx& tx) {
    int applied = 0;
    for (const auto& n : notices_.due_unanswered(tx, now, limit)) {
      auto r = rentals_.lock_any(tx, n.rental_id);
      notices_.mark_applied(tx, n.id, now);
      ++applied;
      if (!r) continue;
      const std::string why = "maintenance window of its node, notice " + n.id + " unanswered";
      if (r->state == RentalState::kScheduled) {
        lifecycle_.terminate(tx, *r, now, "cancelled free: " + why, std::nullopt);
      } else if (r->state == RentalState::kActive) {
        if (!lifecycle_.swap(tx, *r, HandoverCause::kMaintenance, why, now)) {
          lifecycle_.interrupt_rental(tx, *r, why, now);
        }
      } else if (r->state == RentalState::kProvisioning) {
        lifecycle_.interrupt_rental(tx, *r, why, now);
      }
      if (r->node_id) capacity_changed({*r->node_id});
    }
    return applied;
  });
}

void Maintenance::capacity_changed(const std::vector<std::string>& nodes) {
  if (!capacity_) return;
  pool_.after_commit([capacity = capacity_, nodes] {
    for (const auto& n : nodes) capacity->node_changed(n);
  });
}

std::vector<MaintenanceWindow> Maintenance::list(Tx& tx, const std::optional<std::string>& node_id,
                                                 bool include_past, bool include_cancelled,
                                                 int limit) {
  std::vector<MaintenanceWindow> out;
  for (const auto& row : tx.exec(kWindowList, node_id, include_past, include_cancelled,
                                 sql_timestamp(clock_.now()), limit)) {
    out.push_back(maintenance_window_of(row));
  }
  return out;
}

MaintenanceWindow Maintenance::cancel(const std::string& id) {
  return pool_.transact("maintenance_cancel", [&](Tx& tx) {
    auto found = tx.exec(kWindowGet, id);
    if (found.empty()) throw Error(ErrorCode::kNotFound, "No such maintenance window.");
    const Timestamp now = clock_.now();
    if (tx.exec(kWindowCancel, id, sql_timestamp(now))[0][0].as<int>() == 0) {
      throw Error(ErrorCode::kInvalidState, "The window is cancelled already.");
    }
    const std::string node = found[0][1].as<std::string>();
    // The rentals that stayed get their GPUs back for their whole period, and their tenants
    // are told nothing changes; one whose GPUs were booked meanwhile keeps its notice (it
    // still has to leave at that time).
    for (const auto& n : notices_.unanswered_of_window(tx, id)) {
      auto r = rentals_.lock_any(tx, n.rental_id);
      if (!r || r->node_id != node ||
          !RentalStates{RentalState::kScheduled, RentalState::kProvisioning, RentalState::kActive}
               .contains(r->state) ||
          !lifecycle_.restore_on_node(tx, *r)) {
        continue;
      }
      notices_.mark_applied(tx, n.id, now);
      notices_.add(tx, r->id, r->org_id, "maintenance",
                   "The maintenance of node " + node + " announced in notice " + n.id +
                       " is cancelled: rental " + r->id +
                       " keeps its node for its whole period, "
                       "and nothing is asked of you.",
                   n.effective_at, id);
    }
    capacity_changed({node});
    return maintenance_window_of(tx.exec(kWindowGet, id)[0]);
  });
}

}  // namespace gpurent::scheduler
