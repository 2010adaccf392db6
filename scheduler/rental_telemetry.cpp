// The tenant's telemetry: the window, the steps and the energy.
#include "scheduler/rental_telemetry.h"

#include "core/error.h"
#include "core/pg_array.h"
#include "core/sql.h"
#include "scheduler/rental_state.h"

#include <algorithm>
#include <map>
#include <set>

namespace gpurent::scheduler {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr seconds kLongestGap{180};  // longer between samples: the node did not report
constexpr int kMaxSamplesRead = 100'000;

// Each running rental's node samples within its period and newer than its last copy.
constexpr Statement kCopy = {
    "rental_telemetry_copy",
    "INSERT INTO rental_telemetry_samples (rental_id, at, gpu_index, temperature_c, power_w,"
    " utilization_pct, memory_used_mib, throttle_reasons, sm_clock_mhz)"
    " SELECT r.id, s.at, s.gpu_index, s.temperature_c, s.power_w, s.utilization_pct,"
    " s.memory_used_mib, s.throttle_reasons, s.sm_clock_mhz FROM rentals r JOIN "
    "node_telemetry_samples s ON "
    "s.node_id = r.node_id"
    " AND s.at >= lower(r.period) AND s.at < upper(r.period)"
    " AND s.at > coalesce((SELECT max(c.at) FROM rental_telemetry_samples c"
    " WHERE c.rental_id = r.id), '-infinity')"
    " WHERE r.state = ANY ($1::text[]) AND r.node_id IS NOT NULL"
    // A releasing rental's GPUs stopped being its tenant's when it left `active`.
    " AND (NOT r.state = ANY ($2::text[]) OR s.at < r.state_changed_at)"
    " ON CONFLICT (rental_id, at) DO NOTHING"};
constexpr Statement kPurge = {
    "rental_telemetry_purge",
    "DELETE FROM rental_telemetry_samples WHERE ctid IN (SELECT c.ctid FROM"
    " rental_telemetry_samples c JOIN rentals r ON r.id = c.rental_id"
    " WHERE r.state = ANY ($1::text[]) AND upper(r.period) < $2::timestamptz LIMIT $3)"};
// The rental's copy within the window, one row per sample and GPU.
constexpr Statement kCopied = {
    "rental_telemetry_copied",
    "SELECT " SQL_MICROS("at") ", unnest(gpu_index), unnest(temperature_c), unnest(power_w),"
    " unnest(utilization_pct), unnest(memory_used_mib), coalesce(throttle_reasons, '{}')::text,"
    // Set-returning functions run in step; a shorter (or NULL) array is padded with NULLs.
    " unnest(sm_clock_mhz)"
    " FROM rental_telemetry_samples"
    " WHERE rental_id = $1 AND at >= $2::timestamptz AND at < $3::timestamptz ORDER BY at"};

// Each GPU's power integrated between its consecutive samples (a gap over kLongestGap counts
// as no draw), summed per rental: the same sum rental_telemetry_json makes, in the database.
constexpr Statement kEnergy = {
    "rental_telemetry_energy",
    "WITH w AS (SELECT ($4::date)::timestamp AT TIME ZONE $6 AS lo,"
    " ($5::date)::timestamp AT TIME ZONE $6 AS hi),"
    " s AS (SELECT c.rental_id, u.gpu, c.at, u.power FROM rentals r"
    " JOIN rental_telemetry_samples c ON c.rental_id = r.id CROSS JOIN w"
    " CROSS JOIN LATERAL unnest(c.gpu_index, c.power_w) AS u(gpu, power)"
    " WHERE r.org_id = $1 AND r.id = ANY($2::text[]) AND c.at >= w.lo AND c.at < w.hi"
    // Within its own period as it is now: a rental moved after a failed handover keeps the
    // copies of its first node's samples, which were never its tenant's.
    " AND c.at >= lower(r.period) AND c.at < upper(r.period)"
    " AND u.gpu = ANY(r.gpu_indices)),"
    " d AS (SELECT rental_id, power + lag(power) OVER g AS twice, extract(epoch FROM at - lag(at)"
    " OVER g) AS gap FROM s WINDOW g AS (PARTITION BY rental_id, gpu ORDER BY at))"
    " SELECT rental_id, coalesce(sum(twice / 2 * gap) FILTER (WHERE gap <= $3), 0) / 3.6e6"
    " FROM d GROUP BY rental_id"};

std::vector<inventory::TelemetryPoint> copied_points(const pqxx::result& rows) {
  std::vector<inventory::TelemetryPoint> out;
  for (const auto& row : rows) {
    Timestamp at = read_timestamp(row[0]);
    if (out.empty() || out.back().at != at) out.push_back({at, {}});
    int index = row[1].as<int>();
    out.back().gpus.push_back(
        {.index = index,
         .temperature_c = optional_field<double>(row[2]),
         .power_w = optional_field<double>(row[3]),
         .utilization_pct = optional_field<int>(row[4]),
         .memory_used_mib = optional_field<std::int64_t>(row[5]),
         .throttle_reasons = inventory::throttle_reasons_of(json::parse(row[6].c_str()), index),
         .sm_clock_mhz = optional_field<int>(row[7])});
  }
  return out;
}

struct Sum {
  double total = 0;
  int count = 0;
  void add(const std::optional<double>& v) {
    if (v) {
      total += *v;
      ++count;
    }
  }
  json average() const { return count ? json(total / count) : json(nullptr); }
};

struct Step {
  Sum utilization, memory_gb, temperature, power, sm_clock;
  std::set<std::string> throttle;  // every reason any of the step's samples had
};

json events_json(const std::vector<inventory::HealthEvent>& events) {
  json out = json::array();
  for (const auto& e : events) {
    out.push_back({{"at", format_rfc3339(e.at)},
                   {"gpu_index", *e.gpu_index},
                   {"kind", e.kind},
                   {"severity", e.severity},
                   {"xid", e.xid ? json(*e.xid) : json(nullptr)},
                   {"reason", e.reason}});
  }
  return out;
}

const inventory::GpuPoint* gpu_in(const inventory::TelemetryPoint& p, int index) {
  for (const auto& g : p.gpus) {
    if (g.index == index) return &g;
  }
  return nullptr;
}

}  // namespace

std::optional<TelemetryWindow> telemetry_window(const Period& period, Timestamp now,
                                                std::optional<Timestamp> from,
                                                std::optional<Timestamp> to,
                                                std::optional<seconds> step) {
  Timestamp start = std::max(period.start, from.value_or(period.start));
  Timestamp end = std::min({period.end, now, to.value_or(period.end)});
  if (end <= start) return std::nullopt;
  auto span = std::chrono::duration_cast<seconds>(end - start);
  seconds least = kMinTelemetryStep *
                  ((span / kMinTelemetryStep + kMaxTelemetrySteps - 1) / kMaxTelemetrySteps);
  least = std::max(least, kMinTelemetryStep);
  seconds chosen = step ? std::max(*step, least) : least;
  return TelemetryWindow{start, end, chosen};
}

json rental_telemetry_json(const std::vector<inventory::TelemetryPoint>& points,
                           const std::vector<int>& gpus, const TelemetryWindow& w,
                           Timestamp rental_start) {
  constexpr auto kDay = std::chrono::hours(24);
  json out_gpus = json::array();
  double joules = 0;
  std::map<long long, double> joules_by_day;  // by rental-day, 1 first
  for (int index : gpus) {
    std::map<long long, Step> steps;  // by step number from the window's start
    const inventory::TelemetryPoint* previous = nullptr;
    std::optional<double> previous_power;
    for (const auto& p : points) {
      if (p.at < w.from || p.at >= w.to) continue;  // never outside the rental's period
      const auto* g = gpu_in(p, index);
      if (!g) continue;
      long long n = std::chrono::duration_cast<seconds>(p.at - w.from) / w.step;
      auto& s = steps[n];
      s.utilization.add(g->utilization_pct ? std::optional<double>(*g->utilization_pct)
                                           : std::nullopt);
      s.memory_gb.add(g->memory_used_mib ? std::optional<double>(*g->memory_used_mib / 1024.0)
                                         : std::nullopt);
      s.temperature.add(g->temperature_c);
      s.power.add(g->power_w);
      s.sm_clock.add(g->sm_clock_mhz ? std::optional<double>(*g->sm_clock_mhz) : std::nullopt);
      s.throttle.insert(g->throttle_reasons.begin(), g->throttle_reasons.end());
      if (previous && previous_power && g->power_w) {
        auto gap = std::chrono::duration<double>(p.at - previous->at);
        if (gap <= kLongestGap) {
          double drawn = (*previous_power + *g->power_w) / 2 * gap.count();
          joules += drawn;
          joules_by_day[(p.at - rental_start) / kDay + 1] += drawn;
        }
      }
      previous = &p;
      previous_power = g->power_w;
    }
    json samples = json::array();
    for (const auto& [n, s] : steps) {
      samples.push_back(
          {{"at", format_rfc3339(w.from + w.step * n)},
           {"utilization_pct", s.utilization.average()},
           {"memory_used_gb", s.memory_gb.average()},
           {"temperature_c", s.temperature.average()},
           {"power_w", s.power.average()},
           {"sm_clock_mhz", s.sm_clock.average()},
           {"throttle_reasons", std::vector<std::string>(s.throttle.begin(), s.throttle.end())}});
    }
    out_gpus.push_back({{"index", index}, {"samples", std::move(samples)}});
  }
  json by_day = json::array();
  for (const auto& [day, j] : joules_by_day) {
    Timestamp from = rental_start + kDay * (day - 1);
    by_day.push_back({{"day", day},
                      {"from", format_rfc3339(std::max(from, w.from))},
                      {"to", format_rfc3339(std::min(from + kDay, w.to))},
                      {"energy_kwh", j / 3.6e6}});
  }
  return {{"from", format_rfc3339(w.from)}, {"to", format_rfc3339(w.to)},
          {"step_s", w.step.count()},       {"gpus", std::move(out_gpus)},
          {"energy_kwh", joules / 3.6e6},   {"energy_by_day", std::move(by_day)}};
}

std::map<std::string, double> RentalTelemetry::energy_kwh(
    Tx& tx, const std::string& org_id, const std::vector<std::string>& rental_ids,
    const std::string& from_date, const std::string& to_date, const std::string& time_zone) {
  std::map<std::string, double> out;
  for (const auto& row : tx.exec(kEnergy, org_id, pg_array_literal(rental_ids), kLongestGap.count(),
                                 from_date, to_date, time_zone)) {
    out.emplace(row[0].as<std::string>(), row[1].as<double>());
  }
  return out;
}

std::pair<int, int> RentalTelemetry::keep(Tx& tx, Timestamp now, int limit) {
  constexpr RentalStates kReleasing{RentalState::kReleasing};
  int copied = static_cast<int>(tx.exec(kCopy, kOnTheNode.sql(), kReleasing.sql()).affected_rows());
  int deleted = static_cast<int>(
      tx.exec(kPurge, kFinalRentalStates.sql(), sql_timestamp(now - kKeptAfterEnd), limit)
          .affected_rows());
  return {copied, deleted};
}

json RentalTelemetry::read(const Caller& caller, const std::string& id,
                           std::optional<Timestamp> from, std::optional<Timestamp> to,
                           std::optional<seconds> step) {
  return pool_.read("rental_telemetry", [&](Tx& tx) {
    auto r = rentals_.get(tx, caller.org_id, id);
    if (!r) throw Error(ErrorCode::kNotFound, "No such rental.");
    bool started = r->node_id && r->state != RentalState::kPending &&
                   r->state != RentalState::kScheduled && r->state != RentalState::kCancelled;
    // Its GPUs were its own from its start until it left service (released early, failed,
    // interrupted): after that they may be another tenant's.
    Period own = r->period;
    for (const auto& e : rentals_.events(tx, caller.org_id, id)) {
      bool was_running =
          e.from_state == RentalState::kActive || e.from_state == RentalState::kProvisioning;
      bool left = e.to_state == RentalState::kReleasing || e.to_state == RentalState::kEnded ||
                  e.to_state == RentalState::kFailed || e.to_state == RentalState::kInterrupted;
      if (was_running && left) own.end = std::min(own.end, e.at);
    }
    auto window = started ? telemetry_window(own, clock_.now(), from, to, step) : std::nullopt;
    if (!window) {
      return json{{"from", nullptr},        {"to", nullptr},     {"step_s", nullptr},
                  {"gpus", json::array()},  {"energy_kwh", 0.0}, {"energy_by_day", json::array()},
                  {"events", json::array()}};
    }
    // The rental's own copy, then the node's history after its last copied sample.
    auto points =
        copied_points(tx.exec(kCopied, id, sql_timestamp(window->from), sql_timestamp(window->to)));
    Timestamp rest =
        points.empty() ? window->from : points.back().at + std::chrono::microseconds(1);
    if (rest < window->to) {
      for (auto& p : history_.history(tx, *r->node_id, rest, window->to, kMaxSamplesRead)) {
        points.push_back(std::move(p));
      }
    }
    auto out = rental_telemetry_json(points, r->gpu_indices, *window, r->period.start);
    out["events"] = events_json(
        history_.gpu_events(tx, *r->node_id, r->gpu_indices, window->from, window->to, kMaxEvents));
    return out;
  });
}

}  // namespace gpurent::scheduler
