// Maintenance windows (issue "Operations that respect the tenant"; POST/GET/DELETE
// /v1/admin/maintenance): an admin plans time when nodes are out of service. A window holds
// every GPU of its node over its period as allocations do (migration 0025), so no booking,
// quote or calendar counts those GPUs then; the scheduled rentals it collides with move to
// equivalent GPUs for the same period at the same price first (Lifecycle::move_elsewhere),
// each with an event and a notice (kind `moved`, the rental.notice webhook) its tenant sees. A
// rental that cannot move, or one already running, starting or cleaning over the window, makes the
// plan a 409 conflict naming it, and nothing changes: the admin picks another time.
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "scheduler/capacity_index.h"
#include "scheduler/lifecycle.h"
#include "scheduler/notices.h"
#include "scheduler/records.h"
#include "scheduler/rental_store.h"

#include <optional>
#include <string>
#include <vector>

namespace gpurent::scheduler {

struct MaintenanceWindow {
  std::string id;  // "mnt_…"
  std::string node_id;
  Period period;
  std::string reason;
  std::optional<std::string> created_by;
  Timestamp created_at;
  std::optional<Timestamp> cancelled_at;
};

struct MovedForMaintenance {
  std::string rental_id, from_node_id, to_node_id;
};

struct PlannedMaintenance {
  std::vector<MaintenanceWindow> windows;  // one per node, in the order asked
  std::vector<MovedForMaintenance> moved;
  std::vector<std::string> notified;  // rentals that stay, whose tenants were asked to choose
};

// Checks of a plan that need no database: 1..100 distinct node ids, a period that ends after
// it starts, lasts at most kMaxLength and has not ended; a reason of 1..500 bytes. Throws
// invalid_request naming the field.
void check_maintenance_request(const std::vector<std::string>& node_ids, const Period& period,
                               const std::string& reason, Timestamp now);

class Maintenance {
 public:
  static constexpr std::chrono::hours kMaxLength{24 * 30};
  static constexpr int kMaxNodes = 100;
  static constexpr std::size_t kMaxReasonBytes = 500;

  // `capacity`: this replica's copy, told of the changed nodes after each commit (the
  // announcement that tells every replica reaches this one only a moment later); none in tests.
  // `notice`: the least lead time a window gives the rentals it takes that cannot move.
  Maintenance(PgPool& pool, const Clock& clock, RentalStore& rentals, Lifecycle& lifecycle,
              NoticeStore& notices, CapacityIndex* capacity = nullptr,
              std::chrono::seconds notice = std::chrono::hours(72))
      : notice_(notice),
        pool_(pool),
        clock_(clock),
        rentals_(rentals),
        lifecycle_(lifecycle),
        notices_(notices),
        capacity_(capacity) {}

  // In one transaction: the scheduled rentals in the way move; those that cannot, and those
  // running, stay up to the window's start and their tenants get a `maintenance` notice with
  // choices (other_node, shift for one not started, cancel) to answer by the window's start.
  // not_found naming an unknown node; conflict (details.rentals: [{id, state, node_id}]) when
  // a rental being cleaned holds one of the GPUs over the period, or when rentals stay and the
  // window starts within the notice (details.notice_hours); conflict too when a booking took
  // one of the GPUs meanwhile (try again).
  PlannedMaintenance plan(const std::vector<std::string>& node_ids, const Period& period,
                          const std::string& reason, const std::optional<std::string>& by_user);

  // plan() over every node of the site that is not retired, read in the plan's own
  // transaction. not_found for an unknown site; invalid_request (site_id) for a site with no
  // node in service.
  PlannedMaintenance plan_site(const std::string& site_id, const Period& period,
                               const std::string& reason,
                               const std::optional<std::string>& by_user);

  // Windows not yet over (and over ones too with `include_past`), of one node or all, by
  // start; cancelled ones only with `include_cancelled`.
  std::vector<MaintenanceWindow> list(Tx& tx, const std::optional<std::string>& node_id,
                                      bool include_past, bool include_cancelled, int limit);

  // The tenant's answer to a maintenance notice, applied at once: other_node (a scheduled
  // rental moves for its period, an active one is swapped to a spare now), shift (a scheduled
  // rental starts after the window, same length and price), cancel (terminated: free before
  // its start, the days not started released after). not_found for another org's rental or
  // notice; invalid_request for a choice the notice does not offer; invalid_state once
  // answered, applied or past its respond_by; insufficient_capacity when nothing fits.
  RentalNotice choose(const std::string& org_id, const std::string& rental_id,
                      const std::string& notice_id, const std::string& choice,
                      const std::optional<std::string>& by_user);

  // The defaults of notices unanswered by their respond_by (a lifecycle job, before its
  // steps): a scheduled rental is cancelled free, an active one swapped to a spare or, with
  // none, interrupted and credited; a provisioning one interrupted. How many were applied.
  int apply_due(Timestamp now, int limit = 200);

  // Frees the window's GPUs and marks it cancelled; the rentals that stayed get their GPUs
  // back for their whole period (when nobody booked them meanwhile) and their unanswered
  // notices are settled, with a notice saying so. not_found for an unknown id, invalid_state
  // for one cancelled already.
  MaintenanceWindow cancel(const std::string& id);

 private:
  std::chrono::seconds notice_;
  PgPool& pool_;
  const Clock& clock_;
  RentalStore& rentals_;
  Lifecycle& lifecycle_;
  NoticeStore& notices_;
  CapacityIndex* capacity_;

  void capacity_changed(const std::vector<std::string>& nodes);
  PlannedMaintenance plan_in(Tx& tx, const std::vector<std::string>& node_ids, const Period& period,
                             const std::string& reason, const std::optional<std::string>& by_user,
                             Timestamp now);
};

}  // namespace gpurent::scheduler
