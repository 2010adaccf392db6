// The tenant's own telemetry (issue "Hardware you can trust"; GET /v1/rentals/{id}/telemetry):
// the rental's GPUs only, only inside its period (from its start to its end or now), averaged
// into steps, and the energy its GPUs drew. The node's sampled history
// (inventory/node_health_log.h: one sample per agent_telemetry_interval) is kept only for
// agent_telemetry_retention, so the lifecycle's job copies each running rental's samples into
// its own (rental_telemetry_samples, migration 0023), kept for its life and 30 days after;
// a read takes the copy and, after its last copied sample, the node's history.
#pragma once

#include "core/caller.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "inventory/node_health_log.h"
#include "scheduler/rental_store.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::scheduler {

// The window asked for, within the rental's period.
struct TelemetryWindow {
  Timestamp from;
  Timestamp to;
  std::chrono::seconds step;
};

// At most this many steps in an answer; a step is at least ten seconds.
inline constexpr int kMaxTelemetrySteps = 1000;
inline constexpr std::chrono::seconds kMinTelemetryStep{10};

// The window clamped to [period start, min(period end, now)]: `from`/`to` default to its ends,
// `step` to the smallest multiple of kMinTelemetryStep that keeps within kMaxTelemetrySteps;
// nullopt when the rental has not started or the window is empty.
std::optional<TelemetryWindow> telemetry_window(const Period& period, Timestamp now,
                                                std::optional<Timestamp> from,
                                                std::optional<Timestamp> to,
                                                std::optional<std::chrono::seconds> step);

// `{from, to, step_s, gpus: [{index, samples: [{at, utilization_pct, memory_used_gb,
// temperature_c, power_w, sm_clock_mhz, throttle_reasons}]}], energy_kwh}`: the rental's GPUs'
// samples within the window averaged per step (`at` the step's start; a value none of the
// step's samples had is null; throttle_reasons every reason any of them had; sm_clock_mhz the
// average SM clock), and the energy of the rental's GPUs over the window in kWh (power
// integrated between consecutive samples, a gap longer than three minutes counted as no
// draw), and `energy_by_day`: that energy per rental-day within the window, [{day, from, to,
// energy_kwh}], day 1 the first 24 hours from `rental_start` (a draw counts on the day of its
// later sample). Pure.
nlohmann::json rental_telemetry_json(const std::vector<inventory::TelemetryPoint>& points,
                                     const std::vector<int>& gpus, const TelemetryWindow& window,
                                     Timestamp rental_start);

class RentalTelemetry {
 public:
  RentalTelemetry(PgPool& pool, const Clock& clock, RentalStore& rentals)
      : pool_(pool), clock_(clock), rentals_(rentals) {}

  // rental_telemetry_json's answer plus `events`: the XID events and health changes (ECC
  // errors, thermal, NVLink…) of the rental's GPUs within the window, oldest first, at most
  // kMaxEvents — [{at, gpu_index, kind: xid|health, severity, xid, reason}].
  // not_found for another org's rental; an empty answer before the rental started.
  nlohmann::json read(const Caller& caller, const std::string& id, std::optional<Timestamp> from,
                      std::optional<Timestamp> to, std::optional<std::chrono::seconds> step);

  // The energy in kWh each of the org's `rental_ids` drew from its own copy of the samples
  // within [from_date, to_date) (dates in the IANA `time_zone`), integrated as the telemetry's
  // energy_kwh is; a rental with no copied samples there is left out. The invoice lines' detail.
  std::map<std::string, double> energy_kwh(Tx& tx, const std::string& org_id,
                                           const std::vector<std::string>& rental_ids,
                                           const std::string& from_date, const std::string& to_date,
                                           const std::string& time_zone);

  // The lifecycle's job: copies the samples the nodes reported since the last copy of each
  // rental running on them, and deletes the copies of rentals over for more than
  // kKeptAfterEnd (at most `limit` rows a run). Safe on several replicas at once. The rows
  // copied and deleted.
  std::pair<int, int> keep(Tx& tx, Timestamp now, int limit = 5000);
  static constexpr std::chrono::hours kKeptAfterEnd{24 * 30};
  static constexpr int kMaxEvents = 500;

 private:
  PgPool& pool_;
  const Clock& clock_;
  RentalStore& rentals_;
  inventory::NodeHealthLog history_;
};

}  // namespace gpurent::scheduler
