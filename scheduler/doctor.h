// `doctor` on a live rental (issue "Hardware you can trust"; POST /v1/rentals/{id}/doctor,
// `gpurent doctor ID`): the non-destructive checks a tenant can ask for while their job runs —
// the node's driver against the image's, the rental's GPUs' ECC counters, the peer links
// between its GPUs (NVLink down or slow shows here), their NVLinks' state and error counters as
// the driver reports them, and a short NCCL run only when the tenant
// lets the GPUs be busy for it — each with a verdict and what to do.
//
// The measuring is the agent's `doctor` task (the burn-in's tools through the operator's hook,
// or the simulated node's outputs); the request waits for its figures and judges them with
// the burn-in's rules (inventory/burn_in_rules.h), restricted to the rental's own GPUs.
#pragma once

#include "agent_proto/burn_in/figures.h"
#include "core/caller.h"
#include "core/clock.h"
#include "core/db_pool.h"
#include "inventory/burn_in_store.h"
#include "scheduler/records.h"
#include "scheduler/rental_store.h"
#include "scheduler/task_store.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::scheduler {

struct DoctorCheck {
  std::string name;     // "driver", "ecc", "nvlink_p2p", "nvlink_state", "nccl", "tools", "state"
  std::string verdict;  // "ok" | "warning" | "failed" | "skipped"
  std::string detail;
  std::string advice;  // what to do; empty when nothing is needed

  bool operator==(const DoctorCheck&) const = default;
};

struct DoctorReport {
  std::vector<DoctorCheck> checks;
  std::string verdict;  // the worst of the checks' ("skipped" when all were)
};

// What the checks are made from.
struct DoctorFacts {
  std::vector<int> gpu_indices;  // the rental's
  std::string node_driver;       // as the agent reported it; empty when unknown
  std::string image_driver;
  nlohmann::json telemetry;  // the node's latest, one object per GPU; null when none
  burn_in::BurnInFigures figures;
  inventory::BurnInNominal nominal;
  inventory::BurnInMedians medians;
  bool allow_busy_gpus = false;
};

// The checks, pure: table-tested in scheduler/tests/doctor_test.cpp.
DoctorReport doctor_checks(const DoctorFacts& facts);

struct DoctorOptions {
  // How long the request waits for the agent's figures before it gives up (503).
  std::chrono::milliseconds wait{std::chrono::seconds(120)};
  std::chrono::milliseconds poll{std::chrono::milliseconds(200)};
  // How many requests may wait for their agents at once on this replica: each holds one of
  // the server's worker threads while it waits, so more are refused (429) rather than let
  // doctors starve the API.
  int max_waiting = 2;
};

class Doctor {
 public:
  Doctor(PgPool& pool, RentalStore& rentals, TaskStore& tasks, DoctorOptions options = {})
      : pool_(pool), rentals_(rentals), tasks_(tasks), options_(options) {}

  // The caller's rental examined: not_found for another org's; a rental that is not active
  // gets one skipped check saying so (there is nothing running to examine). Throws unavailable
  // when the node's agent did not answer within the wait, rate_limited when max_waiting
  // doctors wait already.
  DoctorReport examine(const Caller& caller, const std::string& id, bool allow_busy_gpus);

 private:
  PgPool& pool_;
  RentalStore& rentals_;
  TaskStore& tasks_;
  DoctorOptions options_;
  inventory::BurnInStore burn_ins_;
  std::atomic<int> waiting_{0};
};

}  // namespace gpurent::scheduler
