// Figures of a phase, from its records alone.
#include "tests/chaos/figures.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace gpurent::testing::chaos {
namespace {

double seconds_between(SteadyTime from, SteadyTime to) {
  return std::chrono::duration<double>(to - from).count();
}

std::string fixed(double v, int digits = 2) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

std::optional<double> recovery_seconds(const Phase& phase, const Fault& fault, bool replica_only) {
  std::optional<double> best;
  for (const auto& r : phase.records) {
    for (const auto& a : r.attempts) {
      if (a.status != 201 || a.start < fault.at) continue;
      if (replica_only && fault.replica >= 0 && a.replica != fault.replica) continue;
      double s = seconds_between(fault.at, a.end);
      if (!best || s < *best) best = s;
    }
  }
  return best;
}

nlohmann::json phase_figures(const Phase& phase) {
  int booked = 0, refused = 0, gave_up = 0, attempts = 0, no_answer = 0;
  int with_ra = 0, without_ra = 0, other_5xx = 0, conflicts = 0, late = 0, late_replayed = 0;
  std::map<std::string, int> statuses, refusals, invariants;
  for (const auto& r : phase.records) {
    switch (r.outcome) {
      case KeyRecord::Outcome::kBooked:
        ++booked;
        break;
      case KeyRecord::Outcome::kRefused:
        ++refused;
        ++refusals[std::to_string(r.final_status) + " " + r.final_code];
        break;
      case KeyRecord::Outcome::kGaveUp:
        ++gave_up;
        break;
    }
    for (const auto& a : r.attempts) {
      // Every answer counts for the 5xx figures; the storm's attempts alone for the rest.
      if (a.status == 503) ++(a.retry_after ? with_ra : without_ra);
      if (a.status >= 500 && a.status != 503) ++other_5xx;
      if (a.late) {
        ++late;
        late_replayed += a.replayed;
        continue;
      }
      ++attempts;
      ++statuses[a.status == 0 ? "no answer" : std::to_string(a.status)];
      if (a.status == 0) ++no_answer;
      if (a.status == 409 && a.error == "conflict") ++conflicts;
    }
  }
  for (const auto& v : phase.violations) ++invariants[v.invariant];
  nlohmann::json faults = nlohmann::json::array();
  for (const auto& f : phase.faults) {
    auto any = recovery_seconds(phase, f, false);
    nlohmann::json j = {{"fault", f.name},
                        {"recovery_s", any ? nlohmann::json(*any) : nlohmann::json(nullptr)}};
    if (f.replica >= 0) {
      auto own = recovery_seconds(phase, f, true);
      j["replica"] = f.replica;
      j["replica_recovery_s"] = own ? nlohmann::json(*own) : nlohmann::json(nullptr);
    }
    faults.push_back(j);
  }
  return {{"phase", phase.name},
          {"seconds", phase.seconds},
          {"keys", phase.records.size()},
          {"acknowledged", booked},
          {"refused", refused},
          {"refusals", refusals},
          {"gave_up", gave_up},
          {"gave_up_in_storm", phase.gave_up_in_storm},
          {"attempts", attempts},
          {"retries", attempts - static_cast<int>(phase.records.size())},
          {"statuses", statuses},
          {"no_answer", no_answer},
          {"conflict_409", conflicts},
          {"late_attempts", late},
          {"late_replayed", late_replayed},
          {"unavailable_503_with_retry_after", with_ra},
          {"unavailable_503_without_retry_after", without_ra},
          {"other_5xx", other_5xx},
          {"faults", faults},
          {"invariants_broken", invariants},
          {"extra", phase.extra}};
}

std::string phase_report(const Phase& phase, int per_invariant) {
  auto f = phase_figures(phase);
  std::ostringstream out;
  out << "== chaos phase " << phase.name << ": " << fixed(phase.seconds, 1) << " s, " << f["keys"]
      << " keys, " << f["acknowledged"] << " acknowledged, " << f["refused"] << " refused "
      << f["refusals"].dump() << ", " << f["gave_up_in_storm"] << " gave up in the storm ("
      << f["gave_up"] << " still after the late retries)\n";
  out << "   attempts " << f["attempts"] << " (retries " << f["retries"] << "), statuses "
      << f["statuses"].dump() << "; 503 with Retry-After " << f["unavailable_503_with_retry_after"]
      << ", without " << f["unavailable_503_without_retry_after"] << "; other 5xx "
      << f["other_5xx"] << "; 409 conflict " << f["conflict_409"]
      << "\n   after the scenario: " << f["late_attempts"] << " attempts with the same keys ("
      << f["late_replayed"] << " replayed)\n";
  for (const auto& fault : f["faults"]) {
    out << "   fault " << fault["fault"].get<std::string>() << ": first booking after ";
    out << (fault["recovery_s"].is_null() ? "never" : fixed(fault["recovery_s"]) + " s");
    if (fault.contains("replica_recovery_s")) {
      out << ", on replica " << fault["replica"] << " after "
          << (fault["replica_recovery_s"].is_null() ? "never"
                                                    : fixed(fault["replica_recovery_s"]) + " s");
    }
    out << "\n";
  }
  if (!phase.extra.empty()) out << "   " << phase.extra.dump() << "\n";
  if (phase.violations.empty()) {
    out << "   invariants: all hold\n";
    return out.str();
  }
  out << "   invariants broken: " << f["invariants_broken"].dump() << "\n";
  std::map<std::string, int> shown;
  for (const auto& v : phase.violations) {
    if (shown[v.invariant]++ >= per_invariant) continue;
    out << "     " << v.invariant << ": " << v.detail << "\n";
  }
  return out.str();
}

}  // namespace gpurent::testing::chaos
