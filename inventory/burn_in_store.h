// The burn-ins a node's agent ran (migration 0023), with the server's verdict on each, and
// what a new one is judged against: the node's model's nominal figures and the medians of the
// fleet's other nodes of that model (inventory/burn_in_rules.h).
#pragma once

#include "core/clock.h"
#include "core/db_pool.h"
#include "inventory/burn_in_rules.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpurent::inventory {

struct BurnInRecord {
  std::string task_id;
  std::string node_id;
  std::optional<std::string> rental_id;
  std::string phase;  // "handover" | "release" | "enrolment" | "admin"
  std::string gpu_model;
  bool passed = false;
  nlohmann::json figures;   // agent_proto/burn_in/figures.h's wire form
  nlohmann::json findings;  // findings_json() of the verdict
  Timestamp finished_at;
  // The node's telemetry when it was recorded (one object per GPU), null when none: record()
  // takes it from the node itself.
  nlohmann::json telemetry;
};

// A model's measured performance: the medians, over the nodes of the model whose latest
// burn-in passed, of that burn-in's figures (each node's own median counted once).
struct ModelMeasurement {
  std::optional<double> gflops_per_gpu;
  std::optional<double> peer_gbps;
  std::optional<double> nccl_bus_gbps;
  int nodes = 0;  // how many nodes' burn-ins it rests on
  std::optional<double> tensor_tflops_per_gpu;
  std::optional<double> memory_gbps_per_gpu;
};

// What a node's burn-in is held to.
struct BurnInBasis {
  std::string gpu_model;
  BurnInNominal nominal;
  BurnInMedians medians;
};

// The verdict's findings as stored and shown: [{"check", "subject", "verdict": "fail" |
// "warn" | "pass", "measured"?, "expected"?, "unit"?, "detail"}].
nlohmann::json findings_json(const BurnInVerdict& verdict);

class BurnInStore {
 public:
  // The node's model and its nominal figures, and the medians of each other node of the
  // model whose latest burn-in passed (at most kMedianNodes of them); nullopt for an unknown
  // node.
  std::optional<BurnInBasis> basis(Tx& tx, const std::string& node_id);
  static constexpr int kMedianNodes = 500;

  // Once per task: a repeated report records nothing. Whether it was recorded.
  bool record(Tx& tx, const BurnInRecord& record);

  // Every model's measured performance, by model name.
  std::map<std::string, ModelMeasurement> measured_by_model(Tx& tx);

  // The node's latest burn-ins, newest first, at most `limit`.
  std::vector<BurnInRecord> for_node(Tx& tx, const std::string& node_id, int limit);

  // A rental's burn-ins, oldest first: its handover's and its release's.
  std::vector<BurnInRecord> for_rental(Tx& tx, const std::string& rental_id);
};

}  // namespace gpurent::inventory
